"""The result model's summaries: computed once, from plain cell data, what every report shows."""
from __future__ import annotations

import json

from acemq_interop.reports.markdown import render_markdown
from acemq_interop.results.model import BrokerInfo, CellResult, PeerStatus, RunResult, Status, counts_of


def cell(scenario: str, matrix: str, roles: dict, status: Status, rule: str | None = None, broker: str = "b") -> CellResult:
    peers = tuple(v for v in roles.values() if v != "probe")
    parts = ",".join(f"{k}={v}" for k, v in roles.items() if v != "probe")
    return CellResult(id=f"{scenario}[{parts}]", scenario=scenario, title=scenario, matrix=matrix, rules=("RR-1", "RR-4"),
                      roles=roles, peers=peers, status=status, broker=broker, rule=rule, rerun=f"rerun {scenario}")


def run_result() -> RunResult:
    results = [
        cell("rr-pair-a", "pairs", {"requester": "go", "responder": "go"}, Status.PASS),
        cell("rr-pair-a", "pairs", {"requester": "go", "responder": "python"}, Status.FAIL, "RR-4.2"),
        cell("rr-pair-a", "pairs", {"requester": "python", "responder": "go"}, Status.PASS),
        cell("rr-pair-a", "pairs", {"requester": "python", "responder": "python"}, Status.XFAIL),
        cell("rr-requester-b", "requesters", {"requester": "go", "responder": "probe"}, Status.SKIP),
        cell("rr-requester-b", "requesters", {"requester": "python", "responder": "probe"}, Status.PASS),
    ]
    peers = {"go": PeerStatus("go", "Go"), "python": PeerStatus("python", "Python")}
    return RunResult(results, peers, ["go", "python"], [BrokerInfo("b", "RabbitMQ", "3.13.7", "26.2")], 1.5, "now")


def test_status_is_a_string_and_shows_as_its_name() -> None:
    assert Status.PASS == "PASS" and f"{Status.FAIL:<5}|" == "FAIL |" and str(Status.XPASS) == "XPASS"
    assert json.dumps({"s": Status.ERROR}) == '{"s": "ERROR"}'
    assert {s for s in Status if s.bad} == {Status.FAIL, Status.ERROR, Status.XPASS}


def test_counts_text_and_worst() -> None:
    counts = counts_of(run_result().results[:4])
    assert counts.text == "2/4 1 FAIL 1 XFAIL"
    assert counts.worst == Status.FAIL


def test_the_summaries_are_computed_once_on_the_model() -> None:
    report = run_result()
    summary = report.summary
    assert summary.status_counts == {Status.PASS: 3, Status.FAIL: 1, Status.XFAIL: 1, Status.SKIP: 1}
    (matrix,) = summary.pair_matrices
    assert matrix.labels == ("go", "python")
    assert matrix.cells[("go", "python")].text == "0/1 1 FAIL"
    assert matrix.cells[("python", "python")].worst == Status.XFAIL
    assert [key for key, _ in summary.peer_columns] == ["requesters", "pairs"]
    go = next(r for r in summary.peer_rows if r.label == "go")
    assert go.columns["pairs"].text == "2/3 1 FAIL" and go.columns["requesters"].text == "0/1 1 SKIP"
    rr4 = next(r for r in summary.rules if r.rule == "RR-4")
    assert rr4.checked_by == ("rr-pair-a", "rr-requester-b")
    assert rr4.failing == ("rr-pair-a[requester=go,responder=python]",)
    assert summary.problems == ("rr-pair-a[requester=go,responder=python]",)
    assert len(summary.non_pass) == 3 and summary.xfails == ("rr-pair-a[requester=python,responder=python]",)
    assert not report.ok and report.count("PASS") == 3 and report.broker == "b"


def test_the_rule_table_is_built_from_the_clauses_asserted_and_separates_seen_as() -> None:
    """`checked_by` comes from the clauses a scenario's checks assert, never from its listed
    rules; a FAIL seen through another rule's check counts under the rule it broke."""
    def clause_cell(scenario: str, clauses: tuple, status: Status, rule: str | None = None, seen_as: str | None = None):
        c = cell(scenario, "pairs", {"requester": "go", "responder": scenario[-1]}, status, rule)
        c.clauses, c.seen_as = clauses, seen_as
        return c

    results = [clause_cell("rr-pair-x", ("RR-4.2", "RR-10.3"), Status.PASS),
               clause_cell("rr-pair-y", ("RR-2.2", "RR-10.3"), Status.FAIL, "RR-2.2", "RR-10.3")]
    summary = RunResult(results, {}, ["go"], [BrokerInfo("b")], 1.0, "now").summary
    rows = {r.rule: r for r in summary.rules}
    assert rows["RR-1"].checked_by == (), "listed in rules: (RR-1, RR-4) but asserted by nothing"
    assert rows["RR-4"].checked_by == ("rr-pair-x",) and rows["RR-4"].clauses_by == {"rr-pair-x": ("RR-4.2",)}
    assert rows["RR-10"].checked_by == ("rr-pair-x", "rr-pair-y")
    assert rows["RR-2"].failing == ("rr-pair-y[requester=go,responder=y]",) and rows["RR-2"].seen_as == ()
    assert rows["RR-10"].failing == () and rows["RR-10"].seen_as == ("rr-pair-y[requester=go,responder=y]",)


def test_a_broker_axis_gives_one_matrix_per_broker() -> None:
    results = [cell("rr-pair-a", "pairs", {"requester": "go", "responder": "go"}, Status.PASS, broker=b) for b in ("x", "y")]
    report = RunResult(results, {}, ["go"], [BrokerInfo("x"), BrokerInfo("y")], 1.0, "now")
    assert [m.broker for m in report.summary.pair_matrices] == ["x", "y"]


def test_the_markdown_summary_has_the_matrix_the_peer_table_and_every_non_pass_cell() -> None:
    text = render_markdown(run_result())
    assert "| **go** | 1/1 | 0/1 1 FAIL ❌ |" in text
    assert "| peer | as requester vs probe | in pairs (either role) |" in text
    assert "| FAIL | `rr-pair-a[requester=go,responder=python]` | RR-4.2 (RR-4 How a reply is addressed) |" in text
    assert "## Rules broken" in text and "| RR-4 How a reply is addressed | 1 | 0 |" in text
    assert "`rerun rr-requester-b`" in text and "| XFAIL |" in text
    assert "b (RabbitMQ 3.13.7, Erlang 26.2)" in text
