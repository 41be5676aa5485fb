"""How every view names a failure, a peer's coverage and a cell: the console, Markdown, HTML
and JUnit views all say these the same way."""
from __future__ import annotations

import json
import re

from ..results.model import COUNT_ORDER, CellResult, Failure, RunResult, mutant_coverage

MAX_TODO_SHOWN = 15  # clauses per peer: a peer that broke everything still fits a screen
EVIDENCE_CHARS = 80  # expected/observed in a to-do line: enough to see the difference
LEVEL_ORDER = ("request/reply core", "request/reply full", "scatter-gather")


def mutants_text(hello: dict) -> str:
    """A peer's mutant coverage: the suite's own peers offer every catalogue mutant their
    client can have (a mutant marked only_where is one some clients cannot)."""
    from ..spec.catalogue import mutants

    catalogue = mutants()
    cov = hello.get("mutants_offered") or mutant_coverage(hello, catalogue)
    if not cov["offered"]:
        return "mutants: none (certified without them)"
    partial = [m for m in cov.get("missing", []) if m in catalogue and catalogue[m].only_where]
    return f"mutants {cov['offered']}/{cov['of']}" + (f" ({len(partial)} its client cannot have)" if partial else "")


def cells_line(report: RunResult) -> str:
    """`750 cells: 750 PASS` (the conformance cells), and the foreign-interop cells apart:
    their FAILs are the matrix's findings, not a binding's."""
    counts = ", ".join(f"{report.count(s)} {s}" for s in COUNT_ORDER if report.count(s))
    shown = len(report.results) - len(report.summary.foreign_cells)
    foreign = f"{len(report.summary.foreign_cells)} foreign-interop cells (their matrix above)"
    if report.summary.foreign_cells and not shown:
        return foreign
    return f"{shown} cells: {counts or 'none'}" + (f"; {foreign}" if report.summary.foreign_cells else "")


def fold_errors(errors: list[CellResult]) -> list[tuple[str, list[CellResult]]]:
    """ERROR cells grouped by the first line of their message, largest group first."""
    groups: dict[str, list[CellResult]] = {}
    for r in errors:
        cause = (r.message or "ERROR").splitlines()[0][:300]
        groups.setdefault(cause, []).append(r)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def short_value(value: object, limit: int = EVIDENCE_CHARS) -> str:
    """A value as JSON on one line, cut to `limit` characters (with an ellipsis)."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def charged_to(failure: Failure, cell: CellResult | None = None) -> str:
    """The peer a failure is charged to: `go`; `one of a, b` when several peers play its role
    (or, for a result from before sides, the cell's peers); `unknown` when none is known."""
    if failure.peer:
        return failure.peer
    suspects = list(failure.suspects) or (cell.peer_labels if cell else [])
    return f"one of {', '.join(suspects)}" if suspects else "unknown"


def failure_who(failure: Failure, cell: CellResult | None = None) -> str:
    """Whose side broke it, as a FAIL line says it: `requester go`, `responder: one of a, b`."""
    who = charged_to(failure, cell)
    return f"{failure.role or failure.side}{' ' if failure.peer else ': '}{who}"


def others_text(r: CellResult) -> str:
    """`+2 more: RR-7.2, RR-4.3` for the failures after the first (a clause broken by two
    checks is named once, `x2`), and the checks left unevaluated; '' when there are none."""
    parts = []
    others = r.failures[1:]
    if others:
        counted: dict[str, int] = {}
        for f in others:
            counted[f.clause] = counted.get(f.clause, 0) + 1
        named = ", ".join(c + (f" x{n}" if n > 1 else "") for c, n in counted.items())
        parts.append(f"+{len(others)} more: {named}")
    if r.not_evaluated:
        parts.append(f"{len(r.not_evaluated)} check(s) not evaluated")
    return "; ".join(parts)


def shared_text(failure: Failure) -> str:
    """` (shared: could be any of a, b)` for a to-do item no one peer is charged with, else ''."""
    return f" (shared: could be any of {', '.join(failure.suspects)})" if failure.peer is None and failure.suspects else ""


def suspects_of(r: CellResult) -> list[str]:
    """The peers a FAIL's shared failures could be charged to (their suspects, else its peers)."""
    named = [label for f in r.failures if f.peer is None for label in f.suspects]
    return list(dict.fromkeys(named)) or r.peer_labels


def shared_clauses(r: CellResult) -> list[str]:
    """The clauses a cell broke that no evidence pins on one peer (a shared role's): listed
    once as shared, on no member's to-do list."""
    return list(dict.fromkeys(f.clause for f in r.failures if f.peer is None))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def cell_anchor(cell_id: str) -> str:
    """The fragment of a cell's row in report.html (for links from elsewhere, the repeat report's)."""
    return "cell-" + slug(cell_id)


def containment_lines(meta: dict) -> list[str]:
    """What the summary says of the processes the run's peers left: only what needs saying
    (the harness could not adopt orphans here, or a process it could not end)."""
    record = meta.get("containment") or {}
    lines = []
    if record.get("problem"):
        lines.append(f"Containment: the harness could not adopt its peers' orphans here ({record['problem']}); "
                     "a process a peer started in a session of its own may have outlived the run.")
    if record.get("left"):
        lines.append(f"Containment: {len(record['left'])} process(es) the run could not end: {'; '.join(record['left'])}")
    return lines
