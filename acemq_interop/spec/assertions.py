"""Paths, templates and the comparisons an `expect` step makes.

A path is dotted (`call.reply.seen.reply_to_source`); a number indexes a list and `*`
maps over one (`g.replies.*.responder`). `${path}` in a value is replaced by what the path
holds (the raw value when the whole string is one template).
"""
from __future__ import annotations

import re
from typing import Any

from ..core.errors import CheckFailed, TemplateError

_TEMPLATE = re.compile(r"\$\{([^}]+)\}")
ABSENT = "(absent)"  # how a missing value is shown in evidence: JSON, never a Python object's repr


class _Missing:
    """The marker `lookup` returns for a path that names nothing; shown as ABSENT wherever it
    is printed, so no `<object ...>` can reach results.json, JUnit or the HTML."""

    __slots__ = ()

    def __repr__(self) -> str:
        return ABSENT

    __str__ = __repr__


_MISSING = _Missing()

# `matches:` runs Python's backtracking `re` on text a peer sent, on the harness's thread: a
# pattern that can backtrack without end (`(a+)+$`) would hang the run. So a pattern is held
# to what cannot (`regex_problem`, at load, and again for one a template made), and the text
# it reads is bounded: one variable-length repeat over MATCH_MAX_CHARS is well under a second.
MATCH_MAX_CHARS = 16 * 1024
MATCH_MAX_PATTERN = 1000


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` may backtrack without end (or cannot be read), else None: it must not
    repeat something that repeats or has alternatives, refer back to a group, or have more
    than one variable-length repeat (`*`, `+`, `?`, `{m,n}`)."""
    try:
        import re._parser as parser  # type: ignore[import-not-found]
        from re._constants import MAXREPEAT  # type: ignore[import-not-found]
    except ImportError:  # Python 3.10
        import sre_parse as parser  # type: ignore[no-redef]
        from sre_constants import MAXREPEAT  # type: ignore[no-redef]
    if len(pattern) > MATCH_MAX_PATTERN:
        return f"it is {len(pattern)} characters long (at most {MATCH_MAX_PATTERN})"
    try:
        parsed = parser.parse(pattern)
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        return f"is not a regular expression: {exc}"
    variable = [0]

    def walk(items: Any, repeated: bool) -> str | None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, high, sub = av
                if high != low:
                    variable[0] += 1
                if repeated and high > 1:
                    return "it repeats something that itself repeats (nested quantifiers backtrack without end)"
                found = walk(sub, repeated or high > 1 or high == MAXREPEAT)
            elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
                found = walk(av[-1], repeated)
            elif name == "BRANCH":
                if repeated:
                    return "it repeats alternatives (a|b)* (they backtrack without end): write a character class"
                found = next((p for p in (walk(b, repeated) for b in av[1]) if p), None)
            elif name in ("GROUPREF", "GROUPREF_EXISTS"):
                return "it refers back to a group (\\1): compare the two values with two checks"
            elif name in ("ASSERT", "ASSERT_NOT"):
                found = walk(av[1], repeated)
            else:
                found = None
            if found:
                return found
        return None

    try:
        found = walk(parsed, False)
    except RecursionError:
        return "it nests too deep"
    if found:
        return found
    if variable[0] > 1:
        return (f"it has {variable[0]} variable-length repeats (*, +, ?, {{m,n}}); at most one, or the match may "
                "backtrack for minutes: anchor it, or split it into several checks")
    return None


def bounded_search(pattern: str, observed: str) -> tuple[bool, str]:
    """`matches`: whether `pattern` is found in `observed`, and what was asked; a pattern or a
    text past the bounds does not hold, saying why, instead of hanging the run."""
    problem = regex_problem(pattern)
    if problem:
        return False, f"matches /{pattern}/ (refused: {problem})"
    if len(observed) > MATCH_MAX_CHARS:
        return False, f"matches /{pattern}/ (the text is {len(observed)} characters; matches reads at most {MATCH_MAX_CHARS})"
    return re.search(pattern, observed) is not None, f"matches /{pattern}/"


def missing(value: Any) -> bool:
    """Whether a `lookup` found nothing at its path."""
    return value is _MISSING


def lookup(variables: dict[str, Any], path: str) -> Any:
    """The value at `path`, or a marker for missing (so `present: false` can be checked)."""
    parts = path.split(".")
    return _walk(variables, parts)


def _walk(value: Any, parts: list[str]) -> Any:
    for i, part in enumerate(parts):
        if part == "*":
            if not isinstance(value, list):
                return _MISSING
            return [_walk(item, parts[i + 1:]) for item in value]
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def is_missing(value: Any) -> bool:
    return value is _MISSING


def render(value: Any, variables: dict[str, Any]) -> Any:
    """Replace `${...}` templates throughout a step argument."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value)
        if whole:
            found = lookup(variables, whole.group(1))
            if found is _MISSING:
                raise TemplateError(f"${{{whole.group(1)}}} names nothing", whole.group(1))
            return found
        def one(match: re.Match) -> str:
            found = lookup(variables, match.group(1))
            if found is _MISSING:
                raise TemplateError(f"${{{match.group(1)}}} names nothing", match.group(1))
            return str(found)
        return _TEMPLATE.sub(one, value)
    if isinstance(value, dict):
        return {k: render(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, variables) for v in value]
    return value


def shown(value: Any) -> Any:
    """A looked-up value as evidence: the value, or ABSENT for a path that names nothing."""
    return ABSENT if value is _MISSING else value


_shown = shown


NOT_COMPARISONS = ("that", "rule", "because", "consequence_of", "charges", "guards")


def check(expectation: dict[str, Any], variables: dict[str, Any]) -> CheckFailed | None:
    """None when the expectation holds, else the failure with expected and observed.

    The failure names the clause the expectation asserts (`rule`), or, for a check that sees
    another clause's consequence (`consequence_of`), that clause, with `rule` as `seen_as`.
    """
    path = expectation["that"]
    rule = expectation["rule"]
    because = expectation.get("because", "")
    observed = lookup(variables, path)
    for op, raw in expectation.items():
        if op in NOT_COMPARISONS:
            continue
        wanted = render(raw, variables)
        if op == "no_later_than":
            ok, expected_text = _no_later_than(observed, wanted, variables.get(GRACE_VARIABLE))
        else:
            ok, expected_text = _compare(op, observed, wanted)
        if not ok:
            message = f"{path} {expected_text}" + (f" ({because})" if because else "")
            expected = wanted if op not in ("present",) else expected_text
            if "consequence_of" in expectation:
                return CheckFailed(expectation["consequence_of"], message, expected=expected, observed=_shown(observed),
                                   seen_as=rule)
            return CheckFailed(rule, message, expected=expected, observed=_shown(observed))
    return None


GRACE_VARIABLE = "_grace"  # the cell's grace.Grace, set by the engine before each expect


def _no_later_than(observed: Any, bound: Any, grace: Any) -> tuple[bool, str]:
    """`observed <= bound + the cell's measured grace` (grace.py): an upper bound on a wait."""
    grace_ms = float(getattr(grace, "ms", 0.0))
    why = grace.explain() if grace is not None else "no grace measured"
    text = f"<= {bound!r} + {grace_ms:.0f} ms ({why})"
    if observed is _MISSING or isinstance(observed, bool) or not isinstance(observed, (int, float)) \
            or isinstance(bound, bool) or not isinstance(bound, (int, float)):
        return False, text
    return observed <= bound + grace_ms, text


def _holds(observed: Any, wanted: Any) -> bool:
    """`wanted in observed`, for any JSON values (a string holds only strings; an
    unhashable key is in no dict): a peer's odd answer is judged, never a TypeError."""
    if isinstance(observed, str):
        return isinstance(wanted, str) and wanted in observed
    if isinstance(observed, dict):
        return isinstance(wanted, str) and wanted in observed
    return isinstance(observed, list) and wanted in observed


def _compare(op: str, observed: Any, wanted: Any) -> tuple[bool, str]:
    missing = observed is _MISSING
    if op == "present":
        return (not missing) == bool(wanted), "is present" if wanted else "is absent"
    if missing:
        return False, f"{op.replace('_', ' ')} {wanted!r}"
    if op == "equals":
        return observed == wanted, f"equals {wanted!r}"
    if op == "not_equals":
        return observed != wanted, f"differs from {wanted!r}"
    if op == "one_of":
        return observed in wanted, f"is one of {wanted!r}"
    if op == "contains":
        return _holds(observed, wanted), f"contains {wanted!r}"
    if op == "excludes":
        return isinstance(observed, (list, str, dict)) and not _holds(observed, wanted), f"does not contain {wanted!r}"
    if op == "matches":
        if not isinstance(observed, str):
            return False, f"matches /{wanted}/"
        return bounded_search(wanted, observed)
    if op == "starts_with":
        return isinstance(observed, str) and observed.startswith(wanted), f"starts with {wanted!r}"
    if op in ("gte", "lte", "gt", "lt"):
        symbols = {"gte": ">=", "lte": "<=", "gt": ">", "lt": "<"}
        try:
            result = {"gte": observed >= wanted, "lte": observed <= wanted, "gt": observed > wanted, "lt": observed < wanted}[op]
        except TypeError:
            result = False
        return result, f"{symbols[op]} {wanted!r}"
    if op == "length":
        return isinstance(observed, (list, str, dict)) and len(observed) == wanted, f"has length {wanted!r}"
    if op == "all_equal":
        return isinstance(observed, list) and (len({repr(v) for v in observed}) <= 1) == bool(wanted), "are all equal"
    if op == "distinct":
        return isinstance(observed, list) and (len({repr(v) for v in observed}) == len(observed)) == bool(wanted), "are all distinct"
    if op == "each_equals":
        return isinstance(observed, list) and all(v == wanted for v in observed), f"each equal {wanted!r}"
    raise ValueError(f"unknown comparison {op}")
