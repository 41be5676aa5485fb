"""The broker axis of a run: the same cells on each broker, side by side.

Kept apart from the result model on purpose (that model is being rewritten): the CLI runs
the runner once per broker, and this module tags and writes what those runs produced.

- results.json: `brokers` (each broker's facts: label, product, version, Erlang version,
  where it came from) and every cell with a `broker` field (the broker's label); the
  summary adds up every broker's cells. One broker gives the same file with a one-item
  list.
- junit.xml: one file; with several brokers each testsuite's name starts with the label.
- report.html: the first broker's; with several, also report-LABEL.html for each.
- console: each broker's matrices under a heading naming it, then one line per broker.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .broker import BrokerFacts
from .runner import RunReport


@dataclass
class BrokerRun:
    facts: BrokerFacts
    report: RunReport


def write_outputs(runs: list[BrokerRun], out: Path) -> list[Path]:
    from .html_report import write_html
    from .results_files import write_json, write_junit

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "junit.xml", out / "report.html"]
    merged: dict | None = None
    suites: list[ET.Element] = []
    for run in runs:
        label = run.facts.label
        scratch = out / f".results-{label}.json"
        write_json(run.report, scratch)
        data = json.loads(scratch.read_text(encoding="utf-8"))
        scratch.unlink()
        for cell in data.get("cells", []):
            cell["broker"] = label
        if merged is None:
            merged = {key: value for key, value in data.items()}
            merged["brokers"] = []
            merged["cells"] = []
            merged["summary"] = {k: 0 for k in data.get("summary", {})}
            merged["duration_s"] = 0.0
        merged["brokers"].append({**run.facts.as_dict(), "duration_s": data.get("duration_s"), "summary": data.get("summary")})
        merged["cells"].extend(data.get("cells", []))
        for status, count in (data.get("summary") or {}).items():
            merged["summary"][status] = merged["summary"].get(status, 0) + count
        merged["duration_s"] = round(merged["duration_s"] + (data.get("duration_s") or 0.0), 1)
        scratch_xml = out / f".junit-{label}.xml"
        write_junit(run.report, scratch_xml)
        root = ET.parse(scratch_xml).getroot()
        scratch_xml.unlink()
        for suite in root.findall("testsuite"):
            if len(runs) > 1:
                suite.set("name", f"{label}: {suite.get('name')}")
                for case in suite.findall("testcase"):
                    case.set("classname", f"{label}.{case.get('classname')}")
            suites.append(suite)
        if len(runs) > 1:
            write_html(run.report, out / f"report-{label}.html")
            written.append(out / f"report-{label}.html")
    assert merged is not None
    merged["broker"] = ", ".join(r.facts.label for r in runs)
    (out / "results.json").write_text(json.dumps(merged, indent=1, default=str), encoding="utf-8")
    total = ET.Element("testsuites", name="acemq-interop", time=f"{sum(r.report.duration_s for r in runs):.1f}")
    total.extend(suites)
    ET.ElementTree(total).write(out / "junit.xml", encoding="UTF-8", xml_declaration=True)
    write_html(runs[0].report, out / "report.html")
    return written


def print_outputs(runs: list[BrokerRun]) -> None:
    from .console_report import print_report

    for run in runs:
        if len(runs) > 1:
            print(f"\n=== Broker {run.facts.label} (Erlang {run.facts.erlang_version}) from {run.facts.source} ===")
        print_report(run.report)
    if len(runs) > 1:
        print("\nBroker axis:")
        for run in runs:
            report = run.report
            bad = sum(1 for r in report.results if r.status not in ("PASS", "SKIP", "XFAIL"))
            passed = sum(1 for r in report.results if r.status == "PASS")
            print(f"  {run.facts.label:<18} Erlang {str(run.facts.erlang_version):<8} {passed}/{len(report.results)} PASS, "
                  f"{bad} bad, {report.duration_s:.1f}s  ({run.facts.source})")
