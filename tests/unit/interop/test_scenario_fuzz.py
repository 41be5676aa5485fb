"""A seeded, bounded fuzzer of the scenario loader over mutations of the real files in scenarios/.

Each mutation is of a class; some classes must always be refused (a duplicate key, a bad
byte, an alias, a renamed reference...), the others may or may not make a file wrong (a
truncation can land between two steps). Whatever happens, the loader's answer is a
scenario or its own UsageError `path:line: problem` in one bounded line: never another
exception. The seed is fixed so a failure can be replayed; ACEMQ_INTEROP_FUZZ_SEED changes
it and ACEMQ_INTEROP_FUZZ_COUNT the number of mutations.
"""
from __future__ import annotations

import collections
import json
import os
import random
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from acemq_interop.spec import strict_yaml
from acemq_interop.core.errors import UsageError
from acemq_interop.core.paths import SCENARIOS_DIR
from acemq_interop.spec.scenarios import load_file, scenario_files
from acemq_interop.spec.schema import scenario_schema
from acemq_interop.spec.steps import STEP_KINDS

SEED = int(os.environ.get("ACEMQ_INTEROP_FUZZ_SEED", "9009"))
COUNT = int(os.environ.get("ACEMQ_INTEROP_FUZZ_COUNT", "400"))
MESSAGE = re.compile(r"^(?P<path>.+?):(?P<line>[0-9]+): (?P<problem>.+)$")


@dataclass(frozen=True)
class Source:
    path: Path
    text: str
    data: dict[str, Any]
    root: yaml.Node


@dataclass(frozen=True)
class Mutant:
    content: bytes
    must_refuse: bool
    what: str  # for a failure's message: what was changed


Mutator = Callable[[random.Random, Source], "Mutant | None"]


def sources() -> list[Source]:
    found = []
    for path in scenario_files(SCENARIOS_DIR):
        data, root = strict_yaml.read(path)
        found.append(Source(path, path.read_text(encoding="utf-8"), data, root))
    return found


# -- where things are in a file ----------------------------------------------------------


def pairs(node: yaml.Node) -> list[tuple[yaml.MappingNode, yaml.Node, yaml.Node]]:
    """Every (mapping, key, value) of the node tree."""
    found = []
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                found.append((current, key, value))
                todo.append(value)
        elif isinstance(current, yaml.SequenceNode):
            todo.extend(current.value)
    return sorted(found, key=lambda p: p[1].start_mark.index)


def one_line_scalars(source: Source) -> list[yaml.ScalarNode]:
    """Scalar values written on one line (not block scalars): safe to replace textually."""
    values = [v for _, _, v in pairs(source.root)]
    values += [item for n in _all_nodes(source.root) if isinstance(n, yaml.SequenceNode) for item in n.value]
    return sorted({id(v): v for v in values if isinstance(v, yaml.ScalarNode) and v.style in (None, "'", '"')
                   and v.start_mark.line == v.end_mark.line and v.end_mark.index > v.start_mark.index}.values(),
                  key=lambda v: v.start_mark.index)


def _all_nodes(node: yaml.Node) -> list[yaml.Node]:
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        found.append(current)
        if isinstance(current, yaml.MappingNode):
            todo.extend(x for pair in current.value for x in pair)
        elif isinstance(current, yaml.SequenceNode):
            todo.extend(current.value)
    return found


def replace(text: str, node: yaml.Node, new: str) -> str:
    return text[:node.start_mark.index] + new + text[node.end_mark.index:]


def dumped(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000).encode("utf-8")


def copy(data: Any) -> Any:
    return json.loads(json.dumps(data))


def steps_of(data: dict[str, Any]) -> list[tuple[int, str, Any]]:
    return [(i, *next(iter(step.items()))) for i, step in enumerate(data["steps"])]


_TEMPLATE = re.compile(r"\$\{([^}.]*)")


def references(data: dict[str, Any]) -> list[tuple[int, str]]:
    """(step index, head name) of every use of a name: uses keys, `that:` paths, `${...}` heads."""
    found = []
    for i, kind, args in steps_of(data):
        for key in STEP_KINDS[kind].uses:
            values = (args if isinstance(args, list) else [args]) if key == "*" else [args.get(key)] if isinstance(args, dict) else []
            found += [(i, str(v).split(".")[0]) for v in values if v is not None]
        if kind == "expect":
            found += [(i, e["that"].split(".")[0]) for e in args]
        found += [(i, head) for head in _TEMPLATE.findall(json.dumps(args))]
    return found


def bindings(data: dict[str, Any]) -> list[tuple[int, str]]:
    return [(i, args["as"]) for i, kind, args in steps_of(data) if isinstance(args, dict) and "as" in args]


# -- mutations that must be refused ------------------------------------------------------


def dup_key(rng: random.Random, source: Source) -> Mutant | None:
    text = source.text
    if rng.random() < 0.2:  # the case: a second `steps:` that silently replaced the first
        key = rng.choice(["steps", "id", "roles", "rules", "title"])
        extra = {"steps": "steps:\n  - queue: {name: zz}\n", "id": f"id: {source.path.stem}\n",
                 "roles": "roles: {requester: peer}\n", "rules": "rules: [RR-1]\n", "title": "title: Another title\n"}[key]
        return Mutant((text.rstrip("\n") + "\n" + extra).encode(), True, f"a second top-level {key}:")
    candidates = [(m, k, v) for m, k, v in pairs(source.root) if k.start_mark.line == v.end_mark.line
                  and not (isinstance(v, yaml.ScalarNode) and v.style in ("|", ">"))]
    mapping, key, value = rng.choice(candidates)
    span = text[key.start_mark.index:value.end_mark.index]
    if mapping.flow_style:
        new = text[:value.end_mark.index] + ", " + span + text[value.end_mark.index:]
    else:
        end = text.index("\n", value.end_mark.index) + 1
        new = text[:end] + " " * key.start_mark.column + span + "\n" + text[end:]
    return Mutant(new.encode(), True, f"duplicated {key.value!r} on line {key.start_mark.line + 1}")


def bad_bytes(rng: random.Random, source: Source) -> Mutant | None:
    at = rng.randrange(len(source.text) + 1)
    bad = rng.choice([b"\xff", b"\xc3\x28", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82"])
    return Mutant(source.text[:at].encode() + bad + source.text[at:].encode(), True, f"{bad!r} at character {at}")


def control_char(rng: random.Random, source: Source) -> Mutant | None:
    at = rng.randrange(len(source.text) + 1)
    bad = rng.choice(["\x00", "\x07", "\x1b", "\x7f", "\x0b", "\ufffe"])
    return Mutant((source.text[:at] + bad + source.text[at:]).encode(), True, f"{bad!r} at character {at}")


def deep_nesting(rng: random.Random, source: Source) -> Mutant | None:
    node = rng.choice(one_line_scalars(source))
    depth = rng.randint(65, 1500)
    nested = "[" * depth + "]" * depth if rng.random() < 0.5 else "{a: " * depth + "1" + "}" * depth
    return Mutant(replace(source.text, node, nested).encode(), True, f"{depth} deep on line {node.start_mark.line + 1}")


def alias(rng: random.Random, source: Source) -> Mutant | None:
    scalars = one_line_scalars(source)
    first, second = sorted(rng.sample(scalars, 2), key=lambda n: n.start_mark.index)
    text = replace(source.text, second, "*x")
    text = text[:first.start_mark.index] + "&x " + text[first.start_mark.index:]
    return Mutant(text.encode(), True, f"&x on line {first.start_mark.line + 1}, *x on line {second.start_mark.line + 1}")


def alias_bomb(rng: random.Random, source: Source) -> Mutant | None:
    levels = rng.randint(5, 20)
    bomb = "bomb0: &b0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"bomb{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]\n" for i in range(1, levels))
    return Mutant((source.text.rstrip("\n") + "\n" + bomb).encode(), True, f"a {levels}-level alias bomb")


INT = {"timeout_ms", "count", "repeat", "max_attempts", "expected_reply_count", "delay_ms", "length"}
NUMBER = {"gt", "gte", "lt", "lte"}
BOOL = {"async", "refusal_expected", "absent", "present", "distinct", "all_equal"}
TEXT = {"id", "title", "procedure", "that", "rule", "because", "matches", "starts_with", "body_text", "as", "role",
        "requester", "request", "of", "queue", "name", "endpoint", "exchange", "routing_key", "correlation_id", "mode",
        "event", "type", "reply", "error_message", "message_id", "reply_to", "content_type"}
LIST = {"rules", "catches", "tags", "steps", "one_of"}
OBJECT = {"roles", "properties", "where", "behavior", "bind", "headers"}
FREE = {"body", "where", "headers", "equals", "not_equals", "contains", "excludes", "each_equals", "one_of", "roles"}
WRONG: dict[str, list[Any]] = {
    "int": ["soon", "7", "", 1.5, True, None, [1], {"a": 1}],
    "number": ["7", "soon", True, None, [1]],
    "bool": ["yes", "true", 1, 0, None, ["x"]],
    "text": [7, 0, True, None, ["x"], {"a": "b"}, 2.5],
    "list": ["x", 5, {"a": 1}, None],
    "object": ["x", 5, ["a"], None],
}


def _typed_places(data: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """(path, type) of every value whose key has a fixed type, outside free-form values."""
    found = []
    if isinstance(data, dict):
        for key, value in data.items():
            if path and path[-1] in FREE:
                continue
            kind = ("int" if key in INT else "number" if key in NUMBER else "bool" if key in BOOL else "text" if key in TEXT
                    else "list" if key in LIST else "object" if key in OBJECT else None)
            if kind is not None:
                found.append(((*path, key), kind))
            if key not in FREE:
                found += _typed_places(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _typed_places(value, (*path, index))
    return found


def _set(data: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def _get(data: Any, path: tuple) -> Any:
    for key in path:
        data = data[key]
    return data


def type_change(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    path, kind = rng.choice(_typed_places(data))
    old = _get(data, path)
    wrong = rng.choice([w for w in WRONG[kind] if type(w) is not type(old)])
    _set(data, path, wrong)
    return Mutant(dumped(data), True, f"{'/'.join(map(str, path))}: {old!r} -> {wrong!r}")


def delete_required(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    places: list[tuple] = [(key,) for key in scenario_schema()["required"]]
    for i, kind, args in steps_of(data):
        places += [("steps", i, kind, key) for key in STEP_KINDS[kind].schema.get("required", []) if isinstance(args, dict)]
        if kind == "expect":
            places += [("steps", i, kind, j, key) for j in range(len(args)) for key in ("that", "rule")]
    path = rng.choice(places)
    del _get(data, path[:-1])[path[-1]]
    return Mutant(dumped(data), True, f"deleted {'/'.join(map(str, path))}")


def rename_ref(rng: random.Random, source: Source) -> Mutant | None:
    """A use of a name (uses key, `that:` head, `${head`) renamed to one nothing binds."""
    data = copy(source.data)
    places: list[tuple[tuple, str]] = []  # (path to a string, how to rename its head)
    for i, kind, args in steps_of(data):
        for key in STEP_KINDS[kind].uses:
            if key == "*":
                places += [(("steps", i, kind, j), "name") for j in range(len(args))] if isinstance(args, list) else [(("steps", i, kind), "name")]
            elif isinstance(args, dict) and key in args:
                places.append((("steps", i, kind, key), "name"))
        if kind == "expect":
            places += [(("steps", i, kind, j, "that"), "name") for j in range(len(args))]
    places += [(path, "template") for path, _ in _strings(data["steps"], ("steps",)) if "${" in _get(data, path)]
    path, how = rng.choice(places)
    old = _get(data, path)
    head = old.split(".")[0] if how == "name" else _TEMPLATE.search(old).group(1)
    new = head + "zz" + old[len(head):] if how == "name" else old.replace("${" + head, "${" + head + "zz", 1)
    _set(data, path, new)
    return Mutant(dumped(data), True, f"{'/'.join(map(str, path))}: {old!r} -> {new!r}")


def _strings(value: Any, path: tuple) -> list[tuple[tuple, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, (*path, k))]
    if isinstance(value, list):
        return [s for i, v in enumerate(value) for s in _strings(v, (*path, i))]
    return []


def add_role(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    key: Any = rng.choice(["extra", "observer", 3, 0])
    data["roles"][key] = rng.choice(["peer", "all-peers"])
    return Mutant(dumped(data), True, f"added role {key!r}")


def bad_regex(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    expects = [(i, args) for i, kind, args in steps_of(data) if kind == "expect"]
    if not expects:
        return None
    i, args = rng.choice(expects)
    pattern = rng.choice(["(", "[a-", "*x", "(?P<", "a{2,1}", "(?<=a+)b", "\\"])
    args.append({"that": args[0]["that"], "matches": pattern, "rule": args[0]["rule"]})
    return Mutant(dumped(data), True, f"matches {pattern!r} in step {i + 1}")


def template_nothing(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    places = [(i, kind, key) for i, kind, args in steps_of(data) if isinstance(args, dict)
              for key in STEP_KINDS[kind].templates if key in args]
    if not places:
        return None
    i, kind, key = rng.choice(places)
    data["steps"][i][kind][key] = {"x": "${nosuch.field}"} if key in ("body", "headers", "where") else "${nosuch.field}"
    return Mutant(dumped(data), True, f"${{nosuch.field}} in step {i + 1} {kind}.{key}")


def template_unexpanded(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    places = [(i, kind, path) for i, kind, args in steps_of(data) if isinstance(args, dict)
              for path in ([("name",)] if kind in ("queue", "exchange") else [])
              + [(k,) for k in ("exchange",) if k in args and kind != "exchange"]
              + [("bind", "exchange")] * ("bind" in args)]
    if not places:
        return None
    i, kind, path = rng.choice(places)
    _set(data["steps"][i][kind], path, "x-${ns}")
    return Mutant(dumped(data), True, f"${{ns}} in step {i + 1} {kind}.{'.'.join(path)}, which is not expanded")


def non_json(rng: random.Random, source: Source) -> Mutant | None:
    node = rng.choice(one_line_scalars(source))
    new = rng.choice(["2024-01-01", "2001-12-14t21:59:43.10-05:00", ".inf", "-.Inf", ".nan", "!!binary aGk=",
                      "!!set {a: null}", "!!python/name:os.system", "!custom x", "1.0e+999", "!!omap [a: 1]"])
    return Mutant(replace(source.text, node, new).encode(), True, f"{new!r} on line {node.start_mark.line + 1}")


def non_text_key(rng: random.Random, source: Source) -> Mutant | None:
    keys = [k for _, k, _ in pairs(source.root) if k.style is None]
    key = rng.choice(keys)
    # Words YAML 1.2 reads as something else than text. (`on`, `off`, `yes`, `no` are text in
    # YAML 1.2's core schema, which the loader uses: a header or body key so named is valid.)
    new = rng.choice(["3", "~", "null", "1.5", "true", "2024-01-01", "0x1f"])
    return Mutant(replace(source.text, key, new).encode(), True, f"key {key.value!r} -> {new!r} on line {key.start_mark.line + 1}")


def rename_role(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    role = rng.choice(list(data["roles"]))
    played = data["roles"][role] != "probe"
    data["roles"] = {(k + "zz" if k == role else k): v for k, v in data["roles"].items()}
    return Mutant(dumped(data), played, f"role {role!r} renamed in roles only")


def rename_binding(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    i, name = rng.choice(bindings(data))
    used_later = any(j > i and head == name for j, head in references(data))
    (kind, args), = data["steps"][i].items()
    args["as"] = name + "zz"
    return Mutant(dumped(data), used_later, f"as: {name!r} of step {i + 1} renamed ({'used' if used_later else 'unused'} later)")


def delete_step(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    if len(data["steps"]) < 2:
        return None
    i = rng.randrange(len(data["steps"]))
    (kind, args), = data["steps"][i].items()
    name = args.get("as") if isinstance(args, dict) else None
    role = args.get("role") if isinstance(args, dict) else None
    harmful = (kind == "await"
               or (name is not None and any(j > i and head == name for j, head in references(data)))
               or (role is not None and sum(1 for _, _, a in steps_of(data) if isinstance(a, dict) and a.get("role") == role) == 1))
    del data["steps"][i]
    return Mutant(dumped(data), harmful, f"deleted step {i + 1} ({kind}; {'harmful' if harmful else 'maybe harmless'})")


# -- mutations that may be harmless -----------------------------------------------------


def delete_key(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    places = [path for path, _ in _typed_places(data)]
    path = rng.choice(places)
    del _get(data, path[:-1])[path[-1]]
    return Mutant(dumped(data), False, f"deleted {'/'.join(map(str, path))}")


def swap_values(rng: random.Random, source: Source) -> Mutant | None:
    data = copy(source.data)
    mappings: list[dict] = []
    todo: list[Any] = [data]
    while todo:
        current = todo.pop()
        if isinstance(current, dict):
            if len(current) >= 2:
                mappings.append(current)
            todo.extend(current.values())
        elif isinstance(current, list):
            todo.extend(current)
    mapping = rng.choice(mappings)
    a, b = rng.sample(list(mapping), 2)
    mapping[a], mapping[b] = mapping[b], mapping[a]
    return Mutant(dumped(data), False, f"swapped {a!r} and {b!r}")


def truncate(rng: random.Random, source: Source) -> Mutant | None:
    raw = source.text.encode()
    at = rng.randrange(len(raw))
    return Mutant(raw[:at], False, f"cut at byte {at}")


def garbage(rng: random.Random, source: Source) -> Mutant | None:
    at = rng.randrange(len(source.text) + 1)
    junk = "".join(rng.choice(":-[]{}#&*!|>'\"%@`, \t\nabc9$") for _ in range(rng.randint(1, 8)))
    return Mutant((source.text[:at] + junk + source.text[at:]).encode(), False, f"{junk!r} at character {at}")


def tabs(rng: random.Random, source: Source) -> Mutant | None:
    lines = source.text.split("\n")
    indented = [i for i, line in enumerate(lines) if line.startswith(" ")]
    i = rng.choice(indented)
    lines[i] = "\t" + lines[i].lstrip(" ")
    return Mutant("\n".join(lines).encode(), False, f"tab indent on line {i + 1}")


def huge_value(rng: random.Random, source: Source) -> Mutant | None:
    node = rng.choice(one_line_scalars(source))
    big = rng.choice(["x" * 100_000, "[" + ", ".join(["item"] * 8_000) + "]", "{" + ", ".join(f"k{i}: v" for i in range(4_000)) + "}",
                      "y" * (strict_yaml.MAX_BYTES + 1)])
    return Mutant(replace(source.text, node, big).encode(), False, f"{len(big)} characters on line {node.start_mark.line + 1}")


MUST: dict[str, Mutator] = {f.__name__: f for f in [
    dup_key, bad_bytes, control_char, deep_nesting, alias, alias_bomb, type_change, delete_required, rename_ref,
    add_role, bad_regex, template_nothing, template_unexpanded, non_json, non_text_key]}
# Refused when what they change is used (rename_role of a played role, a renamed or deleted binding used later).
SOMETIMES: dict[str, Mutator] = {f.__name__: f for f in [rename_role, rename_binding, delete_step]}
MAYBE: dict[str, Mutator] = {f.__name__: f for f in [delete_key, swap_values, truncate, garbage, tabs, huge_value]}
CLASSES: dict[str, Mutator] = {**MUST, **SOMETIMES, **MAYBE}


def test_the_loader_refuses_every_wrong_mutation_with_its_own_bounded_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rng = random.Random(SEED)
    files = sources()
    assert files
    names = list(CLASSES)
    counts: dict[str, collections.Counter] = {name: collections.Counter() for name in names}
    failures: list[str] = []
    for n in range(COUNT):
        name = names[n % len(names)]
        source = rng.choice(files)
        mutant = None
        for _ in range(10):  # some classes need a file with an expect step, a template...
            mutant = CLASSES[name](rng, source)
            if mutant is not None:
                break
            source = rng.choice(files)
        if mutant is None:
            counts[name]["not applicable"] += 1
            continue
        where = f"#{n} {name} of {source.path.name} ({mutant.what}; seed {SEED})"
        path = tmp_path / source.path.name  # the same name, so the id still matches the file
        path.write_bytes(mutant.content)
        try:
            load_file(path)
        except UsageError as exc:
            counts[name]["refused"] += 1
            message = str(exc)
            parts = MESSAGE.match(message)
            if parts is None or parts["path"] != str(path) or "\n" in message:
                failures.append(f"{where}: not `path:line: problem` on one line: {message[:300]!r}")
            elif len(parts["problem"]) > strict_yaml.MAX_PROBLEM:
                failures.append(f"{where}: a {len(parts['problem'])}-character problem: {message[:300]!r}")
            elif not 1 <= int(parts["line"]) <= mutant.content.count(b"\n") + 1:
                failures.append(f"{where}: line {parts['line']} is not in the file: {message[:300]!r}")
        except Exception as exc:  # noqa: BLE001 - what the test is for: nothing but UsageError
            counts[name]["crashed"] += 1
            failures.append(f"{where}: {type(exc).__name__}: {str(exc)[:200]}\n"
                            + "".join(traceback.format_exception(exc)[-3:])[:600])
        else:
            counts[name]["accepted"] += 1
            if mutant.must_refuse:
                failures.append(f"{where}: accepted, but it must be refused")
    refused = sum(c["refused"] for c in counts.values())
    accepted = sum(c["accepted"] for c in counts.values())
    by_class = ", ".join(f"{name} {c['refused']}/{c['accepted']}" + (f" (n/a {c['not applicable']})" if c["not applicable"] else "")
                         for name, c in counts.items())
    with capsys.disabled():
        print(f"\nscenario fuzz, seed {SEED}: {COUNT} mutations of {len(files)} files: {refused} refused, "
              f"{accepted} accepted (harmless); refused/accepted by class: {by_class}")
    assert not failures, f"{len(failures)} of {COUNT} mutations went wrong:\n" + "\n".join(failures[:20])
    for name in MUST:
        assert counts[name]["refused"] >= 1, f"class {name} never ran: its mutator finds nothing to change"


def test_every_real_scenario_loads_as_yml_too(tmp_path: Path) -> None:
    from acemq_interop.spec.scenarios import load_all

    for source in sources():
        (tmp_path / f"{source.path.stem}.yml").write_text(source.text, encoding="utf-8")
    assert [s.id for s in load_all(tmp_path)] == [s.id for s in load_all()]
