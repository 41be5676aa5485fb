"""What a person reads at the end of a run: the matrices, each peer's to-do list, the
failures, the totals.

Renders a `model.RunResult`; every grouping comes from its summary, every failure is named
as the other views name it (reports/text.py).
"""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..results.model import COUNT_ORDER, CellResult, Counts, PairMatrix, RunResult, Status, TodoItem
from .text import (LEVEL_ORDER, cells_line, containment_lines, MAX_TODO_SHOWN, failure_who, fold_errors, mutants_text, others_text,
                   shared_clauses, shared_text, short_value, suspects_of)

MAX_PROBLEMS_SHOWN = 25
MAX_UNATTRIBUTED_SHOWN = 10
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




def levels_table(report: RunResult) -> Table | None:
    """Per peer and conformance level: a request/reply-only binding, or one without counters,
    is still seen conformant at the levels it has (a FAIL counts only where charged)."""
    levels = report.summary.levels
    used = [lv for lv in LEVEL_ORDER if any(lv in by for by in levels.values())]
    if not used:
        return None
    table = Table(title="Per-peer conformance by level")
    table.add_column("peer", style="bold")
    for level in used:
        table.add_column(level, justify="center")
    for label in report.labels:
        if label in levels:
            table.add_row(label, *[_shown(levels[label].get(level)) for level in used])
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


def todo_lines(report: RunResult) -> list[str]:
    """Each peer's to-do list, one line per clause it broke: the clause and its rule, in how
    many cells, and the clearest cell with its evidence; bounded per peer."""
    from ..spec.catalogue import catalogue

    cat = catalogue()
    lines: list[str] = []
    for label, items in report.summary.todo.items():
        if not items:
            continue
        lines.append(f"{label}: {len(items)} clause(s) to fix")
        lines += [f"  {_todo_line(item, cat.describe(item.clause))}" for item in items[:MAX_TODO_SHOWN]]
        if len(items) > MAX_TODO_SHOWN:
            lines.append(f"  ... and {len(items) - MAX_TODO_SHOWN} more clause(s): every one is in summary.md and report.html")
    unattributed = report.cells(report.summary.unattributed)
    if unattributed:
        lines.append(f"shared, on no peer's list (nothing on the wire names one of them): {len(unattributed)} FAIL cell(s)")
        lines += [f"  {r.id}: {', '.join(shared_clauses(r))}; could be any of: {', '.join(suspects_of(r))}"
                  for r in unattributed[:MAX_UNATTRIBUTED_SHOWN]]
        if len(unattributed) > MAX_UNATTRIBUTED_SHOWN:
            lines.append(f"  ... and {len(unattributed) - MAX_UNATTRIBUTED_SHOWN} more")
    return lines


def _todo_line(item: TodoItem, described: str) -> str:
    f = item.failure
    return (f"{described}: {len(item.cells)} cell(s){shared_text(f)}; clearest {item.clearest}: "
            f"expected {short_value(f.expected)}, observed {short_value(f.observed)}")


def foreign_tables(report: RunResult) -> list[tuple[Table, list[str]]]:
    """The foreign-interop matrix: a table per stack and direction, and its notes."""
    from . import foreign_view

    out = []
    for t in foreign_view.tables(report):
        table = Table(title=f"Foreign interop: {t.heading}", title_justify="left")
        table.add_column("acemq binding")
        for title in t.titles:
            table.add_column(title)
        for row in t.rows:
            table.add_row(row.binding, *(row.cases[c].short for c in t.cases))
        lines = [foreign_view.note_line(n, len(t.rows)) for n in foreign_view.notes(t)]
        out.append((table, lines))
    return out


def print_report(report: RunResult, console: Console | None = None) -> None:
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    for line in peer_lines(report):
        console.print(escape(line))
    for matrix in report.summary.pair_matrices:
        console.print(pairs_matrix(report, matrix))
    if len(report.results) > len(report.summary.foreign_cells):  # a --foreign run has no conformance cell
        console.print(conformance_table(report))
    by_level = levels_table(report)
    if by_level is not None:
        console.print(by_level)
    for table, lines in foreign_tables(report):
        console.print(table)
        for line in lines:
            console.print(escape(f"  {line}"), soft_wrap=True)
    # The to-do lists come right after the tables and before the cells: the tables say where
    # it broke at a glance, the to-do list says what to fix (each clause once, however many
    # cells it broke), and the cells below are its evidence, so it reads from the verdict to
    # the detail. Before the tables, it would scroll away behind them.
    todo = todo_lines(report)
    if todo:
        console.print("\n[bold]To do, per peer[/] (each clause once, with the clearest cell's evidence):")
        for line in todo:
            console.print(escape(line), soft_wrap=True)
    problems = report.cells(report.summary.problems)
    if problems:
        console.print(f"\n[bold]{len(problems)} cell(s) need attention:[/]")
    # Conformance failures first (FAIL, then XPASS): they are about a binding. ERRORs are
    # about the run (a crash, a lost broker) and are folded by their cause, so 25 cells of
    # one dead peer are one line and cannot push a FAIL out of sight.
    failures = [r for r in problems if r.status == Status.FAIL] + [r for r in problems if r.status == Status.XPASS]
    for r in failures[:MAX_PROBLEMS_SHOWN]:
        console.print(f"[{STYLE[r.status]}]{r.status}[/] {escape(r.id)}")
        if r.status == Status.FAIL:
            for line in fail_lines(r):
                console.print(escape(f"    {line}"))
        else:
            for line in (r.message or r.reason).splitlines()[:8]:
                console.print(escape(f"    {line}"))
        if r.transcript_gap:
            console.print(escape(f"    ({r.transcript_gap}: the wire judged only what it shows)"))
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
    console.print(f"\n{cells_line(report)}. Took {report.duration_s:.1f}s on {report.broker}.")
    if report.meta.get("aborted"):
        console.print(escape(f"The run was cut short: {report.meta['aborted']}."), style="bold magenta")
    for line in containment_lines(report.meta):
        console.print(escape(line), style="bold magenta")


def fail_lines(r: CellResult) -> list[str]:
    """A FAIL cell as the console shows it: its first failure with whose side broke it and
    how many others there are (every one is in summary.md, report.html and results.json)."""
    from ..spec.catalogue import catalogue

    first = r.failures[0] if r.failures else None
    named = catalogue().describe(r.rule or "") + (f", seen as {r.seen_as}" if r.seen_as else "")
    who = f" [{failure_who(first, r)}]" if first else ""
    others = others_text(r)
    return [f"broke {named}{who}: {r.message}" + (f" ({others})" if others else ""),
            f"expected: {json.dumps(r.expected, default=str)[:400]}",
            f"observed: {json.dumps(r.observed, default=str)[:400]}"]
