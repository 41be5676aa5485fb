"""Machine-readable results: results.json (everything) and JUnit XML (for CI dashboards)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from .model import COUNT_ORDER, CellResult, RunResult, Status


def cell_record(result: CellResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "scenario": result.scenario,
        "title": result.title,
        "matrix": result.matrix,
        "rules": list(result.rules),
        "roles": dict(result.roles),
        "broker": result.broker,
        "status": result.status,
        "duration_s": round(result.duration_s, 3),
        "failed_rule": result.rule,
        "message": result.message,
        "expected": result.expected,
        "observed": result.observed,
        "reason": result.reason,
        "rerun": result.rerun,
        "trace": result.trace,
        "stderr": result.stderr,
    }


def write_json(report: RunResult, path: Path) -> None:
    data = {
        "tool": "acemq-interop",
        "started_at": report.started_at,
        "duration_s": round(report.duration_s, 1),
        "broker": report.broker,
        "brokers": [{"label": b.label, "product": b.product, "version": b.version, "erlang": b.erlang} for b in report.brokers],
        "peers": {
            name: {
                "language": s.language,
                "binding": s.hello.get("binding"),
                "client": s.hello.get("client"),
                "profiles": s.hello.get("profiles"),
                "build_s": None if s.build_s is None else round(s.build_s, 2),
                "startup_s": None if s.startup_s is None else round(s.startup_s, 2),
                "unavailable": s.unavailable,
            }
            for name, s in report.peers.items()
        },
        "summary": {status.value: report.count(status) for status in COUNT_ORDER},
        "cells": [cell_record(r) for r in report.results],
    }
    path.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")


def write_junit(report: RunResult, path: Path) -> None:
    """One testsuite per scenario, one testcase per cell; XFAIL is a skip with its reason."""
    by_scenario = {sid: report.cells(ids) for sid, ids in report.summary.scenarios.items()}
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<testsuites name="acemq-interop" time="{report.duration_s:.1f}">']
    for scenario_id, results in by_scenario.items():
        failures = sum(1 for r in results if r.status in (Status.FAIL, Status.XPASS))
        errors = sum(1 for r in results if r.status == Status.ERROR)
        skipped = sum(1 for r in results if r.status in (Status.SKIP, Status.XFAIL))
        lines.append(f'  <testsuite name="{escape(scenario_id)}" tests="{len(results)}" failures="{failures}" errors="{errors}" skipped="{skipped}">')
        for r in results:
            lines.append(f'    <testcase classname="{escape(scenario_id)}" name="{escape(r.id, {chr(34): "&quot;"})}" time="{r.duration_s:.3f}">')
            if r.status == Status.FAIL:
                text = f"{r.rule}: {r.message}\nexpected: {r.expected!r}\nobserved: {r.observed!r}\nrerun: {r.rerun}"
                lines.append(f'      <failure message="{escape(r.rule or "", {chr(34): "&quot;"})}">{escape(text)}</failure>')
            elif r.status == Status.XPASS:
                lines.append(f'      <failure message="XPASS">{escape(r.reason)}</failure>')
            elif r.status == Status.ERROR:
                lines.append(f'      <error message="ERROR">{escape(r.message + chr(10) + "rerun: " + r.rerun)}</error>')
            elif r.status in (Status.SKIP, Status.XFAIL):
                lines.append(f'      <skipped message="{r.status}: {escape(r.reason, {chr(34): "&quot;"})}"/>')
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
