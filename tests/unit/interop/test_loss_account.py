"""The no-loss account (results/loss.py): where each request's trail ends, and which trails are
losses or duplicates, with the clause and the side each one is charged to."""
from __future__ import annotations

from pathlib import Path

import pytest

from acemq_interop.core.errors import UsageError
from acemq_interop.results.loss import Trail, account
from acemq_interop.spec.scenarios import load_file

RID = "5f0c2a9e41d84b7f9a3c6e2d1b0a9f88"


def _answer(outcome: str, ok: bool = True) -> dict:
    return {"ok": ok, "outcome": outcome, "request_id": RID}


def _event(kind: str, **fields) -> dict:
    return {"event": kind, "responder": "c0001.r", "message_id": RID, **fields}


def _trail(outcome: str, events: list[dict] = (), unmatched: int = 0, queued: dict | None = None) -> Trail:
    return Trail.of(_answer(outcome), list(events), [{"correlation_id": RID}] * unmatched, queued or {})


@pytest.mark.parametrize("trail, end", [
    (_trail("reply", [_event("handled", attempt=1), _event("replied")]), "answered"),
    (_trail("timeout", [_event("handled", attempt=1), _event("replied")], unmatched=1), "unmatched"),
    (_trail("connection_lost", [_event("handled", attempt=1), _event("replied")]), "to_gone_caller"),
    (_trail("connection_lost", [_event("handled", attempt=1), _event("reply_failed", attempt=1),
                                _event("dead_lettered", reason="reply undeliverable")]), "dead_lettered"),
    (_trail("timeout", queued={RID: "c0001.requests"}), "queued"),
    (_trail("timeout", queued={RID: "c0001.requests.dlq"}), "dead_lettered"),
    (_trail("connection_lost"), "not_sent"),
    (_trail("connection_lost", [_event("handled", attempt=1)]), "lost"),
    (_trail("timeout"), "lost"),
])
def test_each_trail_ends_where_its_evidence_says(trail: Trail, end: str) -> None:
    assert trail.end() == end


def test_a_request_handled_then_found_nowhere_is_the_responders_loss() -> None:
    problems = account([_trail("connection_lost", [_event("handled", attempt=1), _event("reply_failed", attempt=1)])]).problems()
    assert [(c, side) for c, side, _ in problems] == [("RR-20.4", "responder")]
    assert RID in problems[0][2] and "never dead-lettered" in problems[0][2]


def test_a_call_that_waited_for_a_reply_to_a_request_found_nowhere_is_the_requesters() -> None:
    problems = account([_trail("timeout")]).problems()
    assert [(c, side) for c, side, _ in problems] == [("RR-20.1", "requester")]


def test_two_replies_to_one_handling_are_a_duplicate_but_a_redelivered_one_is_counted_apart() -> None:
    twice = _trail("reply", [_event("handled", attempt=1), _event("replied"), _event("replied")])
    again = _trail("reply", [_event("handled", attempt=1), _event("replied"), _event("handled", attempt=2), _event("replied")])
    summary = account([twice, again])
    assert [(c, side) for c, side, _ in summary.problems()] == [("RR-20.4", "responder")]
    figures = summary.figures()
    assert figures["answered_twice"] == 1 and figures["answered_again_after_redelivery"] == 1
    assert figures["answered"] == 2 and figures["lost"] == 0


def test_a_clean_stream_has_no_problem_and_counts_every_end() -> None:
    trails = [_trail("reply", [_event("handled", attempt=1), _event("replied")]), _trail("connection_lost")]
    summary = account(trails)
    assert summary.problems() == []
    assert summary.figures()["requests"] == 2 and summary.figures()["not_sent"] == 1


def test_a_node_step_in_a_scenario_that_does_not_say_its_nodes_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad-node.yaml"
    path.write_text("id: bad-node\ntitle: a node step without nodes\nmin_protocol: 5\nroles: {requester: peer, responder: peer}\n"
                    "procedure: the harness kills a node\nsteps:\n"
                    "  - responder: {as: r, role: responder, queue: requests}\n  - node_kill: B\n"
                    "  - requester: {as: q, role: requester}\n"
                    "  - request: {as: call, requester: q, queue: requests, body: {n: 1}}\n"
                    "  - expect:\n      - {that: call.outcome, equals: reply, rule: RR-1.1}\n")
    with pytest.raises(UsageError) as refused:
        load_file(path)
    assert "bad-node.yaml:8" in str(refused.value) and "nodes: 3" in str(refused.value)
