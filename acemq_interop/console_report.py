"""What a person reads at the end of a run: the matrices, the failures, the totals.

Renders a `model.RunResult`; every grouping comes from its summary.
"""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .model import COUNT_ORDER, CellResult, Counts, PairMatrix, RunResult, Status, mutant_coverage

MAX_PROBLEMS_SHOWN = 25
STYLE = {Status.PASS: "green", Status.FAIL: "bold red", Status.ERROR: "bold magenta", Status.SKIP: "dim",
         Status.XFAIL: "yellow", Status.XPASS: "bold red"}


def _shown(counts: Counts | None) -> str:
    if counts is None or not counts.total:
        return "-"
    return f"[{STYLE[counts.worst or Status.PASS]}]{counts.text}[/]"


def pairs_matrix(report: RunResult, matrix: PairMatrix | None = None) -> Table | None:
    """Requester (rows) x responder (columns): scenarios passed per pair."""
    matrices = report.summary.pair_matrices
    matrix = matrix or (matrices[0] if matrices else None)
    if matrix is None:
        return None
    title = "Compatibility matrix: requester (row) x responder (column), scenarios passed"
    if len(report.brokers) > 1:
        title += f", on {matrix.broker}"
    table = Table(title=title, show_lines=False)
    table.add_column(escape("requester \\ responder"), style="bold")
    for label in matrix.labels:
        table.add_column(label, justify="center")
    for row in matrix.labels:
        table.add_row(row, *[_shown(matrix.cells.get((row, col))) for col in matrix.labels])
    return table


def conformance_table(report: RunResult) -> Table:
    """Per peer: its cells against the probe (each role), in pairs, and in gathers."""
    summary = report.summary
    table = Table(title="Per-peer conformance")
    table.add_column("peer", style="bold")
    for _, title in summary.peer_columns:
        table.add_column(title, justify="center")
    for row in summary.peer_rows:
        table.add_row(row.label, *[_shown(row.columns.get(key)) for key, _ in summary.peer_columns])
    return table


def peer_lines(report: RunResult) -> list[str]:
    lines = []
    for name, status in sorted(report.peers.items()):
        hello = status.hello
        if hello and not status.broken:
            build = f", built in {status.build_s:.1f}s" if status.build_s else ""
            lines.append(f"{name}: {hello.get('binding')} on {hello.get('client')} ({status.language}){build}, "
                         f"ready in {status.startup_s or 0:.2f}s, {mutants_text(hello)}")
        else:
            lines.append(f"{name}: unavailable: {(status.unavailable or '').splitlines()[0]}")
    return lines


def mutants_text(hello: dict) -> str:
    """A peer's mutant coverage: the suite's own peers offer every catalogue mutant their
    client can have (a mutant marked only_where is one some clients cannot)."""
    from .catalogue import mutants

    catalogue = mutants()
    cov = hello.get("mutants_offered") or mutant_coverage(hello, catalogue)
    if not cov["offered"]:
        return "mutants: none (certified without them)"
    partial = [m for m in cov.get("missing", []) if m in catalogue and catalogue[m].only_where]
    return f"mutants {cov['offered']}/{cov['of']}" + (f" ({len(partial)} its client cannot have)" if partial else "")


def fold_errors(errors: list[CellResult]) -> list[tuple[str, list[CellResult]]]:
    """ERROR cells grouped by the first line of their message, largest group first."""
    groups: dict[str, list[CellResult]] = {}
    for r in errors:
        cause = (r.message or "ERROR").splitlines()[0][:300]
        groups.setdefault(cause, []).append(r)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def print_report(report: RunResult, console: Console | None = None) -> None:
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    for line in peer_lines(report):
        console.print(escape(line))
    for matrix in report.summary.pair_matrices:
        console.print(pairs_matrix(report, matrix))
    console.print(conformance_table(report))
    problems = report.cells(report.summary.problems)
    if problems:
        console.print(f"\n[bold]{len(problems)} cell(s) need attention:[/]")
    # Conformance failures first (FAIL, then XPASS): they are about a binding. ERRORs are
    # about the run (a crash, a lost broker) and are folded by their cause, so 25 cells of
    # one dead peer are one line and cannot push a FAIL out of sight.
    failures = [r for r in problems if r.status == Status.FAIL] + [r for r in problems if r.status == Status.XPASS]
    from .catalogue import catalogue

    def broke_text(r: CellResult) -> str:
        """`RR-4.2 (RR-4 How a reply is addressed)`, and the clause it was seen as, if another."""
        return catalogue().describe(r.rule or "") + (f", seen as {r.seen_as}" if r.seen_as else "")

    for r in failures[:MAX_PROBLEMS_SHOWN]:
        console.print(f"[{STYLE[r.status]}]{r.status}[/] {escape(r.id)}")
        if r.status == Status.FAIL:
            console.print(escape(f"    broke {broke_text(r)}: {r.message}"))
            console.print(escape(f"    expected: {json.dumps(r.expected, default=str)[:400]}"))
            console.print(escape(f"    observed: {json.dumps(r.observed, default=str)[:400]}"))
        else:
            for line in (r.message or r.reason).splitlines()[:8]:
                console.print(escape(f"    {line}"))
        console.print(escape(f"    rerun: {r.rerun}"), soft_wrap=True)
    if len(failures) > MAX_PROBLEMS_SHOWN:
        console.print(f"... and {len(failures) - MAX_PROBLEMS_SHOWN} more: every one is in report.html and results.json, with its rerun line")
    for cause, cells in fold_errors([r for r in problems if r.status == Status.ERROR]):
        first = cells[0]
        more = f" and {len(cells) - 1} more cell(s) with the same cause" if len(cells) > 1 else ""
        console.print(f"[{STYLE[Status.ERROR]}]ERROR[/] {escape(first.id)}{escape(more)}")
        console.print(escape(f"    {cause}"))
        console.print(escape(f"    rerun: {first.rerun}"), soft_wrap=True)
    if report.summary.xfails:
        console.print(f"\n{len(report.summary.xfails)} known failure(s) (XFAIL), each with its reason in the HTML report and results.json")
    counts = ", ".join(f"{report.count(s)} {s}" for s in COUNT_ORDER if report.count(s))
    console.print(f"\n{len(report.results)} cells: {counts}. Took {report.duration_s:.1f}s on {report.broker}.")
    if report.meta.get("aborted"):
        console.print(escape(f"The run was cut short: {report.meta['aborted']}."), style="bold magenta")
