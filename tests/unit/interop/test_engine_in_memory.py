"""The engine and the verdict over in-memory peers: steps, names, FAIL/ERROR, cleanup, known failures.

Pure logic only; what a real binding does on the wire is tested on the broker (tests/broker).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from acemq_interop.run import cells
from acemq_interop.run.engine import RunContext, run_cell
from acemq_interop.spec.known_failures import KnownFailure
from acemq_interop.peers.manifests import PeerSpec
from acemq_interop.results.model import Status
from acemq_interop.run.request import RunRequest
from acemq_interop.run.runner import Runner
from acemq_interop.spec.scenarios import Scenario, load_all, load_file
from fake_peers import FakeBroker, FakeManagement, FakePeer, Hellos, no_probe

ROUND_TRIP = next(s for s in load_all() if s.id == "rr-pair-round-trip")


def context(*peers: FakePeer) -> RunContext:
    return RunContext(amqp_url="amqp://in-memory/", vhost="v", management=FakeManagement(),  # type: ignore[arg-type]
                      peers={p.name: p for p in peers}, op_bound_s=1.0, broker="memory", probe_factory=no_probe)


def pair_cell(scenario, requester: str, responder: str) -> cells.Cell:
    return next(c for c in cells.plan([scenario], [PeerSpec(requester), PeerSpec(responder)])
                if c.roles["requester"].name == requester and c.roles["responder"].name == responder)


def scenario_file(tmp_path: Path, steps: str, rules: str = "[RR-8]", roles: str = "{requester: peer, responder: peer}") -> Scenario:
    path = tmp_path / "demo.yaml"
    path.write_text(f"id: demo\ntitle: An in-memory demo\nrules: {rules}\nroles: {roles}\n"
                    f"procedure: Demo steps for the engine.\nsteps:\n{steps}", encoding="utf-8")
    return load_file(path)


def test_a_round_trip_between_two_in_memory_peers_passes_with_its_evidence() -> None:
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0001", context(a, b))
    assert result.status == Status.PASS, result.message
    assert (result.id, result.broker, result.peers) == ("rr-pair-round-trip[requester=a,responder=b]", "memory", ("a", "b"))
    assert [step["step"] for step in result.trace] == ["responder.start", "requester.open", "request", "answer",
                                                       "expect", "expect", "expect", "expect"]
    assert b.log[0]["queue"] == "c0001.requests", "queue names are the cell's"
    assert [c["op"] for c in a.log][-1] == "requester.close" and [c["op"] for c in b.log][-1] == "responder.stop", (
        "what the cell opened is closed at its end")


def test_a_broken_expectation_is_a_fail_naming_its_rule_with_expected_and_observed() -> None:
    broker = FakeBroker()
    a, b = FakePeer("a", broker, defects={"wrong-reply-to"}), FakePeer("b", broker)
    result = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0002", context(a, b))
    assert (result.status, result.rule) == (Status.FAIL, "RR-6.2")
    assert result.observed == "amq.gen-elsewhere" and str(result.expected).startswith("amq.gen-")
    assert "call.reply.seen.reply_to equals" in result.message


def test_a_refused_command_is_an_error_with_the_peers_stderr() -> None:
    broker = FakeBroker()
    a, b = FakePeer("a", broker, refuse={"requester.open"}), FakePeer("b", broker)
    result = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0003", context(a, b))
    assert result.status == Status.ERROR
    assert result.message == "peer 'a' refused requester.open: requester.open refused on purpose"
    assert result.stderr == {"a": "a: in-memory peer", "b": "b: in-memory peer"}


def test_a_template_naming_nothing_is_an_error_of_that_step(tmp_path: Path) -> None:
    # The loader refuses a template whose step does not exist (test_scenario_loading); a field
    # of a peer's answer can only be missed when the cell runs.
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: first, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - request: {as: call, requester: q, queue: requests, body: "${first.reply.nothing.here}", timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
""")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0004", context(a, b))
    # The step is not run and the check reading its call is not evaluated: no clause broke,
    # so the cell is an ERROR that says which check could not be made and why (never a PASS).
    assert result.status == Status.ERROR
    assert result.message == ("1 check(s) not evaluated, none failed: step 5 expect: call.outcome (RR-8.1) "
                              "needs call (needs ${first.reply.nothing.here} names nothing)")
    assert [c["op"] for c in a.log].count("request") == 1, "the step whose input is missing never reaches the peer"


def test_a_reply_count_template_that_names_no_count_is_an_error_before_the_peer_sees_it(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - gather: {as: g, requester: q, mode: multi, endpoint: requests, body: {}, expected_reply_count: "${r.name}", timeout_ms: 1000}
  - expect:
      - {that: g.outcome, equals: replies, rule: SG-5.1}
""", rules="[SG-5]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0009", context(a, b))
    assert result.status == Status.ERROR
    assert "needs expected_reply_count ${r.name} is 'c0009.r', not a count of at least 1" in result.message
    assert "gather" not in [c["op"] for c in a.log]


def test_an_async_call_never_awaited_is_an_error_and_is_cancelled(tmp_path: Path) -> None:
    # The loader refuses such a file; the engine still holds the line for a scenario built otherwise.
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000, async: true}
  - await: call
  - expect:
      - {that: q.name, present: true, rule: RR-8.1}
""")
    scenario = dataclasses.replace(scenario, steps=scenario.steps[:-2])
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0005", context(a, b))
    assert (result.status, result.message) == (Status.ERROR, "the scenario never awaited call")


def test_an_expected_refusal_is_an_outcome_not_an_error(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000, refusal_expected: true}
  - expect:
      - {that: call.outcome, equals: refused, rule: RR-13.2}
""", rules="[RR-13]", roles="{requester: peer}")
    broker = FakeBroker()
    a = FakePeer("a", broker, refuse={"request"})
    cell = next(iter(cells.plan([scenario], [PeerSpec("a")])))
    assert run_cell(cell, "c0006", context(a)).status == Status.PASS


def test_too_few_events_is_a_fail_of_the_steps_rule(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - wait_event: {of: r, event: handled, count: 2, timeout_ms: 10, rule: RR-4.2}
""", rules="[RR-4]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0007", context(a, b))
    assert (result.status, result.rule, result.expected, result.observed) == (Status.FAIL, "RR-4.2", 2, 1)


def test_counters_and_a_responder_stopped_early(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - counters: {as: c, of: r}
  - stop_responder: r
  - request: {as: late, requester: q, queue: requests, body: {n: 2}, timeout_ms: 1000}
  - expect:
      - {that: c.answered, equals: 1, rule: RR-15.1}
      - {that: late.outcome, equals: timeout, rule: RR-9.1}
""", rules="[RR-9, RR-15]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0008", context(a, b))
    assert result.status == Status.PASS, result.message
    assert [c["op"] for c in b.log].count("responder.stop") == 1, "a responder stopped by a step is not stopped again"


def test_the_runner_applies_the_verdict_and_the_rerun_line_to_raw_results() -> None:
    known = [KnownFailure("rr-pair-round-trip[requester=a,*]", "a is old", "", "known-failures/x.yaml")]
    runner = Runner(RunRequest(manifests={}, specs=(PeerSpec("a"), PeerSpec("b")), scenarios=(ROUND_TRIP,), known=tuple(known)))
    broker = FakeBroker()
    a, b = FakePeer("a", broker, defects={"wrong-reply-to"}), FakePeer("b", broker)
    raw = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0009", context(a, b))
    final = runner._finish(raw)
    assert (raw.status, final.status, final.reason) == (Status.FAIL, Status.XFAIL, "a is old")
    assert final.rerun == "acemq-interop run --peers a,b --cell 'rr-pair-round-trip[requester=a,responder=b]'"
    clean = runner._finish(run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0010", context(FakePeer("a", broker), b)))
    assert clean.status == Status.XPASS


@pytest.mark.parametrize("caps, reason", [
    (["request", "respond", "gather"], None),
    (["request"], "peer b lacks capability respond for role responder"),
])
def test_a_role_without_the_capability_its_steps_need_is_skipped(caps: list[str], reason: str | None) -> None:
    cell = pair_cell(ROUND_TRIP, "a", "b")
    hellos = {**Hellos().of("a"), **Hellos(caps).of("b")}
    assert cells.skip_reason(cell, hellos, {}) == reason


def test_wait_counters_passes_when_the_count_is_there_and_fails_its_clause_when_it_never_comes(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - wait_counters: {as: k, of: r, until: {answered: 1}, timeout_ms: 200, rule: RR-16.1}
  - expect:
      - {that: k.answered, equals: 1, rule: RR-16.1}
  - wait_counters: {of: r, until: {answered: 2}, timeout_ms: 200, rule: RR-16.1}
""", rules="[RR-16]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0031", context(a, b))
    assert (result.status, result.rule) == (Status.FAIL, "RR-16.1"), result.message
    assert (result.expected, result.observed) == ({"answered": 2}, {"answered": 1})
    reads = [t for t in result.trace if t["step"] == "wait_counters"]
    assert reads[0]["reads"] == 1 and reads[1]["reads"] > 1, "the first is there at once; the second is read until the bound"


def test_the_wf2_check_fails_on_a_b_u_or_i_anywhere_in_a_header_table() -> None:
    """What rr-*-header-wire-types assert, on a record the raw client would make of a defective writer's message."""
    import struct

    from acemq_interop.spec import assertions
    from acemq_interop.amqp.probe import raw_record
    from acemq_interop.amqp.raw_client import Message, decode_table

    def entry(key: str, code: str, encoded: bytes) -> bytes:
        return bytes([len(key)]) + key.encode() + code.encode() + encoded

    nested = entry("n", "u", struct.pack(">H", 7))
    table = decode_table(entry("acemq-error", "S", struct.pack(">I", 4) + b"E: x")
                         + entry("x-table", "F", struct.pack(">I", len(nested)) + nested))
    record = raw_record(Message({"message_id": "m"}, table, b""))
    assert record["wire_types"] == {"acemq-error": "S", "x-table": "F"}
    assert record["headers"] == {"acemq-error": "E: x", "x-table": {"n": 7}}
    failure = assertions.check({"that": "m.wire_types_by_code", "excludes": "u", "rule": "WF-2.1"}, {"m": record})
    assert failure is not None and failure.rule == "WF-2.1"
    assert failure.observed["u"] == ["x-table.n"], "the FAIL shows which header carried the forbidden type"
    assert assertions.check({"that": "m.wire_types_by_code", "excludes": "B", "rule": "WF-2.1"}, {"m": record}) is None
def test_wait_counters_reads_again_and_not_getting_there_is_a_fail_of_its_clause(tmp_path: Path) -> None:
    """A count decides, not a window: `wait_counters` passes as soon as the counters hold the values."""
    steps = """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - wait_counters: {as: k, of: r, until: {answered: ANSWERED}, timeout_ms: 200, rule: RR-16.1}
"""
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    passed = run_cell(pair_cell(scenario_file(tmp_path, steps.replace("ANSWERED", "1"), rules="[RR-16]"), "a", "b"),
                      "c0009", context(a, b))
    assert passed.status == Status.PASS, passed.message
    failed = run_cell(pair_cell(scenario_file(tmp_path, steps.replace("ANSWERED", "2"), rules="[RR-16]"), "a", "b"),
                      "c0010", context(a, b))
    assert (failed.status, failed.rule, failed.expected, failed.observed) == (Status.FAIL, "RR-16.1", {"answered": 2}, {"answered": 1})


class PacedPeer(FakePeer):
    """A responder whose `handled` events come `gap_s` apart from its first wait on, `total`
    of them, stamped as the real peer link stamps them (`_at`, when the harness read them)."""

    def __init__(self, name: str, broker: FakeBroker, gap_s: float, total: int) -> None:
        super().__init__(name, broker)
        self.gap_s, self.total, self.t0 = gap_s, total, None

    def wait_events(self, match, count, bound_s, since=0, stop=None):  # type: ignore[no-untyped-def]
        if self.t0 is None:
            self.t0 = time.monotonic()
        due = [self.t0 + self.gap_s * (i + 1) for i in range(self.total)]
        deadline = time.monotonic() + bound_s
        while True:
            now = time.monotonic()
            found = [{"event": "handled", "responder": "c0011.r", "_at": at} for at in due if at <= now]
            if len(found) >= count or now >= deadline:
                return found
            time.sleep(min(0.02, deadline - now))


@pytest.mark.parametrize("total, status", [(4, Status.PASS), (2, Status.FAIL), (0, Status.FAIL)])
def test_a_wait_for_several_events_goes_on_while_they_still_come_and_ends_when_they_stop(tmp_path: Path, total: int,
                                                                                         status: Status) -> None:
    """Four events 0.3 s apart outlast a 1 s bound, still coming at the pace a loaded binding
    keeps: PASS. Two that stop (a binding that gave up) and none at all: FAIL of the step's
    rule, with the count seen, and never a wait past twice the bound."""
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - wait_event: {of: r, event: handled, count: 4, timeout_ms: 1000, rule: RR-14.1}
""", rules="[RR-14]", roles="{responder: peer}")
    peer = PacedPeer("a", FakeBroker(), gap_s=0.3, total=total)
    cell = next(iter(cells.plan([scenario], [PeerSpec("a")])))
    started = time.monotonic()
    result = run_cell(cell, "c0011", context(peer))
    took = time.monotonic() - started
    assert result.status == status, result.message
    assert took < 2.0 + 1.0, took
    if status == Status.FAIL:
        assert (result.rule, result.expected, result.observed) == ("RR-14.1", 4, total)
        assert ("still came" in result.message) == (total > 0), result.message
