"""Paths, templates and comparisons of `expect` steps."""
from __future__ import annotations

import pytest

from acemq_interop.spec.assertions import check, lookup, render, is_missing
from acemq_interop.core.errors import TemplateError

VARS = {
    "call": {"outcome": "reply", "reply": {"seen": {"headers": ["a", "x-custom"]}}},
    "g": {"replies": [{"n": 1, "r": "s1"}, {"n": 1, "r": "s2"}], "request_id": "m-1"},
    "q": {"reply_queue": "amq.gen-1"},
}


def test_lookup_walks_dicts_lists_and_stars() -> None:
    assert lookup(VARS, "call.reply.seen.headers") == ["a", "x-custom"]
    assert lookup(VARS, "g.replies.1.r") == "s2"
    assert lookup(VARS, "g.replies.*.n") == [1, 1]
    assert is_missing(lookup(VARS, "call.failure"))


def test_render_keeps_the_raw_value_of_a_whole_template() -> None:
    assert render("${g.replies}", VARS) == VARS["g"]["replies"]
    assert render("to ${q.reply_queue}!", VARS) == "to amq.gen-1!"
    with pytest.raises(TemplateError):
        render("${nothing.here}", VARS)


@pytest.mark.parametrize(
    "expectation, holds",
    [
        ({"that": "call.outcome", "equals": "reply"}, True),
        ({"that": "call.outcome", "equals": "timeout"}, False),
        ({"that": "call.failure", "present": False}, True),
        ({"that": "call.failure", "equals": None}, False),
        ({"that": "call.reply.seen.headers", "contains": "x-custom"}, True),
        ({"that": "call.reply.seen.headers", "excludes": "x-custom"}, False),
        ({"that": "g.replies", "length": 2}, True),
        ({"that": "g.replies.*.n", "all_equal": True}, True),
        ({"that": "g.replies.*.r", "distinct": True}, True),
        ({"that": "g.replies.*.n", "distinct": True}, False),
        ({"that": "g.replies.*.n", "each_equals": 1}, True),
        ({"that": "q.reply_queue", "starts_with": "amq.gen-"}, True),
        ({"that": "q.reply_queue", "matches": "^amq\\.gen-\\d$"}, True),
        ({"that": "g.request_id", "one_of": ["m-1", "m-2"]}, True),
        ({"that": "g.replies.0.n", "lt": 1}, False),
        ({"that": "g.replies.0.n", "gte": 1}, True),
        ({"that": "call.outcome", "gte": 1}, False),
    ],
)
def test_comparisons(expectation: dict, holds: bool) -> None:
    failure = check({**expectation, "rule": "RR-1"}, VARS)
    assert (failure is None) == holds
    if failure is not None:
        assert failure.rule == "RR-1"
        assert expectation["that"] in failure.message


def test_a_consequence_names_the_clause_broken_and_the_clause_it_was_seen_as() -> None:
    variables = {"call": {"outcome": "timeout"}}
    plain = check({"that": "call.outcome", "equals": "responder_failed", "rule": "RR-10.3"}, variables)
    assert (plain.rule, plain.seen_as) == ("RR-10.3", None)
    seen = check({"that": "call.outcome", "equals": "responder_failed", "rule": "RR-10.3", "consequence_of": "RR-2.2"},
                 variables)
    assert (seen.rule, seen.seen_as, seen.expected, seen.observed) == ("RR-2.2", "RR-10.3", "responder_failed", "timeout")
    assert check({"that": "call.outcome", "equals": "timeout", "rule": "RR-9.1", "consequence_of": "RR-2.2"}, variables) is None
