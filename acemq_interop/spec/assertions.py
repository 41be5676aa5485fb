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
        return isinstance(observed, str) and re.search(wanted, observed) is not None, f"matches /{wanted}/"
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
