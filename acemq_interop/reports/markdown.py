"""out/summary.md: a GitHub-flavoured summary of a run (a CI job's step summary, a PR comment).

Each peer's to-do list first (every clause it broke, once, with the clearest cell's
evidence and rerun line), then the pair matrix, the per-peer conformance table, every
non-PASS cell with its rule (or reason) and its rerun line, and every failure of every FAIL
cell. Renders a `model.RunResult`; nothing is regrouped here.
"""
from __future__ import annotations

from pathlib import Path

from .text import LEVEL_ORDER, cells_line, containment_lines, charged_to, mutants_text, others_text, shared_clauses, shared_text, short_value, suspects_of
from ..results.model import COUNT_ORDER, CellResult, Counts, RunResult, Status

# A step summary is read on a PR page: the longest to-do list is cut here, the rest is in
# report.html and results.json.
MAX_TODO_ROWS = 50
VALUE_CHARS = 160


def _md(text: str) -> str:
    """Table-cell safe text."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(value: object) -> str:
    """A value as short JSON in a code span (plain text when it holds a backtick)."""
    text = short_value(value, VALUE_CHARS)
    return _md(text) if "`" in text else f"`{_md(text)}`"


def _cell(counts: Counts | None) -> str:
    if counts is None or not counts.total:
        return "-"
    mark = "" if counts.worst in (None, Status.PASS) else (" ⚠️" if counts.worst in (Status.SKIP, Status.XFAIL) else " ❌")
    return counts.text + mark


def render_markdown(report: RunResult) -> str:
    summary = report.summary
    lines = ["# acemq-interop", "",
             f"{cells_line(report)}. Took {report.duration_s:.1f}s on {report.broker} "
             f"({report.started_at}).", ""]
    if report.meta.get("aborted"):
        lines += [f"**The run was cut short: {_md(report.meta['aborted'])}.** The cells that ran keep their results; "
                  "the rest are ERROR (not run).", ""]
    for line in containment_lines(report.meta):
        lines += [f"**{_md(line)}**", ""]
    described = [b.description for b in report.brokers if b.description != b.label]
    if described:
        lines += [f"Broker: {', '.join(described)}", ""]
    lines += _todo_section(report)
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
    levels = [lv for lv in LEVEL_ORDER if any(lv in by for by in summary.levels.values())]
    if levels:
        lines += ["### By conformance level", "", "| peer | " + " | ".join(levels) + " |", "| --- |" + " :-: |" * len(levels)]
        for label in report.labels:
            if label in summary.levels:
                lines.append(f"| **{_md(label)}** | " + " | ".join(_cell(summary.levels[label].get(lv)) for lv in levels) + " |")
        lines.append("")
    lines += _foreign_section(report)
    from ..spec.catalogue import catalogue

    cat = catalogue()
    broken = [row for row in summary.rules if row.failing or row.seen_as]
    if broken:
        # "Broke it" counts the cells whose FAIL names a clause of the rule; "seen through it"
        # the cells where a check of this rule failed because another rule's clause broke.
        lines += ["## Rules broken", "", "| rule | broke it | seen through it, broken elsewhere |", "| --- | :-: | :-: |"]
        for row in broken:
            lines.append(f"| {_md(row.rule)} {_md(row.title)} | {len(row.failing)} | {len(row.seen_as)} |")
        lines.append("")
    non_pass = report.cells(summary.non_pass)
    if non_pass:
        lines += [f"## Cells not passing ({len(non_pass)})", ""]
        lines += ["| status | cell | rule | what | rerun |", "| --- | --- | --- | --- | --- |"]
        for r in non_pass:
            what = r.message if r.status in (Status.FAIL, Status.ERROR) else r.reason
            what = (what or "").splitlines()[0][:300] if what else ""
            rule = (cat.describe(r.rule) + (f", seen as {r.seen_as}" if r.seen_as else "")) if r.rule else ", ".join(r.rules)
            more = others_text(r) if r.status == Status.FAIL else ""
            rule += f" ({more})" if more else ""
            lines.append(f"| {r.status} | `{_md(r.id)}` | {_md(rule)} | {_md(what)} | `{_md(r.rerun)}` |")
        lines.append("")
        lines += _failures_section([r for r in non_pass if r.status == Status.FAIL and r.failures])
    else:
        lines += ["Every cell passed.", ""]
    return "\n".join(lines)


def _foreign_section(report: RunResult) -> list[str]:
    """The foreign-interop matrix: one table per stack and direction, then why each case that
    does not work does not, once, with a cell of evidence."""
    from . import foreign_view

    tables = foreign_view.tables(report)
    if not tables:
        return []
    lines = ["## Foreign interop", "",
             "Stacks that are not acemq, on their library's defaults, with every acemq binding: "
             "`works`, `lacks` (a part the stack has none of, such as counters), or the clause that "
             "broke and whose side broke it (`foreign`: the stack's; `acemq`: the binding's).", ""]
    for t in tables:
        lines += [f"### {_md(t.heading)}", "", "| acemq binding | " + " | ".join(_md(x) for x in t.titles) + " |",
                  "| --- |" + " :-: |" * len(t.cases)]
        for row in t.rows:
            lines.append(f"| **{_md(row.binding)}** | " + " | ".join(_md(row.cases[c].short) for c in t.cases) + " |")
        lines.append("")
        for note in foreign_view.notes(t):
            evidence = f" (cell `{_md(note.cell)}`)" if note.cell else ""
            lines.append(f"- {_md(foreign_view.note_line(note, len(t.rows)))}{evidence}")
        lines.append("")
    return lines


def _todo_section(report: RunResult) -> list[str]:
    """Each peer's to-do list: a clause per row, its text, in how many cells, and the clearest
    cell with expected against observed and its rerun line; then the FAILs no one peer is
    charged with."""
    from ..spec.catalogue import catalogue

    cat = catalogue()
    summary = report.summary
    todo = {label: items for label, items in summary.todo.items() if items}
    if not todo and not summary.unattributed:
        return []
    lines = ["## To do, per peer", "",
             "Every clause each peer broke, once, however many cells broke it; the clearest cell is the one "
             "that broke the fewest other clauses.", ""]
    for label, items in todo.items():
        lines += [f"### {_md(label)}: {len(items)} clause(s)", "",
                  "| clause | what it says | cells | clearest cell | expected | observed | rerun |",
                  "| --- | --- | :-: | --- | --- | --- | --- |"]
        for item in items[:MAX_TODO_ROWS]:
            clause, f = cat.clauses.get(item.clause), item.failure
            says = f"{cat.title(item.clause)}: {clause.text}" if clause else cat.title(item.clause)
            rerun = report.cell(item.clearest).rerun
            lines.append(f"| **{_md(item.clause)}** | {_md(says)} | {len(item.cells)} | `{_md(item.clearest)}`{_md(shared_text(f))} | "
                         f"{_code(f.expected)} | {_code(f.observed)} | `{_md(rerun)}` |")
        if len(items) > MAX_TODO_ROWS:
            lines.append(f"\n... and {len(items) - MAX_TODO_ROWS} more clause(s): every one is in report.html and results.json.")
        lines.append("")
    unattributed = report.cells(summary.unattributed)
    if unattributed:
        lines += ["### Shared: on no peer's list", "",
                  "Failures of a role several peers play that nothing on the wire pins on one of them.", ""]
        lines += [f"- `{_md(r.id)}`: {_md(', '.join(shared_clauses(r)))}; could be any of: {_md(', '.join(suspects_of(r)))}"
                  for r in unattributed]
        lines.append("")
    return lines


def _failures_section(cells: list[CellResult]) -> list[str]:
    """Every failure of every FAIL cell: the clause, whose side (and which peer) broke it, the
    check that saw it, expected against observed; and the checks it could not make."""
    if not cells:
        return []
    lines = ["## Every failure, cell by cell", ""]
    for r in cells:
        lines += [f"### `{_md(r.id)}`", "", "| clause | side | peer | check | expected | observed |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for f in r.failures:
            lines.append(f"| {_md(f.clause)}{_md(f', seen as {f.seen_as}' if f.seen_as else '')} | {_md(f.side)} | "
                         f"{_md(charged_to(f, r))} | {_md(f.check or f.message)} | {_code(f.expected)} | {_code(f.observed)} |")
        lines.append("")
        # Two trailing spaces: a Markdown line break, one check a line.
        lines += [f"Not evaluated: {_md(n.clause)} {_md(n.check)} ({_md(n.needs)})  " for n in r.not_evaluated]
        lines += [f"rerun: `{_md(r.rerun)}`", ""]
    return lines


def write_markdown(report: RunResult, path: Path) -> None:
    path.write_text(render_markdown(report), encoding="utf-8")
