"""Across the cells of a run: a failure a scenario can only see through a clause it presumes.

A scenario checks one behaviour, and some of its checks presume the peer keeps a more basic
clause, judged by another scenario (`assumes:`): the probe replies by the request's
message_id (RR-8.1), a responder reads the header address (RR-3.1) before it can be asked
to read one written as bytes (RR-2.2). When the peer under test broke the presumed clause
in another cell of the same run, a failure here is not a second defect but the same one
seen again: it is charged as that clause, seen as the check's own (as `consequence_of:`
does within one cell), citing the cell that proved it. A peer that keeps the presumed
clause is judged on the check's own clause, as before.

Pure: a function from the run's cells to the same cells, some of their failures renamed.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ..spec import catalogue as spec
from .model import CellResult, Failure, Status


def broken_by_peer(results: Iterable[CellResult]) -> dict[tuple[str, str], str]:
    """(peer label, clause) -> the id of a cell proving it: a failure of that clause charged
    to that peer that is not itself a presumption or a consequence (it was seen directly).

    A check's failure after an earlier one of the same peer in the same cell proves nothing:
    it may be that earlier defect seen again (a binding replying through amq.direct never
    reaches its Answered count either, and was taken to have broken RR-16.1, then charged
    RR-16.1 wherever a scenario presumes it). What one message showed on the wire, and a part
    the binding declared it lacks, are proof wherever they stand."""
    proven: dict[tuple[str, str], str] = {}
    for r in results:
        if r.status not in (Status.FAIL, Status.XFAIL):
            continue
        charged: set[str] = set()
        for f in r.failures:
            if f.peer and not f.seen_as and (f.wire or f.direct or f.peer not in charged):
                proven.setdefault((f.peer, f.clause), r.id)
            if f.peer:
                charged.add(f.peer)
    return proven


def apply(results: list[CellResult], assumes: dict[str, tuple[str, ...]]) -> list[CellResult]:
    """The cells with every failure that a presumed clause explains renamed to that clause.

    `assumes`: scenario id -> the clauses its checks presume of the peer they judge.

    A failure renamed here proves nothing further: its peer broke the presumed clause, not its
    own. So the proof is taken again from the renamed cells until it settles (a responder that
    answers nothing is RR-4.1 in `rr-responder-native-only`, and that cell no longer proves an
    RR-3.2 that another scenario presumes)."""
    proven = broken_by_peer(results)
    for _ in range(4):
        renamed = _renamed(results, assumes, proven)
        again = broken_by_peer(renamed)
        if again == proven:
            break
        proven = again
    return _renamed(results, assumes, proven)


def _renamed(results: list[CellResult], assumes: dict[str, tuple[str, ...]],
             proven: dict[tuple[str, str], str]) -> list[CellResult]:
    out: list[CellResult] = []
    for r in results:
        presumed = assumes.get(r.scenario, ())
        if r.status not in (Status.FAIL, Status.XFAIL) or not presumed or not r.failures:
            out.append(r)
            continue
        failures = [_explained(f, presumed, proven, r.id) for f in r.failures]
        if failures == r.failures:
            out.append(r)
            continue
        first = failures[0]
        out.append(replace(r, failures=failures, rule=first.clause, message=first.message, seen_as=first.seen_as,
                           expected=first.expected, observed=first.observed))
    return out


def _explained(f: Failure, presumed: tuple[str, ...], proven: dict[tuple[str, str], str], cell: str) -> Failure:
    # What the wire showed of one message, and a part the binding declared it lacks, are
    # seen directly: never a consequence of something else.
    if f.peer is None or f.seen_as or f.wire or f.direct:
        return f
    for clause in presumed:
        where = proven.get((f.peer, clause))
        if clause != f.clause and where is not None and where != cell:
            obliged = spec.catalogue().clauses.get(clause)
            return replace(f, clause=clause, rule=spec.rule_of(clause), seen_as=f.clause, side=obliged.side if obliged else f.side,
                           message=f"{f.message}; seen through {clause}, which {f.peer} broke in {where}")
    return f
