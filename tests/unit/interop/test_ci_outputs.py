"""The files a CI system reads: results.json against its schema, JUnit read back by a real
reader (junitparser), summary.md with every non-PASS cell, and `compare` on results."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from junitparser import Error, Failure, JUnitXml, Skipped

from acemq_interop.results.compare import compare
from acemq_interop.reports.markdown import render_markdown
from acemq_interop.results.model import BrokerInfo, CellResult, PeerStatus, RunResult, Status
from acemq_interop.core.paths import SCHEMAS_DIR
from acemq_interop.reports.junit import write_junit
from acemq_interop.results.files import results_data, write_json


def cell(scenario: str, roles: dict, status: Status, rule: str | None = None, message: str = "", stderr: dict | None = None,
         matrix: str = "pairs") -> CellResult:
    peers = tuple(v for v in roles.values() if v != "probe")
    parts = ",".join(f"{k}={v}" for k, v in roles.items() if v != "probe")
    return CellResult(id=f"{scenario}[{parts}]", scenario=scenario, title=scenario, matrix=matrix, rules=("RR-1", "RR-4"),
                      roles=roles, peers=peers, status=status, broker="b", rule=rule, message=message,
                      expected="a" if rule else None, observed="b" if rule else None, stderr=stderr or {},
                      reason="known" if status in (Status.XFAIL, Status.SKIP) else "",
                      rerun=f"acemq-interop run --peers {','.join(peers)} --cell 'x'")


def run_result() -> RunResult:
    results = [
        cell("rr-pair-a", {"requester": "go", "responder": "go"}, Status.PASS),
        cell("rr-pair-a", {"requester": "go", "responder": "python"}, Status.FAIL, "RR-4.2", "reply correlation_id"),
        cell("rr-pair-a", {"requester": "python", "responder": "go"}, Status.ERROR,
             message="peer go exited\x07 with \x1b[31mcolour\x00", stderr={"go": "panic: \x00boom\x0c"}),
        cell("rr-pair-a", {"requester": "python", "responder": "python"}, Status.XFAIL),
        cell("rr-requester-b", {"requester": "go", "responder": "probe"}, Status.SKIP, matrix="requesters"),
        cell("rr-requester-b", {"requester": "python", "responder": "probe"}, Status.XPASS, matrix="requesters"),
    ]
    hello = {"binding": "acemq-go 1", "client": "amqp091-go 1.5.0", "protocol": 2, "mutants": ["native-only"]}
    peers = {"go": PeerStatus("go", "Go", hello=hello), "python": PeerStatus("python", "Python", hello={"protocol": 1})}
    meta = {"suite": {"name": "acemq-interop", "version": "0.2.0", "git_commit": None}, "command": ["acemq-interop", "run"],
            "started_at": "2026-12-01T10:00:00+00:00", "finished_at": "2026-12-01T10:01:00+00:00", "cells_s": 1.0,
            "selection": {"peers": ["go", "python"], "scenarios": ["rr-pair-a", "rr-requester-b"], "diagonal": False,
                          "cells": None, "shards": 1}, "shard": None,
            "scenario_files": {"rr-pair-a": "scenarios/request-reply/rr-pair-a.yaml"}}
    return RunResult(results, peers, ["go", "python"], [BrokerInfo("b", "RabbitMQ", "4.0.5", "27.2")], 1.5, "now", meta=meta)


def test_results_json_validates_against_its_schema(tmp_path: Path) -> None:
    write_json(run_result(), tmp_path / "results.json")
    data = json.loads((tmp_path / "results.json").read_text())
    jsonschema.validate(data, json.loads((SCHEMAS_DIR / "results.schema.json").read_text()))
    ids = [c["id"] for c in data["cells"]]
    assert len(ids) == len(set(ids))
    assert data["peers"]["go"]["mutants"]["offered"] == 1 and data["peers"]["python"]["mutants"]["offered"] == 0
    assert data["brokers"][0]["version"] == "4.0.5" and data["brokers"][0]["erlang"] == "27.2"


def test_junit_survives_control_characters_and_is_read_back_with_the_right_counts(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(run_result(), path)
    xml = JUnitXml.fromfile(str(path))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"rr-pair-a", "rr-requester-b"}
    pair = suites["rr-pair-a"]
    assert (pair.tests, pair.failures, pair.errors, pair.skipped) == (4, 1, 1, 1)
    cases = {c.name: c for c in pair}
    failure = cases["rr-pair-a[requester=go,responder=python]"].result[0]
    assert isinstance(failure, Failure) and failure.type == "RR-4.2"
    assert failure.message.startswith("RR-4.2 (RR-4 How a reply is addressed): reply correlation_id")
    error = cases["rr-pair-a[requester=python,responder=go]"]
    assert isinstance(error.result[0], Error) and "\\x07" in error.result[0].message
    assert "panic" in (error.system_err or "")
    assert isinstance(cases["rr-pair-a[requester=python,responder=python]"].result[0], Skipped)
    probe = suites["rr-requester-b"]
    assert (probe.tests, probe.failures, probe.skipped) == (2, 1, 1)  # XPASS fails, SKIP skips


def test_summary_md_lists_every_non_pass_cell_with_its_rule_and_rerun_line() -> None:
    report = run_result()
    text = render_markdown(report)
    for r in report.results:
        if r.status != Status.PASS:
            assert f"`{r.id}`" in text, r.id
    assert "RR-4.2" in text and "acemq-interop run --peers" in text
    assert "mutants: none" in text  # python offers none


def test_compare_flags_new_failures_and_changed_rules_and_not_selection_changes() -> None:
    old = results_data(run_result())
    new = json.loads(json.dumps(old))
    cells = {c["id"]: c for c in new["cells"]}
    cells["rr-pair-a[requester=go,responder=go]"].update(status="FAIL", failed_rule="RR-1.2")
    cells["rr-pair-a[requester=go,responder=python]"].update(
        failed_rule="RR-8.3", failures=[dict(cells["rr-pair-a[requester=go,responder=python]"]["failures"][0], clause="RR-8.3")])
    cells["rr-pair-a[requester=python,responder=go]"].update(status="PASS")
    new["cells"] = [c for c in new["cells"] if c["id"] != "rr-requester-b[requester=go]"]
    new["cells"].append(dict(cells["rr-pair-a[requester=go,responder=go]"], id="rr-new[requester=go]", status="FAIL"))
    result = compare(old, new)
    assert [c.key for c in result.regressions] == ["rr-pair-a[requester=go,responder=go]"]
    assert [c.key for c in result.changed_rules] == ["rr-pair-a[requester=go,responder=python]"]
    assert [c.key for c in result.fixes] == ["rr-pair-a[requester=python,responder=go]"]
    assert result.appeared == ["rr-new[requester=go]"] and result.went == ["rr-requester-b[requester=go]"]
    assert result.regressed
    assert not compare(old, json.loads(json.dumps(old))).regressed


def test_a_baseline_from_before_clauses_is_not_a_changed_rule_for_a_clause_of_that_rule() -> None:
    """Older results name the rule (RR-4) where today's name its clause (RR-4.2): the same FAIL."""
    new = results_data(run_result())
    old = json.loads(json.dumps(new))
    for c in old["cells"]:
        c.pop("failures", None), c.pop("not_evaluated", None)  # a version-1 file lists only the first
        if c["failed_rule"]:
            c["failed_rule"] = c["failed_rule"].partition(".")[0]
    assert not compare(old, new).changed_rules and not compare(new, old).changed_rules
    for c in old["cells"]:
        if c["failed_rule"]:
            c["failed_rule"] = "RR-8"
    assert compare(old, new).changed_rules


def test_results_json_read_back_is_the_run_it_was_written_from() -> None:
    """One writer and its inverse: what merge, publish, compare and flakes read is what the
    run wrote, brokers over TLS and peers' offers included."""
    from acemq_interop.results.files import run_from_data

    from dataclasses import replace

    report = run_result()
    report.brokers[0] = replace(report.brokers[0], tls=True)
    again = run_from_data(json.loads(json.dumps(results_data(report))))
    assert results_data(again)["cells"] == results_data(report)["cells"]
    assert results_data(again)["brokers"] == results_data(report)["brokers"] and again.brokers[0].tls
    assert {n: (p.language, p.unavailable) for n, p in again.peers.items()} == {n: (p.language, p.unavailable) for n, p in report.peers.items()}
