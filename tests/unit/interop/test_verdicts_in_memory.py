"""Verdicts over in-memory peers: every check of a cell, charged to the side that broke it.

A cell runs to its end and lists every clause it saw broken; a check whose input an earlier
step did not produce is "not evaluated"; a binding call that never ends, or ends in a
refusal the scenario judges, is a FAIL of its clause; a part a binding declares it lacks
FAILs the clauses it makes impossible, charged to that peer only. Pure logic: the same is
checked on the broker by the mutant suites.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from acemq_interop.run import cells
from acemq_interop.run.engine import RunContext, run_cell
from acemq_interop.core.errors import CallNotEnded
from acemq_interop.peers.manifests import PeerSpec
from acemq_interop.results.model import BrokerInfo, PeerStatus, RunResult, Status
from acemq_interop.spec.scenarios import Scenario, load_file
from fake_peers import FakeBroker, FakeCall, FakeManagement, FakePeer, no_probe


def context(*peers: FakePeer) -> RunContext:
    return RunContext(amqp_url="amqp://in-memory/", vhost="v", management=FakeManagement(),  # type: ignore[arg-type]
                      peers={p.name: p for p in peers}, op_bound_s=1.0, broker="memory", probe_factory=no_probe)


def pair_cell(scenario: Scenario, requester: str, responder: str) -> cells.Cell:
    return next(c for c in cells.plan([scenario], [PeerSpec(requester), PeerSpec(responder)])
                if c.roles["requester"].name == requester and c.roles["responder"].name == responder)


def scenario_file(tmp_path: Path, steps: str, rules: str) -> Scenario:
    path = tmp_path / "demo.yaml"
    path.write_text(f"id: demo\ntitle: An in-memory demo\nrules: {rules}\nroles: {{requester: peer, responder: peer}}\n"
                    f"procedure: Demo steps for the engine.\nsteps:\n{steps}", encoding="utf-8")
    return load_file(path)


ROUND_TRIP_STEPS = """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
      - {that: call.reply.seen.reply_to, equals: "${q.reply_queue}", rule: RR-6.2}
      - {that: call.reply.seen.responder, equals: nobody, rule: RR-3.1}
      - {that: call.reply.echo, equals: {n: 1}, rule: RR-5.2}
"""


def test_a_cell_lists_every_clause_it_saw_broken_each_charged_to_the_peer_of_its_side(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, ROUND_TRIP_STEPS, "[RR-3, RR-5, RR-6, RR-8]")
    broker = FakeBroker()
    a = FakePeer("a", broker, defects={"wrong-reply-to"})
    b = FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0001", context(a, b))
    assert result.status == Status.FAIL
    assert result.broken_clauses == ["RR-6.2", "RR-3.1"], "both broken checks are named, in order, and the passing ones not"
    by_clause = {f.clause: f for f in result.failures}
    assert (by_clause["RR-6.2"].side, by_clause["RR-6.2"].peer, by_clause["RR-6.2"].role) == ("requester", "a", "requester")
    assert (by_clause["RR-3.1"].side, by_clause["RR-3.1"].peer) == ("responder", "b")
    assert by_clause["RR-3.1"].observed == "b" and by_clause["RR-3.1"].expected == "nobody"
    assert result.rule == "RR-6.2" and result.trace[by_clause["RR-3.1"].at]["rule"] == "RR-3.1", "evidence is one index away"


def test_a_wrong_outcome_leaves_the_rest_of_the_answer_not_evaluated(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, ROUND_TRIP_STEPS.replace("queue: requests, body", "queue: elsewhere, body"),
                             "[RR-3, RR-5, RR-6, RR-8]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0002", context(FakePeer("a", broker), FakePeer("b", broker)))
    assert result.status == Status.FAIL
    assert result.broken_clauses == ["RR-8.1"], "the timeout is named once, not again by every check of the missing reply"
    assert [n.clause for n in result.not_evaluated] == ["RR-6.2", "RR-3.1", "RR-5.2"]
    assert all("call" in n.needs for n in result.not_evaluated)


def test_the_per_peer_table_charges_only_the_peer_that_broke_the_clause(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, ROUND_TRIP_STEPS, "[RR-3, RR-5, RR-6, RR-8]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0003", context(a, b))
    assert result.status == Status.FAIL and [(f.clause, f.peer) for f in result.failures] == [("RR-3.1", "b")]
    report = RunResult([result], {"a": PeerStatus("a", "x"), "b": PeerStatus("b", "x")}, ["a", "b"], [BrokerInfo("memory")],
                       1.0, "2026-12-02T00:00:00Z")
    rows = {row.label: row.columns["pairs"] for row in report.summary.peer_rows}
    assert rows["a"].text == "1/1" and rows["b"].text == "0/1 1 FAIL", "the innocent requester passed its side"
    assert [i.clause for i in report.summary.todo["b"]] == ["RR-3.1"] and "a" not in report.summary.todo


class NeverEnding(FakePeer):
    """Its binding's call never ends, while the peer answers everything else."""

    def request(self, *args: Any, **kwargs: Any) -> FakeCall:
        call = super().request(*args, **kwargs)

        def wait(bound_s: float, abort: Any = None) -> dict[str, Any]:
            raise CallNotEnded(f"peer '{self.name}' did not answer request within {bound_s:.1f}s (it still answers other commands)")
        call.wait = wait  # type: ignore[method-assign]
        return call


def test_a_call_that_never_ends_is_a_fail_of_the_timeout_clause_charged_to_the_requester(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, ROUND_TRIP_STEPS, "[RR-3, RR-5, RR-6, RR-8]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0004", context(NeverEnding("a", broker), FakePeer("b", broker)))
    assert result.status == Status.FAIL, result.message
    assert [(f.clause, f.peer) for f in result.failures] == [("RR-9.6", "a")]
    assert len(result.not_evaluated) == 4, "nothing reads the answer that never came"


def test_a_refused_call_is_an_outcome_the_checks_judge_and_an_unjudged_one_an_error(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, ROUND_TRIP_STEPS, "[RR-3, RR-5, RR-6, RR-8]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0005", context(FakePeer("a", broker, refuse={"request"}), FakePeer("b", broker)))
    assert result.status == Status.FAIL and result.broken_clauses == ["RR-8.1"]
    assert result.failures[0].observed == "refused" and result.failures[0].peer == "a"
    unjudged = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: q.name, present: true, rule: RR-6.1}
""", "[RR-6]")
    result = run_cell(pair_cell(unjudged, "a", "b"), "c0006", context(FakePeer("a", broker, refuse={"request"}), FakePeer("b", broker)))
    assert result.status == Status.ERROR and "refused the call 'call'" in result.message


class NoCounters(FakePeer):
    def lacks(self) -> frozenset[str]:
        return frozenset({"counters"})


def test_a_part_a_binding_declares_it_lacks_fails_its_clauses_at_once_charged_to_it(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - wait_counters: {as: k, of: r, until: {answered: 1}, rule: RR-16.1}
  - counters: {as: kq, of: q}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
      - {that: k.answered, equals: 1, rule: RR-15.1}
      - {that: kq.timed_out, equals: 0, rule: RR-9.2}
""", "[RR-8, RR-9, RR-15, RR-16]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), NoCounters("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0007", context(a, b))
    assert result.status == Status.FAIL
    assert [(f.clause, f.peer) for f in result.failures] == [("RR-16.1", "b"), ("RR-15.1", "b")]
    assert "declares no counters" in result.failures[0].message
    assert not [c for c in b.log if c["op"] == "counters"], "nothing asks a binding for what it said it has not"
    assert scenario.level == "request/reply full"


class RefusesCounters(FakePeer):
    """A binding with no counters whose adapter does not say so: it refuses `counters`."""

    def counters(self, of: str, note: Any = None) -> dict[str, Any]:
        from acemq_interop.core.errors import Lacking

        self.log.append({"op": "counters", "of": of})
        raise Lacking("counters", f"peer '{self.name}' refused counters of '{of}': unknown name")


def test_a_part_shown_lacking_by_the_peers_own_answer_is_judged_as_a_declared_lack(tmp_path: Path) -> None:
    """Issue 29: the same verdict as a declared lack (the clauses the absence breaks FAIL, the
    ones about counting wrongly are not evaluated), never a refused command's ERROR."""
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - wait_counters: {as: k, of: r, until: {answered: 1}, rule: RR-16.1}
  - counters: {as: k2, of: r}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
      - {that: k.answered, equals: 1, rule: RR-15.1}
      - {that: k2.answered, equals: 1, rule: RR-15.2}
""", "[RR-8, RR-15, RR-16]")
    broker = FakeBroker()
    a, b = FakePeer("a", broker), RefusesCounters("b", broker)
    result = run_cell(pair_cell(scenario, "a", "b"), "c0008", context(a, b))
    assert result.status == Status.FAIL
    assert [(f.clause, f.peer) for f in result.failures] == [("RR-16.1", "b"), ("RR-15.1", "b")]
    assert "the binding has no counters (peer 'b' refused counters" in result.failures[0].message
    assert [n.clause for n in result.not_evaluated] == ["RR-15.2"], "counting wrongly needs counters to count with"
    assert "lacks: " in result.not_evaluated[0].needs


def test_no_request_reply_clause_is_checked_only_inside_a_gather_scenario() -> None:
    """A request/reply-only binding (no `gather` capability) SKIPs every gather scenario:
    every request/reply clause it is obliged by must still be judged somewhere else."""
    from acemq_interop.spec import catalogue as spec
    from acemq_interop.spec.scenarios import load_all

    outside: set[str] = set()
    for scenario in load_all():
        if scenario.level != "scatter-gather":
            outside.update(scenario.clauses)
    clauses = spec.catalogue().clauses
    asserted = {c for s in load_all() for c in s.clauses}
    only_in_gathers = sorted(c for c in asserted - outside if c.startswith("RR-") and clauses[c].side != "gatherer")
    assert not only_in_gathers, f"judged only inside gather scenarios: {only_in_gathers}"


def test_a_scenario_counts_at_its_conformance_level() -> None:
    from acemq_interop.spec.scenarios import LEVELS, load_all

    levels = {s.id: s.level for s in load_all()}
    assert levels["rr-pair-round-trip"] == LEVELS[0] and levels["rr-responder-backlog-counted"] == LEVELS[1]
    assert levels["sg-pair-publish-no-count"] == LEVELS[2]


def _failed(cell: str, scenario: str, clause: str, peer: str, seen_as: str | None = None) -> Any:
    from acemq_interop.results.model import CellResult, Failure

    failure = Failure(clause, clause.partition(".")[0], "responder", "responder", peer, "check", f"{clause} broke",
                      seen_as=seen_as)
    return CellResult(cell, scenario, "t", "responders", (), {"responder": peer}, (peer,), Status.FAIL, rule=clause,
                      message=failure.message, failures=[failure])


def test_a_failure_seen_through_a_presumed_clause_the_peer_broke_elsewhere_is_that_clause() -> None:
    from acemq_interop.results import presumptions

    proof = _failed("header-wins[b]", "header-wins", "RR-3.1", "b")
    seen = _failed("as-bytes[b]", "as-bytes", "RR-2.2", "b")
    other = _failed("as-bytes[c]", "as-bytes", "RR-2.2", "c")  # c reads headers: its RR-2.2 stands
    renamed = presumptions.apply([proof, seen, other], {"as-bytes": ("RR-3.1",)})
    assert renamed[0] is proof and renamed[2] is other
    assert (renamed[1].rule, renamed[1].failures[0].clause, renamed[1].failures[0].seen_as) == ("RR-3.1", "RR-3.1", "RR-2.2")
    assert "header-wins[b]" in renamed[1].failures[0].message, "the proving cell is cited"
    # A presumption proven only through another presumption proves nothing.
    echo = _failed("header-wins[d]", "header-wins", "RR-3.1", "d", seen_as="RR-5.3")
    assert presumptions.apply([echo, _failed("x[d]", "as-bytes", "RR-2.2", "d")], {"as-bytes": ("RR-3.1",)})[1].rule == "RR-2.2"


def test_a_failure_renamed_by_a_presumption_proves_nothing_further() -> None:
    """Issue 29: one root per defect across cells. b answers no request at all: RR-4.1 in a
    both-address cell; its native-only cell's RR-3.2 is renamed RR-4.1, and so proves no RR-3.2
    for a third scenario presuming it (its own RR-4.2 stands). c only misreads reply_to: its
    RR-3.2 is a proof, and the third scenario's failure is renamed to it."""
    from acemq_interop.results import presumptions

    assumes = {"native-only": ("RR-4.1",), "tutorial": ("RR-3.2",)}
    cells = [_failed("failure[b]", "failure", "RR-4.1", "b"), _failed("native-only[b]", "native-only", "RR-3.2", "b"),
             _failed("tutorial[b]", "tutorial", "RR-4.2", "b"),
             _failed("native-only[c]", "native-only", "RR-3.2", "c"), _failed("tutorial[c]", "tutorial", "RR-4.2", "c")]
    renamed = {r.id: r for r in presumptions.apply(cells, assumes)}
    assert (renamed["native-only[b]"].rule, renamed["native-only[b]"].failures[0].seen_as) == ("RR-4.1", "RR-3.2")
    assert renamed["tutorial[b]"].rule == "RR-4.2", "a renamed failure is no proof of its old clause"
    assert (renamed["tutorial[c]"].rule, renamed["tutorial[c]"].failures[0].seen_as) == ("RR-3.2", "RR-4.2")


def test_a_later_failure_of_a_peer_already_charged_in_its_cell_proves_nothing() -> None:
    """Found certifying a binding that replies through amq.direct: in a redeploy cell its
    RR-4.1 came first and its Answered never reached 5 after (RR-16.1), and that RR-16.1 was
    then taken as proven, charging RR-16.1 in every scenario presuming it. A later failure of a
    peer already charged in the cell proves nothing; one of another peer, or the first, does."""
    from dataclasses import replace

    from acemq_interop.results import presumptions
    from acemq_interop.results.model import Failure

    first = Failure("RR-4.1", "RR-4", "responder", "responder", "b", "transcript", "through amq.direct", wire="transcript #3")
    after = Failure("RR-16.1", "RR-16", "responder", "responder", "b", "check", "answered never 5")
    other = Failure("RR-9.2", "RR-9", "requester", "requester", "c", "check", "timed out")
    redeploy = replace(_failed("redeploy[c,b]", "redeploy", "RR-4.1", "b"), failures=[first, other, after])
    proven = presumptions.broken_by_peer([redeploy])
    assert set(proven) == {("b", "RR-4.1"), ("c", "RR-9.2")}
    seen = _failed("counted[b]", "counted", "RR-15.1", "b")
    assert presumptions.apply([redeploy, seen], {"counted": ("RR-16.1",)})[1].rule == "RR-15.1", "its own clause stands"
    wire_later = replace(redeploy, failures=[first, replace(after, wire="transcript #9")])
    assert ("b", "RR-16.1") in presumptions.broken_by_peer([wire_later]), "what the wire showed is proof wherever it stands"


def test_a_presumption_proven_in_another_shard_is_applied_when_the_shards_merge() -> None:
    """`--shard` then `merge` gives the unsplit run's verdicts: a failure seen through a clause
    the same peer broke in a cell of the other shard is renamed to that clause."""
    from acemq_interop.results.files import cell_record
    from acemq_interop.results.merge import merge

    def shard(k: int, cells: list) -> tuple[str, dict]:
        selection = {"peers": ["b"], "scenarios": ["header-wins", "as-bytes"], "diagonal": True, "cells": None,
                     "shards": 2, "assumes": {"as-bytes": ["RR-3.1"]}}
        return f"shard{k}", {"suite": "s", "selection": selection, "shard": f"{k}/2", "brokers": [], "peers": {},
                             "cells": [cell_record(c) for c in cells]}

    proof = _failed("header-wins[b]", "header-wins", "RR-3.1", "b")
    seen = _failed("as-bytes[b]", "as-bytes", "RR-2.2", "b")
    merged = {c.id: c for c in merge([shard(1, [proof]), shard(2, [seen])]).results}
    assert (merged["as-bytes[b]"].rule, merged["as-bytes[b]"].failures[0].seen_as) == ("RR-3.1", "RR-2.2")
    assert merged["header-wins[b]"].rule == "RR-3.1"
    # Shards written before the selection kept `assumes` merge as they did.
    old = [shard(1, [proof]), shard(2, [seen])]
    for _, data in old:
        del data["selection"]["assumes"]
    assert {c.id: c.rule for c in merge(old).results}["as-bytes[b]"] == "RR-2.2"


def test_conformance_is_counted_per_level_and_charged_only_to_the_peer_that_broke_it() -> None:
    from acemq_interop.reports.console import levels_table
    from acemq_interop.reports.markdown import render_markdown

    broke = _failed("c1", "s1", "RR-16.1", "b")
    broke.level, broke.roles, broke.peers = "request/reply full", {"requester": "a", "responder": "b"}, ("a", "b")
    core = _failed("c2", "s2", "RR-3.1", "b")
    core.status, core.failures, core.level, core.peers = Status.PASS, [], "request/reply core", ("b",)
    report = RunResult([broke, core], {}, ["a", "b"], [BrokerInfo("memory")], 1.0, "2026-12-02T00:00:00Z")
    levels = report.summary.levels
    assert levels["b"]["request/reply full"].text == "0/1 1 FAIL" and levels["b"]["request/reply core"].text == "1/1"
    assert levels["a"]["request/reply full"].text == "1/1", "the requester beside it kept its side"
    assert levels_table(report) is not None and "By conformance level" in render_markdown(report)


class NoRequestId(FakePeer):
    def request(self, *args: Any, **kwargs: Any) -> FakeCall:
        call = super().request(*args, **kwargs)
        if call.answer:
            call.answer.pop("request_id", None)
        return call


def test_an_answer_without_the_request_id_a_later_check_needs_fails_the_clause_it_stands_for(tmp_path: Path) -> None:
    scenario = scenario_file(tmp_path, """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
      - {that: call.reply.seen.message_id, equals: "${call.request_id}", rule: RR-4.2}
""", "[RR-4, RR-8]")
    broker = FakeBroker()
    result = run_cell(pair_cell(scenario, "a", "b"), "c0008", context(NoRequestId("a", broker), FakePeer("b", broker)))
    assert result.status == Status.FAIL
    assert [(f.clause, f.peer) for f in result.failures] == [("RR-8.1", "a")], "the caller's answer, not the responder's RR-4.2"
    assert [n.clause for n in result.not_evaluated] == ["RR-4.2"]


def test_a_hold_that_ran_long_voids_only_what_was_judged_after_it_may_have_run_out() -> None:
    """Issue 29: a failure judged before the hold's trusted time, and a wait for an event that
    never came (a hold delays confirms, not a binding's hooks), stand; one judged later is not
    evaluated; with nothing standing, the cell has no verdict (an ERROR)."""
    from types import SimpleNamespace

    from acemq_interop.results.model import CellResult, Failure
    from acemq_interop.run.engine import _judge_long_holds

    def cell(*failures: Failure) -> CellResult:
        return CellResult(id="x", scenario="x", title="x", matrix="responders", rules=(), roles={}, peers=("b",),
                          status=Status.FAIL, rule=failures[0].clause, failures=list(failures))

    def failure(clause: str, check: str, at: int) -> Failure:
        return Failure(clause=clause, rule=clause.split(".")[0], side="responder", role="responder", peer="b",
                       check=check, message=check, at=at)

    state = SimpleNamespace(trace=[{"t": 1.0, "step": "expect"}, {"t": 5.4, "step": "wait_event"}, {"t": 6.0, "step": "wait_counters"}],
                            long_holds=[(5.2, 6.5, "the hold ran long")])
    early, event, late = failure("RR-15.1", "step 4 expect", 0), failure("RR-15.1", "step 5 wait_event: 1", 1), \
        failure("RR-16.1", "step 6 wait_counters", 2)
    result = cell(early, late, event)
    _judge_long_holds(state, result)  # type: ignore[arg-type]
    assert result.status == Status.FAIL and result.failures == [early, event]
    assert [(n.clause, "ran long" in n.needs) for n in result.not_evaluated] == [("RR-16.1", True)]
    only_late = cell(failure("RR-16.1", "step 6 wait_counters", 2))
    _judge_long_holds(state, only_late)  # type: ignore[arg-type]
    assert only_late.status == Status.ERROR and "the hold ran long" in only_late.message and not only_late.failures
    # A PASS whose checks were all judged before the hold may have run out keeps its verdict;
    # one with a check judged after it has none.
    early_pass = CellResult(id="x", scenario="x", title="x", matrix="responders", rules=(), roles={}, peers=("b",), status=Status.PASS)
    _judge_long_holds(SimpleNamespace(trace=[{"t": 1.0, "step": "wait_counters"}, {"t": 5.6, "step": "release_queue"}],  # type: ignore[arg-type]
                                      long_holds=[(5.2, 5.6, "the hold ran long")]), early_pass)
    assert early_pass.status == Status.PASS
    late_pass = CellResult(id="x", scenario="x", title="x", matrix="responders", rules=(), roles={}, peers=("b",), status=Status.PASS)
    _judge_long_holds(SimpleNamespace(trace=[{"t": 5.3, "step": "wait_counters"}], long_holds=[(5.2, 5.6, "ran long")]), late_pass)  # type: ignore[arg-type]
    assert late_pass.status == Status.ERROR
