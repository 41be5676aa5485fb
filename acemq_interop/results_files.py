"""Machine-readable results: results.json (everything; schema in schemas/results.schema.json)
and JUnit XML (for CI dashboards, written with the junit-xml library)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from junit_xml import TestCase, TestSuite, to_xml_report_string

from .model import COUNT_ORDER, CellResult, RunResult, Status, mutant_coverage

RESULTS_SCHEMA_VERSION = 1
# XML 1.0 cannot carry these at all, escaped or not: a peer's stderr or message with a
# control character must not make the whole file unreadable.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def cell_record(result: CellResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "scenario": result.scenario,
        "title": result.title,
        "matrix": result.matrix,
        "rules": list(result.rules),
        "roles": dict(result.roles),
        "broker": result.broker,
        "status": result.status.value,
        "duration_s": round(result.duration_s, 3),
        "failed_rule": result.rule,
        "message": result.message,
        "expected": result.expected,
        "observed": result.observed,
        "reason": result.reason,
        "rerun": result.rerun,
        "trace": result.trace,
        "stderr": result.stderr,
        **({"transcript": result.transcript} if result.transcript is not None else {}),
    }


def results_data(report: RunResult) -> dict[str, Any]:
    from .catalogue import mutants

    catalogue_mutants = list(mutants())
    meta = report.meta
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "tool": "acemq-interop",
        "suite": meta.get("suite", {}),
        "command": meta.get("command", []),
        "started_at": meta.get("started_at", report.started_at),
        "finished_at": meta.get("finished_at"),
        "duration_s": round(report.duration_s, 1),
        "cells_s": meta.get("cells_s"),
        "selection": meta.get("selection", {}),
        "shard": meta.get("shard"),
        "broker": report.broker,
        "tls": report.tls,
        "brokers": [{"label": b.label, "product": b.product, "version": b.version, "erlang": b.erlang, "tls": b.tls}
                    for b in report.brokers],
        "peers": {
            name: {
                "language": s.language,
                "binding": s.hello.get("binding"),
                "client": s.hello.get("client"),
                "protocol": s.hello.get("protocol"),
                "image": (meta.get("images") or {}).get(name),
                "profiles": s.hello.get("profiles"),
                "mutants": s.hello.get("mutants_offered") or (mutant_coverage(s.hello, catalogue_mutants) if s.hello else None),
                "build_s": None if s.build_s is None else round(s.build_s, 2),
                "startup_s": None if s.startup_s is None else round(s.startup_s, 2),
                "unavailable": s.unavailable,
            }
            for name, s in report.peers.items()
        },
        "summary": {status.value: report.count(status) for status in COUNT_ORDER},
        # Why the run stopped before its end ("broker lost: ...", "interrupted ..."), else null.
        "aborted": meta.get("aborted"),
        "cells": [cell_record(r) for r in report.results],
    }


def write_json(report: RunResult, path: Path) -> None:
    # default=repr never reaches here for the model's own values; anything else a peer sent
    # is JSON already. A value that is not (a bug) is shown as text rather than lost.
    path.write_text(json.dumps(results_data(report), indent=1, default=str, ensure_ascii=False), encoding="utf-8")


def _case(report: RunResult, r: CellResult, scenario_file: str | None) -> TestCase:
    case = TestCase(name=r.id, classname=r.scenario, elapsed_sec=round(r.duration_s, 3), file=scenario_file,
                    status=r.status.value)
    stderr = "\n".join(f"--- {peer} stderr (tail) ---\n{text}" for peer, text in r.stderr.items() if text.strip())
    if stderr:
        case.stderr = _xml_safe(stderr)
    if r.status == Status.FAIL:
        from .catalogue import catalogue

        title = catalogue().title(r.rule or "")
        check = (r.message or "").splitlines()[0] if r.message else ""
        text = (f"{r.rule} {title}: {r.message}\nexpected: {json.dumps(r.expected, default=str)}\n"
                f"observed: {json.dumps(r.observed, default=str)}\nrerun: {r.rerun}")
        case.add_failure_info(message=_xml_safe(f"{r.rule} {title}: {check}"), output=_xml_safe(text),
                              failure_type=r.rule or "FAIL")
    elif r.status == Status.XPASS:
        case.add_failure_info(message=_xml_safe(f"XPASS: {r.reason}"), output=_xml_safe(f"{r.reason}\nrerun: {r.rerun}"),
                              failure_type="XPASS")
    elif r.status == Status.ERROR:
        first = (r.message or "").splitlines()[0] if r.message else "ERROR"
        case.add_error_info(message=_xml_safe(first), output=_xml_safe(f"{r.message}\nrerun: {r.rerun}"), error_type="ERROR")
    elif r.status in (Status.SKIP, Status.XFAIL):
        case.add_skipped_info(message=_xml_safe(f"{r.status.value}: {r.reason}"))
    return case


def write_junit(report: RunResult, path: Path, scenario_files: dict[str, str] | None = None) -> None:
    """One testsuite per scenario, one testcase per cell; XFAIL and SKIP are skips with their reason."""
    files = scenario_files or report.meta.get("scenario_files") or {}
    suites = []
    for scenario_id, ids in report.summary.scenarios.items():
        results = report.cells(ids)
        cases = [_case(report, r, files.get(scenario_id)) for r in results]
        suite = TestSuite(scenario_id, cases, timestamp=report.meta.get("started_at"), file=files.get(scenario_id))
        suites.append(suite)
    xml = to_xml_report_string(suites, prettyprint=True, encoding="utf-8")
    path.write_text(xml, encoding="utf-8")
