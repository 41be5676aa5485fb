"""Machine-readable results: results.json (everything) and JUnit XML (for CI dashboards)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from .cells import ERROR, FAIL, SKIP, XFAIL, XPASS, CellResult
from .runner import RunReport


def cell_record(result: CellResult) -> dict[str, Any]:
    cell = result.cell
    roles = {}
    for role, who in cell.assignment:
        roles[role] = "probe" if who is None else ([s.label for s in who] if isinstance(who, tuple) else who.label)
    return {
        "id": cell.id,
        "scenario": cell.scenario.id,
        "title": cell.scenario.title,
        "matrix": cell.scenario.matrix,
        "rules": list(cell.scenario.rules),
        "roles": roles,
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


def write_json(report: RunReport, path: Path) -> None:
    data = {
        "tool": "acemq-interop",
        "started_at": report.started_at,
        "duration_s": round(report.duration_s, 1),
        "broker": report.broker,
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
        "summary": {status: report.count(status) for status in ("PASS", FAIL, ERROR, SKIP, XFAIL, XPASS)},
        "cells": [cell_record(r) for r in report.results],
    }
    path.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")


def write_junit(report: RunReport, path: Path) -> None:
    """One testsuite per scenario, one testcase per cell; XFAIL is a skip with its reason."""
    by_scenario: dict[str, list[CellResult]] = {}
    for result in report.results:
        by_scenario.setdefault(result.cell.scenario.id, []).append(result)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<testsuites name="acemq-interop" time="{report.duration_s:.1f}">']
    for scenario_id, results in by_scenario.items():
        failures = sum(1 for r in results if r.status in (FAIL, XPASS))
        errors = sum(1 for r in results if r.status == ERROR)
        skipped = sum(1 for r in results if r.status in (SKIP, XFAIL))
        lines.append(f'  <testsuite name="{escape(scenario_id)}" tests="{len(results)}" failures="{failures}" errors="{errors}" skipped="{skipped}">')
        for r in results:
            lines.append(f'    <testcase classname="{escape(scenario_id)}" name="{escape(r.cell.id, {chr(34): "&quot;"})}" time="{r.duration_s:.3f}">')
            if r.status == FAIL:
                text = f"{r.rule}: {r.message}\nexpected: {r.expected!r}\nobserved: {r.observed!r}\nrerun: {r.rerun}"
                lines.append(f'      <failure message="{escape(r.rule or "", {chr(34): "&quot;"})}">{escape(text)}</failure>')
            elif r.status == XPASS:
                lines.append(f'      <failure message="XPASS">{escape(r.reason)}</failure>')
            elif r.status == ERROR:
                lines.append(f'      <error message="ERROR">{escape(r.message + chr(10) + "rerun: " + r.rerun)}</error>')
            elif r.status in (SKIP, XFAIL):
                lines.append(f'      <skipped message="{r.status}: {escape(r.reason, {chr(34): "&quot;"})}"/>')
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
