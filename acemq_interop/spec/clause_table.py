"""The clause table: every clause of the catalogue, and the scenarios asserting it or why none can.

`acemq-interop list --rules` prints it (`--json` for machines); a unit test holds every
clause to at least one asserting scenario or a written reason (`unobservable`).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Iterable

from .catalogue import Catalogue
from .scenarios import Scenario


@dataclass(frozen=True)
class ClauseRow:
    rule: str
    clause: str
    text: str
    asserted_by: tuple[str, ...]  # scenario ids whose checks name the clause, in id order
    unobservable: str | None

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "clause": self.clause, "text": self.text, "asserted_by": list(self.asserted_by),
                "unobservable": self.unobservable}


@dataclass(frozen=True)
class Totals:
    clauses: int
    asserted: int  # asserted by at least one scenario
    unobservable: int  # carrying a reason instead
    neither: tuple[str, ...]  # clause ids with neither: what the unit test refuses


def clause_rows(cat: Catalogue, scenarios: Iterable[Scenario]) -> list[ClauseRow]:
    """One row per clause, in the catalogue's order."""
    by_clause: dict[str, list[str]] = {}
    for scenario in sorted(scenarios, key=lambda s: s.id):
        for clause in scenario.clauses:
            by_clause.setdefault(clause, []).append(scenario.id)
    return [ClauseRow(rule.id, c.id, c.text, tuple(by_clause.get(c.id, ())), c.unobservable)
            for rule in cat.rules.values() for c in rule.clauses]


def totals(rows: list[ClauseRow]) -> Totals:
    return Totals(len(rows), sum(1 for r in rows if r.asserted_by), sum(1 for r in rows if r.unobservable),
                  tuple(r.clause for r in rows if not r.asserted_by and not r.unobservable))


def as_text(rows: list[ClauseRow], width: int = 100) -> str:
    """The table for a terminal: clause, its text, then what asserts it (or why nothing can)."""
    lines = []
    rule = None
    for row in rows:
        if row.rule != rule:
            rule = row.rule
            lines.append(f"{row.rule}")
        lines += textwrap.wrap(row.text, width, initial_indent=f"  {row.clause:<8} ", subsequent_indent=" " * 11)
        if row.asserted_by:
            lines += textwrap.wrap(", ".join(row.asserted_by), width, initial_indent=" " * 11 + "asserted by: ", break_on_hyphens=False,
                                   subsequent_indent=" " * 24)
        if row.unobservable:
            lines += textwrap.wrap(row.unobservable, width, initial_indent=" " * 11 + "unobservable: ",
                                   subsequent_indent=" " * 25)
        if not row.asserted_by and not row.unobservable:
            lines.append(" " * 11 + "NOT ASSERTED: no scenario checks it and it carries no reason")
    t = totals(rows)
    lines.append(f"\n{t.clauses} clauses: {t.asserted} asserted by a scenario, {t.unobservable} unobservable on the wire"
                 + (f", {len(t.neither)} with neither ({', '.join(t.neither)})" if t.neither else ""))
    return "\n".join(lines)
