"""junit.xml: one testsuite per scenario, one testcase per cell (for CI dashboards, written with
the junit-xml library): a FAIL's first clause is the failure type, every failure is in its text."""
from __future__ import annotations

import json
import re
from pathlib import Path

from junit_xml import TestCase, TestSuite, to_xml_report_string

from ..results.model import CellResult, RunResult, Status
from ..spec.catalogue import catalogue
from .text import charged_to, others_text

# XML 1.0 cannot carry these at all, escaped or not: a peer's stderr or message with a
# control character must not make the whole file unreadable.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _case(report: RunResult, r: CellResult, scenario_file: str | None) -> TestCase:
    case = TestCase(name=r.id, classname=r.scenario, elapsed_sec=round(r.duration_s, 3), file=scenario_file,
                    status=r.status.value)
    stderr = "\n".join(f"--- {peer} stderr (tail) ---\n{text}" for peer, text in r.stderr.items() if text.strip())
    if stderr:
        case.stderr = _xml_safe(stderr)
    if r.status == Status.FAIL:
        named = catalogue().describe(r.rule or "") + (f", seen as {r.seen_as}" if r.seen_as else "")
        check = (r.message or "").splitlines()[0] if r.message else ""
        others = others_text(r)
        # A dashboard shows `message` and `type` on one line: the first failure, and how many
        # more; the text under it lists every one, so no clause broken hides behind the first.
        case.add_failure_info(message=_xml_safe(f"{named}: {check}" + (f" ({others})" if others else "")),
                              output=_xml_safe(_failures_text(r)), failure_type=r.rule or "FAIL")
    elif r.status == Status.XPASS:
        case.add_failure_info(message=_xml_safe(f"XPASS: {r.reason}"), output=_xml_safe(f"{r.reason}\nrerun: {r.rerun}"),
                              failure_type="XPASS")
    elif r.status == Status.ERROR:
        first = (r.message or "").splitlines()[0] if r.message else "ERROR"
        case.add_error_info(message=_xml_safe(first), output=_xml_safe(f"{r.message}\nrerun: {r.rerun}"), error_type="ERROR")
    elif r.status in (Status.SKIP, Status.XFAIL):
        case.add_skipped_info(message=_xml_safe(f"{r.status.value}: {r.reason}"))
    return case


def _failures_text(r: CellResult) -> str:
    """Every failure of a FAIL cell, numbered: the clause and its text, whose side and which
    peer broke it, the check, expected and observed; then the checks not evaluated, the rerun."""
    cat = catalogue()
    blocks = []
    for n, f in enumerate(r.failures or [], 1):
        clause = cat.clauses.get(f.clause)
        blocks.append("\n".join([
            f"{n}. {cat.describe(f.clause)}" + (f", seen as {f.seen_as}" if f.seen_as else "") + f": {f.message}",
            *([f"   clause: {clause.text}"] if clause else []),
            f"   side: {f.side}" + (f" (the {f.role})" if f.role and f.role != f.side else "")
            + f", peer: {charged_to(f, r)}",
            *([f"   check: {f.check}"] if f.check else []),
            f"   expected: {json.dumps(f.expected, default=str)}",
            f"   observed: {json.dumps(f.observed, default=str)}"]))
    if not blocks:  # a FAIL that names no clause at all: what it said
        blocks.append(f"{r.message}\nexpected: {json.dumps(r.expected, default=str)}\n"
                      f"observed: {json.dumps(r.observed, default=str)}")
    if r.not_evaluated:
        blocks.append("not evaluated:\n" + "\n".join(f"   {x.clause}: {x.check} ({x.needs})" for x in r.not_evaluated))
    return "\n".join(blocks) + f"\nrerun: {r.rerun}"


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
