"""The foreign-interop matrix as every view shows it (console, summary.md, report.html): per
stack, broker and direction one table (acemq binding x case), then each distinct outcome that
is not `works` once, with the bindings it holds for, its reason and its evidence cell."""
from __future__ import annotations

from dataclasses import dataclass

from ..results.foreign import CALLER, ForeignRow
from ..results.model import RunResult
from .text import short_value

_SAYS = {CALLER: "{stack} calls each acemq responder", "responder": "each acemq requester calls {stack}"}


@dataclass(frozen=True)
class ForeignTable:
    stack: str
    broker: str
    direction: str
    heading: str
    cases: tuple[str, ...]  # case ids, in the catalogue's order
    titles: tuple[str, ...]
    rows: tuple[ForeignRow, ...]


@dataclass(frozen=True)
class ForeignNote:
    """One outcome that is not `works`: where it holds, why, and one cell of evidence."""

    table: str  # the heading of its table
    case: str
    short: str
    bindings: tuple[str, ...]
    reason: str
    observed: str
    cell: str | None


def tables(report: RunResult) -> list[ForeignTable]:
    from ..spec.catalogue import catalogue

    cases = catalogue().foreign_cases
    multi = len(report.brokers) > 1
    grouped: dict[tuple[str, str, str], list[ForeignRow]] = {}
    for row in report.summary.foreign_rows:
        grouped.setdefault((row.stack, row.broker, row.direction), []).append(row)
    out = []
    for (stack, broker, direction), rows in grouped.items():
        heading = _SAYS[direction].format(stack=stack) + (f" (on {broker})" if multi else "")
        out.append(ForeignTable(stack, broker, direction, heading, tuple(cases),
                                tuple(c.title for c in cases.values()), tuple(rows)))
    return out


def notes(table: ForeignTable) -> list[ForeignNote]:
    found: dict[tuple[str, str, str], list[ForeignRow]] = {}
    for row in table.rows:
        for case_id in table.cases:
            case = row.cases[case_id]
            if case.state != "works":
                found.setdefault((case_id, case.short, case.reason), []).append(row)
    out = []
    for (case_id, short, reason), rows in found.items():
        first = rows[0].cases[case_id]
        out.append(ForeignNote(table.heading, case_id, short, tuple(r.binding for r in rows), reason,
                               short_value(first.observed) if first.state == "fails" else "", first.cell))
    return out


def note_line(note: ForeignNote, bindings_in_table: int) -> str:
    """`failure: FAIL RR-10.3 (foreign) with every binding: the caller never reads ...`."""
    who = "every binding" if len(note.bindings) == bindings_in_table else ", ".join(note.bindings)
    seen = f" (observed {note.observed})" if note.observed else ""
    why = f": {note.reason}" if note.reason else ""
    return f"{note.case}: {note.short} with {who}{why}{seen}"
