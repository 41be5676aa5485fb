"""The clause table: every clause of the catalogue, and the scenarios asserting it or why none can.

`acemq-interop list --rules` prints it (`--json` for machines); a unit test holds every
clause to at least one asserting scenario or a written reason (`unobservable`).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Iterable

from .catalogue import Catalogue, PathEntry
from .scenarios import Scenario


@dataclass(frozen=True)
class ClauseRow:
    rule: str
    clause: str
    text: str
    asserted_by: tuple[str, ...]  # scenario ids whose checks name the clause, in id order
    unobservable: str | None
    # The path table (catalogue `path_table:`): (path, scenarios checking the clause on it,
    # the reason none can where none does), in the catalogue's order.
    paths: tuple[PathEntry, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "clause": self.clause, "text": self.text, "asserted_by": list(self.asserted_by),
                "unobservable": self.unobservable,
                "paths": [{"path": p.path, "checked_by": list(p.checked_by), "unchecked": p.unchecked} for p in self.paths]}


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
    return [ClauseRow(rule.id, c.id, c.text, tuple(by_clause.get(c.id, ())), c.unobservable, cat.path_table.get(c.id, ()))
            for rule in cat.rules.values() for c in rule.clauses]


# A gather path says which call and whether it had a count: (mode, count given).
GATHER_PATHS = {"gather_multi_count": ("multi", True), "gather_multi_no_count": ("multi", False),
                "gather_publish_count": ("publish", True), "gather_publish_no_count": ("publish", False)}


def _gathers(scenario: Scenario) -> set[tuple[str, bool]]:
    return {(str(step.args.get("mode")), "expected_reply_count" in step.args)
            for step in scenario.steps if step.kind == "gather" and isinstance(step.args, dict)}


def path_problems(cat: Catalogue, scenarios: Iterable[Scenario]) -> list[str]:
    """What makes the path table untrue: a (clause, path) with neither a scenario nor a reason,
    a scenario named that does not exist or does not assert the clause, a gather path named on a
    scenario with no gather of that mode and count. Empty when the table holds."""
    by_id = {s.id: s for s in scenarios}
    problems = []
    for clause in cat.clauses.values():
        entries = cat.path_table.get(clause.id, ())
        if not entries and not clause.unobservable:
            problems.append(f"{clause.id}: no paths (give the paths the spec makes it govern)")
        for entry in entries:
            if not entry.checked_by and not entry.unchecked:
                problems.append(f"{clause.id} on {entry.path}: no scenario checks it and the catalogue gives no reason")
            for sid in entry.checked_by:
                scenario = by_id.get(sid)
                if scenario is None:
                    problems.append(f"{clause.id} on {entry.path}: scenario {sid} does not exist")
                elif clause.id not in scenario.clauses:
                    problems.append(f"{clause.id} on {entry.path}: scenario {sid} does not assert {clause.id} "
                                    f"(it asserts {', '.join(scenario.clauses)})")
                elif entry.path in GATHER_PATHS and GATHER_PATHS[entry.path] not in _gathers(scenario):
                    mode, counted = GATHER_PATHS[entry.path]
                    problems.append(f"{clause.id} on {entry.path}: scenario {sid} has no {mode} gather "
                                    f"{'with' if counted else 'without'} an expected_reply_count")
    return problems


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
        for entry in row.paths:
            head = " " * 11 + f"on {entry.path}: "
            said = ", ".join(entry.checked_by) if entry.checked_by else f"unchecked: {entry.unchecked}"
            lines += textwrap.wrap(said, width, initial_indent=head, subsequent_indent=" " * (len(head) + 2),
                                   break_on_hyphens=False)
    t = totals(rows)
    lines.append(f"\n{t.clauses} clauses: {t.asserted} asserted by a scenario, {t.unobservable} unobservable on the wire"
                 + (f", {len(t.neither)} with neither ({', '.join(t.neither)})" if t.neither else ""))
    pairs = [(r.clause, e) for r in rows for e in r.paths]
    unchecked = [f"{c} on {e.path}" for c, e in pairs if not e.checked_by]
    lines.append(f"{len(pairs)} (clause, path) pairs: {len(pairs) - len(unchecked)} checked by a scenario, "
                 f"{len(unchecked)} unchecked with a reason" + (f" ({', '.join(unchecked)})" if unchecked else ""))
    return "\n".join(lines)
