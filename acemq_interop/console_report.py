"""What a person reads at the end of a run: the matrices, the failures, the totals."""
from __future__ import annotations

import sys
from collections import defaultdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .cells import ERROR, FAIL, PASS, SKIP, XFAIL, XPASS, CellResult
from .runner import RunReport

MAX_PROBLEMS_SHOWN = 25
STYLE = {PASS: "green", FAIL: "bold red", ERROR: "bold magenta", SKIP: "dim", XFAIL: "yellow", XPASS: "bold red"}


def _summary_text(results: list[CellResult]) -> str:
    """`7/7` when all pass; otherwise the pass count and the non-pass statuses."""
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        counts[r.status] += 1
    text = f"{counts[PASS]}/{len(results)}"
    extra = [f"{counts[s]} {s}" for s in (FAIL, ERROR, XPASS, XFAIL, SKIP) if counts[s]]
    return text + (" " + " ".join(extra) if extra else "")


def _style(results: list[CellResult]) -> str:
    statuses = {r.status for r in results}
    for status in (XPASS, ERROR, FAIL, XFAIL, SKIP):
        if status in statuses:
            return STYLE[status]
    return STYLE[PASS]


def pairs_matrix(report: RunReport) -> Table | None:
    """Requester (rows) x responder (columns): scenarios passed per pair."""
    by_pair: dict[tuple[str, str], list[CellResult]] = defaultdict(list)
    for r in report.results:
        if r.cell.scenario.matrix == "pairs":
            roles = r.cell.roles
            by_pair[(roles["requester"].label, roles["responder"].label)].append(r)
    if not by_pair:
        return None
    labels = [s.label for s in report.specs]
    table = Table(title="Compatibility matrix: requester (row) x responder (column), scenarios passed", show_lines=False)
    table.add_column(escape("requester \\ responder"), style="bold")
    for label in labels:
        table.add_column(label, justify="center")
    for row in labels:
        cells = []
        for col in labels:
            results = by_pair.get((row, col), [])
            cells.append(f"[{_style(results)}]{_summary_text(results)}[/]" if results else "-")
        table.add_row(row, *cells)
    return table


def conformance_table(report: RunReport) -> Table:
    """Per peer: its cells against the probe (each role), in pairs, and in gathers."""
    columns = [("requesters", "as requester vs probe"), ("responders", "as responder vs probe"),
               ("pairs", "in pairs (either role)"), ("mixed", "mixed gathers"), ("other", "other")]
    by_peer: dict[str, dict[str, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for r in report.results:
        for spec in {s.label for s in r.cell.specs()}:
            by_peer[spec][r.cell.scenario.matrix].append(r)
    used = [c for c in columns if any(by_peer[s.label].get(c[0]) for s in report.specs)]
    table = Table(title="Per-peer conformance")
    table.add_column("peer", style="bold")
    for _, title in used:
        table.add_column(title, justify="center")
    for spec in report.specs:
        row = [spec.label]
        for key, _ in used:
            results = by_peer[spec.label].get(key, [])
            row.append(f"[{_style(results)}]{_summary_text(results)}[/]" if results else "-")
        table.add_row(*row)
    return table


def peer_lines(report: RunReport) -> list[str]:
    lines = []
    for name, status in sorted(report.peers.items()):
        hello = status.hello
        if hello:
            build = f", built in {status.build_s:.1f}s" if status.build_s else ""
            lines.append(f"{name}: {hello.get('binding')} on {hello.get('client')} ({status.language}){build}, ready in {status.startup_s:.2f}s")
        else:
            lines.append(f"{name}: unavailable: {(status.unavailable or '').splitlines()[0]}")
    return lines


def print_report(report: RunReport, console: Console | None = None) -> None:
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    for line in peer_lines(report):
        console.print(escape(line))
    matrix = pairs_matrix(report)
    if matrix is not None:
        console.print(matrix)
    console.print(conformance_table(report))
    problems = [r for r in report.results if r.status in (FAIL, ERROR, XPASS)]
    if problems:
        console.print(f"\n[bold]{len(problems)} cell(s) need attention:[/]")
    for r in problems[:MAX_PROBLEMS_SHOWN]:
        console.print(f"[{STYLE[r.status]}]{r.status}[/] {escape(r.cell.id)}")
        if r.status == FAIL:
            console.print(escape(f"    broke {r.rule}: {r.message}"))
            console.print(escape(f"    expected: {r.expected!r}"))
            console.print(escape(f"    observed: {str(r.observed)[:400]}"))
        else:
            for line in (r.message or r.reason).splitlines()[:8]:
                console.print(escape(f"    {line}"))
        console.print(escape(f"    rerun: {r.rerun}"), soft_wrap=True)
    if len(problems) > MAX_PROBLEMS_SHOWN:
        console.print(f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more: every one is in report.html and results.json, with its rerun line")
    xfails = [r for r in report.results if r.status == XFAIL]
    if xfails:
        console.print(f"\n{len(xfails)} known failure(s) (XFAIL), each with its reason in the HTML report and results.json")
    counts = ", ".join(f"{report.count(s)} {s}" for s in (PASS, FAIL, ERROR, SKIP, XFAIL, XPASS) if report.count(s))
    console.print(f"\n{len(report.results)} cells: {counts}. Took {report.duration_s:.1f}s on {report.broker}.")
