"""The foreign-interop matrix (results/foreign.py) as pure logic: how a case is decided, what
stays out of the conformance tables, and which cells `run --foreign` plans."""
from __future__ import annotations

from acemq_interop.results.model import BrokerInfo, CellResult, Failure, NotEvaluated, PeerStatus, RunResult, Status

PEERS = {"go": PeerStatus("go", "Go"),
         "nest": PeerStatus("nest", "JavaScript", foreign={"stack": "SomeRPC"})}


def cell(scenario: str, requester: str, responder: str, status: Status = Status.PASS,
         failures: tuple[Failure, ...] = (), not_evaluated: tuple[NotEvaluated, ...] = ()) -> CellResult:
    return CellResult(id=f"{scenario}[requester={requester},responder={responder}]", scenario=scenario, title="",
                      matrix="pairs", rules=(), roles={"requester": requester, "responder": responder},
                      peers=(requester, responder), status=status, broker="rabbitmq-3.10.8",
                      failures=list(failures), not_evaluated=list(not_evaluated),
                      rule=failures[0].clause if failures else None)


def failure(clause: str, peer: str, check: str = "step 4 expect: call.outcome", observed: object = "timeout",
            expected: object = "reply") -> Failure:
    side = "responder" if clause.startswith(("RR-4", "RR-10.1", "RR-11")) else "requester"
    return Failure(clause, clause.split(".")[0], side, side, peer, check, "m", expected, observed)


def run(*cells: CellResult) -> RunResult:
    return RunResult(list(cells), PEERS, ["go", "nest"], [BrokerInfo("rabbitmq-3.10.8")], 1.0, "now")


def cases(report: RunResult, direction: str) -> dict[str, str]:
    row = next(r for r in report.summary.foreign_rows if r.direction == direction)
    return {k: v.short for k, v in row.cases.items()}


def test_a_case_is_decided_by_the_scenarios_checks_and_the_acemq_side() -> None:
    report = run(
        cell("rr-pair-round-trip", "nest", "go", Status.FAIL,
             (failure("RR-1.2", "nest", check="the broker's transcript, message #1", observed=None),)),
        cell("rr-pair-failure-crosses", "nest", "go", Status.FAIL,
             (failure("RR-10.3", "nest", observed="decode_error", expected="responder_failed"),)),
        cell("rr-pair-timeout-late-reply", "nest", "go", Status.FAIL,
             (failure("RR-9.2", "nest", check="step 6 expect: before.timed_out", observed="declared lacking", expected="counters"),),
             (NotEvaluated("RR-8.2", "step 8 wait_event", "declared: the binding of requester has no events, so it cannot be judged on RR-8.2"),)),
        cell("rr-pair-round-trip", "go", "nest", Status.FAIL, (failure("RR-8.1", "go"),)),
    )
    assert cases(report, "caller") == {"round-trip": "works", "failure": "FAIL RR-10.3 (foreign)",
                                       "timeout": "lacks counters", "late-reply": "lacks events"}
    responder = cases(report, "responder")
    assert responder["round-trip"] == "FAIL RR-8.1 (acemq)" and responder["failure"] == "-"
    row = next(r for r in report.summary.foreign_rows if r.direction == "caller")
    # The reason comes from the catalogue's known incompatibilities, else the clause's title.
    assert "acemq-error" in row.cases["failure"].reason
    assert row.cases["failure"].cell == "rr-pair-failure-crosses[requester=nest,responder=go]"


def test_foreign_cells_stay_out_of_the_tables_and_fail_no_run_but_by_a_fault() -> None:
    ok = run(cell("rr-pair-round-trip", "go", "go"),
             cell("rr-pair-round-trip", "nest", "go", Status.FAIL, (failure("RR-8.1", "nest"),)))
    assert ok.ok and ok.summary.foreign_cells == ("rr-pair-round-trip[requester=nest,responder=go]",)
    assert [r.label for r in ok.summary.peer_rows] == ["go"]
    assert set(ok.summary.pair_matrices[0].cells) == {("go", "go")}
    assert "nest" not in ok.summary.todo and ok.count("FAIL") == 0
    faulty = run(cell("rr-pair-round-trip", "nest", "go", Status.ERROR))
    assert not faulty.ok and cases(faulty, "caller")["round-trip"] == "ERROR"


def test_run_foreign_plans_a_foreign_stack_against_acemq_bindings_only() -> None:
    from acemq_interop.peers.manifests import PeerSpec
    from acemq_interop.run.cells import plan
    from acemq_interop.spec import scenarios

    chosen = scenarios.select(scenarios.load_all(), ["rr-pair-round-trip", "rr-responder-failure-reply"])
    specs = [PeerSpec("go"), PeerSpec("python"), PeerSpec("nest"), PeerSpec("tut")]
    ids = {c.id for c in plan(chosen, specs, interop=frozenset({"nest", "tut"}))}
    pairs = {i for i in ids if i.startswith("rr-pair-round-trip")}
    assert len(pairs) == 8  # each stack with each binding, both ways
    assert not any("requester=nest,responder=tut" in i or "requester=go,responder=python" in i for i in ids)
    assert not any(i.startswith("rr-responder-failure-reply") for i in ids)  # a stack alone with the probe
