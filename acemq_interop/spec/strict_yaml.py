"""Reading the suite's own YAML files (scenarios, known failures) strictly: JSON values only.

PyYAML's safe loader takes more than a JSON document can say and more than a person means:
a second `steps:` silently replaces the first, an alias bomb expands a few lines into
gigabytes, nesting a thousand deep overflows Python's stack, `on:` is a boolean key and
`2024-01-01` a date. Here each of those is refused in one line of bounded length that
names the file, the line and what to do, and no input gives a traceback.

Plain values are read by YAML 1.2's core schema, not PyYAML's YAML 1.1: `010000` is ten
thousand (not 4096, an octal), `1:30` is text (not 90, a sexagesimal), `yes`, `no`, `on` and
`off` are text (a field that wants a boolean says so), `0o17` and `0x1f` are the only other
bases. A plain value YAML 1.1 would read as a date is still refused: quote it.
The scenarios, the known failures and the peer manifests (peers/manifests.py) all load here.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import UsageError

MAX_BYTES = 256 << 10  # the largest scenario today is about 2 KB; PyYAML reads a few hundred KB a second
MAX_DEPTH = 64  # mappings and lists inside each other; a scenario needs about 8
MAX_PROBLEM = 300  # characters of a problem's text: the message stays one short line whatever the input

_JSON_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "seq", "map")}
_MERGE_TAG = "tag:yaml.org,2002:merge"


def bounded(problem: str, limit: int = MAX_PROBLEM) -> str:
    """A problem's text on one line, cut at `limit` characters (input can be as long as the file)."""
    one_line = " ".join(problem.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def shown(value: Any, limit: int = 60) -> str:
    """A value from the file quoted in a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def refuse(path: Path, line: int, problem: str) -> UsageError:
    """The loader's one kind of error: `path:line: problem`, bounded."""
    return UsageError(f"{path}:{line}: {bounded(problem)}")


class _Refused(yaml.MarkedYAMLError):
    """Something YAML allows and these files do not, at a place in the file."""

    def __init__(self, mark: yaml.Mark, problem: str):
        super().__init__(problem=problem, problem_mark=mark)


class _Loader(yaml.SafeLoader):
    """SafeLoader without aliases, merge keys, non-text keys, duplicate keys, deep nesting or non-JSON types."""

    # Only JSON's types have constructors; every other tag (explicit, or implied such as a
    # timestamp) falls through to `_refuse_tag`.
    yaml_constructors = {tag: c for tag, c in yaml.SafeLoader.yaml_constructors.items() if tag in _JSON_TAGS}
    yaml_multi_constructors: dict = {}

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            # Refused outright rather than bounded: an alias bomb then costs nothing, and a
            # scenario written out in full is what a reader of the file sees anyway.
            raise _Refused(self.peek_event().start_mark, "YAML aliases (*name) are not allowed in this file: write the value out")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(self.peek_event().start_mark, f"nested more than {MAX_DEPTH} levels deep: flatten it")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise _Refused(node.start_mark, "expected a mapping here")
        mapping: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                raise _Refused(key_node.start_mark, "merge keys (<<) are not allowed in this file: write the keys out")
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                kind = "a mapping" if isinstance(key_node, yaml.MappingNode) else "a list" if isinstance(
                    key_node, yaml.SequenceNode) else f"{type(key).__name__} {shown(key)}"
                raise _Refused(key_node.start_mark, f"a key must be text, this one reads as {kind}: quote it")
            if key in mapping:
                raise _Refused(key_node.start_mark, f"duplicate key {shown(key)} (first on line {first_line[key]}): "
                                                    "the second would silently replace the first; keep one")
            first_line[key] = key_node.start_mark.line + 1
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node: yaml.Node) -> int:
        """YAML 1.2: decimal (leading zeros too), 0o octal, 0x hexadecimal; nothing else."""
        text = str(self.construct_scalar(node))
        try:
            if text.startswith(("0o", "0x")):
                return int(text[2:], 8 if text[1] == "o" else 16)
            return int(text, 10)
        except ValueError:  # Python refuses an integer of thousands of digits; an explicit !!int of no number
            if len(text) > 4000:
                raise _Refused(node.start_mark, "this number is too long to read: use a smaller one") from None
            raise _Refused(node.start_mark, f"{shown(text)} is not an integer") from None

    def construct_yaml_float(self, node: yaml.Node) -> float:
        text = str(self.construct_scalar(node))
        special = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}
        try:
            value = special[text.lower()] if text.lower() in special else float(text)
        except ValueError:
            raise _Refused(node.start_mark, f"{shown(text)} is not a number") from None
        if not math.isfinite(value):
            raise _Refused(node.start_mark, f"{node.value} is not a JSON number: use a finite one, or quote it as text")
        return value


# YAML 1.2's core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), in the order
# tried; PyYAML's date resolver is kept only so that a date is refused (_refuse_tag).
_CORE_SCHEMA = (
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    ("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), "-+0123456789"),
    ("tag:yaml.org,2002:float", re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
     "-+0123456789."),
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
)


def _core_resolvers() -> dict[Any, list[tuple[str, "re.Pattern[str]"]]]:
    table: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, first in _CORE_SCHEMA:
        for char in first:
            table.setdefault(char if char else None, []).append((tag, pattern))
    for char, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items():
        for tag, pattern in resolvers:
            if tag in ("tag:yaml.org,2002:timestamp", _MERGE_TAG):
                table.setdefault(char, []).append((tag, pattern))
    return table


_Loader.yaml_implicit_resolvers = _core_resolvers()
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
_Loader.add_constructor("tag:yaml.org,2002:map", yaml.SafeLoader.construct_yaml_map)


def _refuse_tag(loader: _Loader, node: yaml.Node) -> Any:
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    if tag == "!!timestamp":
        problem = f"{shown(node.value)} reads as a date: quote it to keep it text"
    else:
        problem = f"{shown(tag)} values are not allowed here (only text, numbers, booleans, null, lists and mappings)"
    raise _Refused(node.start_mark, problem)


_Loader.add_constructor(None, _refuse_tag)


def read(path: Path) -> tuple[Any, yaml.Node | None]:
    """The file's one document as JSON values, and its node tree (for the line of any later problem).

    Raises UsageError `path:line: problem` for anything it refuses.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise refuse(path, 1, f"{len(raw)} bytes is more than the {MAX_BYTES} a file of the suite may have")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise refuse(path, line, f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}; save the file as UTF-8") from None
    text = text.removeprefix("\ufeff")
    loader = None
    try:
        loader = _Loader(text)  # its reader checks every character here
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except _Refused as exc:
        raise refuse(path, exc.problem_mark.line + 1, exc.problem) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "unreadable"
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        raise refuse(path, mark.line + 1 if mark else 1, f"not valid YAML: {problem}{context}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        what = f"U+{exc.character:04X}" if isinstance(exc.character, int) else shown(exc.character)
        raise refuse(path, line, f"not valid YAML: character {what} is not allowed (a control character?): remove it") from None
    except yaml.YAMLError as exc:
        raise refuse(path, 1, f"not valid YAML: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, root


def line_at(root: yaml.Node | None, path: list[Any]) -> int:
    """The 1-based line of the node at a path of keys and indexes (the deepest that exists)."""
    if root is None:
        return 1
    node = root
    for key in path:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            match = node.value[key]
        else:
            match = None
        if match is None:
            break
        node = match
    return node.start_mark.line + 1
