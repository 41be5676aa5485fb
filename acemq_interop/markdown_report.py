"""out/summary.md: a GitHub-flavoured summary of a run (a CI job's step summary, a PR comment).

The pair matrix, the per-peer conformance table, and every non-PASS cell with its rule
(or reason) and its rerun line. Renders a `model.RunResult`; nothing is regrouped here.
"""
from __future__ import annotations

from pathlib import Path

from .console_report import mutants_text
from .model import COUNT_ORDER, Counts, RunResult, Status


def _md(text: str) -> str:
    """Table-cell safe text."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _cell(counts: Counts | None) -> str:
    if counts is None or not counts.total:
        return "-"
    mark = "" if counts.worst in (None, Status.PASS) else (" ⚠️" if counts.worst in (Status.SKIP, Status.XFAIL) else " ❌")
    return counts.text + mark


def render_markdown(report: RunResult) -> str:
    summary = report.summary
    counts = ", ".join(f"{report.count(s)} {s}" for s in COUNT_ORDER if report.count(s))
    lines = ["# acemq-interop", "",
             f"{len(report.results)} cells: {counts}. Took {report.duration_s:.1f}s on {report.broker} "
             f"({report.started_at}).", ""]
    if report.meta.get("aborted"):
        lines += [f"**The run was cut short: {_md(report.meta['aborted'])}.** The cells that ran keep their results; "
                  "the rest are ERROR (not run).", ""]
    described = [b.description for b in report.brokers if b.description != b.label]
    if described:
        lines += [f"Broker: {', '.join(described)}", ""]
    for matrix in summary.pair_matrices:
        where = f" on {matrix.broker}" if len(report.brokers) > 1 else ""
        lines += [f"## Compatibility matrix{where}", "", "requester (row) x responder (column), scenarios passed", ""]
        lines.append("| requester \\ responder | " + " | ".join(_md(l) for l in matrix.labels) + " |")
        lines.append("| --- |" + " :-: |" * len(matrix.labels))
        for row in matrix.labels:
            lines.append(f"| **{_md(row)}** | " + " | ".join(_cell(matrix.cells.get((row, col))) for col in matrix.labels) + " |")
        lines.append("")
    lines += ["## Peers", "", "| peer | binding | client library | protocol | mutants offered |", "| --- | --- | --- | :-: | :-: |"]
    for name, status in sorted(report.peers.items()):
        hello = status.hello or {}
        if not hello:
            lines.append(f"| **{_md(name)}** | unavailable: {_md((status.unavailable or '').splitlines()[0] if status.unavailable else '')} | | | |")
            continue
        lines.append(f"| **{_md(name)}** | {_md(hello.get('binding', ''))} | {_md(hello.get('client', ''))} | "
                     f"{hello.get('protocol', '')} | {_md(mutants_text(hello))} |")
    lines.append("")
    lines += ["## Per-peer conformance", ""]
    lines.append("| peer | " + " | ".join(title for _, title in summary.peer_columns) + " |")
    lines.append("| --- |" + " :-: |" * len(summary.peer_columns))
    for row in summary.peer_rows:
        lines.append(f"| **{_md(row.label)}** | " + " | ".join(_cell(row.columns.get(key)) for key, _ in summary.peer_columns) + " |")
    lines.append("")
    non_pass = report.cells(summary.non_pass)
    if non_pass:
        lines += [f"## Cells not passing ({len(non_pass)})", ""]
        lines += ["| status | cell | rule | what | rerun |", "| --- | --- | --- | --- | --- |"]
        for r in non_pass:
            what = r.message if r.status in (Status.FAIL, Status.ERROR) else r.reason
            what = (what or "").splitlines()[0][:300] if what else ""
            rule = r.rule or ", ".join(r.rules)
            lines.append(f"| {r.status} | `{_md(r.id)}` | {_md(rule)} | {_md(what)} | `{_md(r.rerun)}` |")
        lines.append("")
    else:
        lines += ["Every cell passed.", ""]
    return "\n".join(lines)


def write_markdown(report: RunResult, path: Path) -> None:
    path.write_text(render_markdown(report), encoding="utf-8")
