"""Whose side a failure is, and which clause: the wire's reading of a call's path, a part a
binding lacks, a declaration the broker refused, a call that ends late, one entry per defect.

Found by certifying a binding nobody here wrote (a port of RabbitMQ's tutorial RPC): the
innocent responder was charged for the echo a requester gave it nothing to echo of, a missing
failure header was charged to the requester that read the reply, a refused declaration was an
ERROR, and one defect filled eight entries. Pure logic: transcripts and in-memory peers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acemq_interop.core.errors import CallNotEnded
from acemq_interop.results.model import Status
from acemq_interop.run.engine import run_cell
from acemq_interop.run.wire_checks import diagnose_call
from fake_peers import FakeBroker, FakeCall, FakeManagement, FakePeer
from test_verdicts_in_memory import NoCounters, context, pair_cell, scenario_file


def publish(n: int, who: str, routing_key: str, t: float = 0.1, headers: dict[str, Any] | None = None,
            body_length: int = 2, **properties: Any) -> dict[str, Any]:
    return {"n": n, "t": t, "event": "publish", "who": who, "exchange": "", "routing_keys": [routing_key],
            "properties": properties, "headers": headers or {}, "body_length": body_length}


def deliver(n: int, who: str, queue: str, **properties: Any) -> dict[str, Any]:
    return {"n": n, "t": 0.2, "event": "deliver", "who": who, "queue": queue, "properties": properties, "headers": {}}


S = lambda value: {"type": "S", "value": value}  # noqa: E731
BOTH = {"acemq-reply-to": S("amq.gen-q")}


def test_a_request_with_no_id_at_all_is_the_requesters_rr_8_1_whatever_the_reply() -> None:
    request = publish(1, "a (requester)", "c1.requests", reply_to="amq.gen-q", headers=BOTH)
    reply = publish(2, "b (responder)", "amq.gen-q", correlation_id=None)
    found = diagnose_call([request, reply], "a", "", "c1.requests", 0.0)
    assert found is not None and (found.clause, found.peer) == ("RR-8.1", "a") and found.lines == (1,)


def test_a_request_whose_id_is_its_correlation_id_is_answered_under_it_rr_4_2() -> None:
    """RR-4.2 as amended: a request without message_id (a tutorial caller's) has its
    correlation_id for id; a reply without it is the responder's RR-4.2, one with it is right."""
    request = publish(1, "a (requester)", "c1.requests", reply_to="amq.gen-q", correlation_id="own", headers=BOTH)
    wrong = publish(2, "b (responder)", "amq.gen-q", correlation_id=None)
    found = diagnose_call([request, wrong], "a", "", "c1.requests", 0.0)
    assert found is not None and (found.clause, found.peer) == ("RR-4.2", "b") and found.lines == (1, 2)
    right = publish(2, "b (responder)", "amq.gen-q", correlation_id="own")
    assert diagnose_call([request, right], "a", "", "c1.requests", 0.0) is None


def test_a_responder_that_sent_no_reply_is_charged_by_what_the_request_offered() -> None:
    def no_reply(headers: dict[str, Any], **props: Any) -> tuple[str, str] | None:
        request = publish(1, "a (requester)", "c1.requests", message_id="m1", headers=headers, **props)
        found = diagnose_call([request, deliver(2, "b (responder)", "c1.requests", message_id="m1")], "a", "", "c1.requests", 0.0)
        return (found.clause, found.peer) if found else None

    assert no_reply({}, reply_to="amq.gen-q") == ("RR-3.2", "b"), "only reply_to: a header-only reader"
    assert no_reply(BOTH) == ("RR-3.1", "b"), "only the header: a native-only reader"
    assert no_reply(BOTH, reply_to="amq.gen-q") == ("RR-4.1", "b"), "both, and still nothing sent to either"
    request = publish(1, "a (requester)", "c1.requests", message_id="m1", reply_to="amq.gen-q")
    failed = diagnose_call([request, deliver(2, "b (responder)", "c1.requests", message_id="m1")], "a", "", "c1.requests",
                           0.0, failure_expected=True)
    assert failed is not None and (failed.clause, failed.peer) == ("RR-10.1", "b"), \
        "a handler that threw and no failure reply sent (a retry policy instead, as .NET up to 0.7.12)"
    request = publish(1, "a (requester)", "c1.requests", message_id="m1", headers=BOTH, reply_to="amq.gen-q")
    assert diagnose_call([request], "a", "", "c1.requests", 0.0) is None, "nobody the cell knows took it: nothing to say"


def test_a_reply_sent_through_another_exchange_is_the_responders_rr_4_1_whatever_the_request_offered() -> None:
    """Found certifying a binding that publishes replies to amq.direct: it read the address
    right (reply_to, the header missing) and was charged RR-3.2, and a failure reply sent the
    same way RR-10.1. The reply on the wire, with the call's id, to its address, decides."""
    for headers, props in (({}, {"reply_to": "amq.gen-q"}), (BOTH, {"reply_to": "amq.gen-q"}), (BOTH, {})):
        request = publish(1, "a (requester)", "c1.requests", message_id="m1", headers=headers, **props)
        elsewhere = dict(publish(3, "b (responder)", "amq.gen-q", correlation_id="m1"), exchange="amq.direct")
        for failure_expected in (False, True):
            found = diagnose_call([request, deliver(2, "b (responder)", "c1.requests", message_id="m1"), elsewhere],
                                  "a", "", "c1.requests", 0.0, failure_expected=failure_expected)
            assert found is not None and (found.clause, found.peer, found.lines) == ("RR-4.1", "b", (1, 2, 3)), (headers, props)
            assert "'amq.direct'" in found.text
    request = publish(1, "a (requester)", "c1.requests", message_id="m1", reply_to="amq.gen-q")
    dead_letter = dict(publish(3, "b (responder)", "c1.requests.dlq", correlation_id="m1"), exchange="amq.direct")
    found = diagnose_call([request, deliver(2, "b (responder)", "c1.requests", message_id="m1"), dead_letter],
                          "a", "", "c1.requests", 0.0)
    assert found is not None and found.clause == "RR-3.2", "a dead-letter copy is no reply: the address reading stands"


def test_a_reply_with_another_correlation_or_without_acemq_error_is_its_responders() -> None:
    request = publish(1, "a (requester)", "c1.requests", message_id="m1", headers=BOTH, reply_to="amq.gen-q")
    wrong = publish(2, "b (responder)", "amq.gen-q", correlation_id="c-other", content_type="application/json")
    found = diagnose_call([request, wrong], "a", "", "c1.requests", 0.0)
    assert found is not None and (found.clause, found.peer) == ("RR-4.2", "b")
    json_failure = publish(2, "b (responder)", "amq.gen-q", correlation_id="m1", body_length=29)
    found = diagnose_call([request, json_failure], "a", "", "c1.requests", 0.0, failure_expected=True)
    assert found is not None and (found.clause, found.peer) == ("RR-10.1", "b")
    right = publish(2, "b (responder)", "amq.gen-q", correlation_id="m1", headers={"acemq-error": S("E: x")}, body_length=0)
    assert diagnose_call([request, right], "a", "", "c1.requests", 0.0, failure_expected=True) is None, \
        "answered right on the wire: the requester's own check stands"
    by_probe = dict(json_failure, who="probe")
    assert diagnose_call([request, by_probe], "a", "", "c1.requests", 0.0, failure_expected=True) is None, \
        "the probe is never charged"


def test_a_part_lacking_fails_only_the_clauses_its_absence_breaks(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - counters: {as: k, of: r}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
      - {that: k.answered, equals: 1, rule: RR-15.1}
      - {that: k.answered, lte: 1, rule: RR-11.3, because: "a MUST NOT about a counter: no counter cannot break it"}
""", "[RR-8, RR-11, RR-15]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0001", context(FakePeer("a", broker), NoCounters("b", broker)))
    assert [(f.clause, f.peer) for f in result.failures] == [("RR-15.1", "b")]
    skipped = [n for n in result.not_evaluated if n.clause == "RR-11.3"]
    assert skipped and "has no counters" in skipped[0].needs


class LateEnding(FakePeer):
    def request(self, *args: Any, **kwargs: Any) -> FakeCall:
        call = super().request(*args, **kwargs)
        assert call.answer is not None
        call.answer = {**call.answer, "elapsed_ms": 25000}  # a 1000 ms timeout, ended 24 s late
        return call


def test_a_call_that_ends_later_than_its_timeout_and_the_grace_is_rr_9_6_its_requesters(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
""", "[RR-8]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0002", context(LateEnding("a", broker), FakePeer("b", broker)))
    assert [(f.clause, f.peer, f.observed) for f in result.failures] == [("RR-9.6", "a", 25000)]


def test_one_defect_of_one_peer_is_one_entry_with_every_check_that_saw_it(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.reply.seen.responder, equals: nobody, rule: RR-3.1}
      - {that: call.reply.seen.message_id, equals: nothing, rule: RR-3.1}
""", "[RR-3]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0003", context(FakePeer("a", broker), FakePeer("b", broker)))
    assert [(f.clause, f.peer) for f in result.failures] == [("RR-3.1", "b")]
    assert len(result.failures[0].also) == 1 and "seen.message_id" in result.failures[0].also[0]


class CloseFails(FakePeer):
    """A binding whose close() fails (an error of its client)."""

    def close_requester(self, name: str, check: bool = True, note: Any = None) -> dict[str, Any]:
        self.closes = [*getattr(self, "closes", []), name]
        answer = {"ok": False, "error": "StreamLostError: connection closed under the pending call"}
        if note is not None:
            note({"op": "requester.close", "name": name}, answer)
        return answer


class CloseHangs(FakePeer):
    """A binding whose close() never returns (pika's BlockingConnection closed from a thread
    other than the one waiting in the call): the peer still answers other commands."""

    def close_requester(self, name: str, check: bool = True, note: Any = None) -> dict[str, Any]:
        self.closes = [*getattr(self, "closes", []), name]
        raise CallNotEnded(f"peer '{self.name}' did not answer requester.close (id 9) within 20.0s (it still answers other commands)")


@pytest.mark.parametrize("peer_class, noted, closes", [(CloseFails, "close_refused", None), (CloseHangs, "close_never_ended", 1)])
def test_a_close_its_binding_fails_or_never_returns_is_evidence_and_the_calls_outcomes_are_judged(
        tmp_path: Path, peer_class: type, noted: str, closes: int | None) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - close_requester: q
  - expect:
      - {that: call.outcome, equals: closed, rule: RR-9.5}
""", "[RR-9]\nmin_protocol: 3")
    broker = FakeBroker()
    peer = peer_class("a", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0004", context(peer, FakePeer("b", broker)))
    assert result.status == Status.FAIL and [(f.clause, f.peer) for f in result.failures] == [("RR-9.5", "a")]
    assert any(s.get("step") == noted for s in result.trace)
    if closes is not None:  # a close that hung is not waited on again at cleanup
        assert len(peer.closes) == closes, peer.closes


class Declarer(FakePeer):
    """Declares its request queue as `wants`; the broker (Facts) refuses a declaration that
    differs from the queue's, as RabbitMQ does (406 PRECONDITION_FAILED)."""

    wants = {"type": "quorum", "durable": True}

    def start_responder(self, name: str, queue: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        facts = self.management.declared.get(queue)  # type: ignore[attr-defined]
        if facts is not None and facts != self.wants:
            from acemq_interop.core.errors import CallNotEnded, PeerError

            raise PeerError(f"peer '{self.name}' refused responder.start: ChannelClosedByBroker: (406, "
                            f"\"PRECONDITION_FAILED - inequivalent arg 'durable' for queue '{queue}'\")")
        self.management.declared.setdefault(queue, self.wants)  # type: ignore[attr-defined]
        return super().start_responder(name, queue, *args, **kwargs)


class TutorialDeclarer(Declarer):
    wants = {"type": "classic", "durable": False}  # as RabbitMQ's tutorial declares it


class Facts(FakeManagement):
    def __init__(self) -> None:
        super().__init__()
        self.declared: dict[str, dict[str, Any]] = {}

    def queue(self, vhost: str, name: str) -> dict[str, Any] | None:
        return self.declared.get(name)


def test_a_declaration_the_broker_refused_is_rr_17_1_of_whoever_declared_the_queue_otherwise(tmp_path: Path) -> None:
    """The old responder runs on the requester's peer, the new one on the responder's: the
    queue's facts say whose declaration was wrong, whichever was refused."""
    scenario = scenario_file(tmp_path, """\
  - responder: {as: old, role: requester, queue: requests}
  - stop_responder: old
  - responder: {as: new, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
""", "[RR-8]")
    for old, new, charged in ((TutorialDeclarer, Declarer, "a"), (Declarer, TutorialDeclarer, "b")):
        broker, facts = FakeBroker(), Facts()
        a, b = old("a", broker), new("b", broker)
        a.management = b.management = facts  # type: ignore[attr-defined]
        ctx = context(a, b)
        ctx.management = facts  # type: ignore[assignment]
        result = run_cell(pair_cell(scenario, "a", "b"), "c0005", ctx)
        assert result.status == Status.FAIL, result.message
        assert [(f.clause, f.peer) for f in result.failures] == [("RR-17.1", charged)], (old.__name__, result.failures)
        assert any("did not start" in n.needs for n in result.not_evaluated), "what needed the new responder is not judged"


class HoledTracer:
    """A run's tracer whose connection was lost while the cell ran (amqp/transcript.Tracer.gap_during)."""

    def __init__(self, gap: str | None) -> None:
        self.gap = gap

    def gap_during(self, start: float, end: float) -> str | None:
        return self.gap


def test_a_transcript_with_a_hole_judges_nothing_it_lacks(tmp_path: Path, monkeypatch: Any) -> None:
    """The wire shows the request taken by the responder and no reply: whole, that is the
    responder's RR-4.1; with the tracer's connection lost meanwhile the reply may be in the
    hole, so the requester's check stands as it saw it, and the cell says why."""
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: elsewhere, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
""", "[RR-8]")
    from acemq_interop.amqp import transcript

    def attach(tracer: Any, keep: Any, ns: str, t0: float, result: Any, read: bool = False, probe_connections: Any = ()) -> list:
        records = [publish(1, "a (requester)", f"{ns}.elsewhere", message_id="m1", correlation_id="m1", reply_to="amq.gen-q", headers=BOTH),
                   deliver(2, "b (responder)", f"{ns}.elsewhere", message_id="m1", correlation_id="m1")]
        result.transcript = records
        return records

    monkeypatch.setattr(transcript, "attach", attach)
    verdicts = {}
    for gap in (None, "transcript incomplete: the tracer's connection was lost at +0.2s (back at +0.9s)"):
        broker = FakeBroker()
        ctx = context(FakePeer("a", broker), FakePeer("b", broker))
        ctx.tracer = HoledTracer(gap)
        result = run_cell(pair_cell(scenario, "a", "b"), "c0004", ctx)
        assert result.status == Status.FAIL
        verdicts[gap] = ([(f.clause, f.peer) for f in result.failures], result.transcript_gap)
    assert verdicts[None] == ([("RR-4.1", "b")], ""), verdicts
    holed = verdicts[next(g for g in verdicts if g)]
    assert holed == ([("RR-8.1", "a")], next(g for g in verdicts if g)), holed


def test_a_request_delivered_to_a_responder_that_published_nothing_is_left_unanswered() -> None:
    """The wire's word behind a requester's RR-8 failure turned into the responder's RR-4.1
    (NestJS's server takes a bare JSON body for an event: no handler, no reply)."""
    from acemq_interop.run.wire_checks import published_by, requests_left_unanswered

    request = publish(1, "a (requester)", "c1.requests", reply_to="amq.gen-q", message_id="m1", correlation_id="m1")
    delivered = deliver(2, "b (responder)", "c1.requests", message_id="m1", correlation_id="m1")
    found = requests_left_unanswered([request, delivered], "a")
    assert [(r["n"], d["n"], who) for r, d, who in found] == [(1, 2, "b")]
    reply = publish(3, "b (responder)", "amq.gen-q", correlation_id="m1")
    assert requests_left_unanswered([request, delivered, reply], "a") == []
    assert [r["n"] for r in published_by([request, delivered, reply], "b", "responder")] == [3]
    # A tutorial caller's request, whose id is its correlation_id, is followed the same way.
    own = publish(1, "a (requester)", "c1.requests", reply_to="amq.gen-q", correlation_id="c-7")
    assert len(requests_left_unanswered([own, deliver(2, "b (responder)", "c1.requests", correlation_id="c-7")], "a")) == 1
    # Redelivered (a retry is another clause's) or never delivered: nothing said.
    assert requests_left_unanswered([request, delivered, deliver(3, "b (responder)", "c1.requests", message_id="m1")], "a") == []
    assert requests_left_unanswered([request], "a") == []
