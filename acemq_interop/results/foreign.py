"""The foreign-interop matrix: what a stack that is not acemq gets from, and gives to, each
acemq binding, case by case (the catalogue's `foreign_cases:`), read off the cells a run made.

A row is one foreign stack, one acemq binding, one broker and one direction (`caller`: the
stack calls the binding's responder; `responder`: the binding's requester calls the stack).
A case is `works` (no failure among its checks), `lacks` (its only failures are checks the
stack cannot be held to, a part it has none of: counters, events, dead-lettering), `fails`
(the first failure, root first: its clause, whose side broke it, the value the wire showed,
and why: a known incompatibility of the catalogue, else the clause's title), `error` (a
fault, with its cause) or `skip`. Nothing here reads a ground truth: the reasons come from
the spec's catalogue, so a test can hold the matrix to a ground truth written apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from .model import CellResult, Failure, PeerStatus, Status

CALLER, RESPONDER = "caller", "responder"
DIRECTIONS = (CALLER, RESPONDER)
# The scenario role the foreign stack plays in each direction.
_ROLE = {CALLER: "requester", RESPONDER: "responder"}
# What a failure that only says a part is missing looks like (run/steps.py `_lack_failure`).
_LACKING = ("lacking", "declared lacking")
# How a scenario step's check is named (run/engine.py); the wire's audits name theirs otherwise.
_STEP = "step "
# A caller that sends no message_id has none to report (run/steps.py `unreported`): its call is
# judged by what came back, not by the acemq id it never had.
_UNREPORTED = "(unreported)"
# A check not evaluated for a part a peer lacks (run/steps.py): `declared: the binding of
# requester has no events, ...` or `lacks: ...`.
_LACK_NEEDS = re.compile(r"^(?:declared|lacks): .*?\bhas no (counters|events|dead_lettering)\b")


@dataclass(frozen=True)
class ForeignCase:
    """One case of one row: its state and the evidence (the cell id, one click away)."""

    state: str  # works | lacks | fails | error | skip | absent
    cell: str | None = None
    clause: str | None = None
    side: str | None = None  # foreign | acemq | shared: whose side broke the clause
    peer: str | None = None
    observed: Any = None
    reason: str = ""
    lacks: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        """What a table cell says: `works`, `lacks counters`, `FAIL RR-10.3 (foreign)`."""
        if self.state == "fails":
            return f"FAIL {self.clause} ({self.side})"
        if self.state == "lacks":
            return "lacks " + ", ".join(self.lacks)
        if self.state == "absent":
            return "-"
        return self.state.upper() if self.state in ("error", "skip") else self.state


@dataclass(frozen=True)
class ForeignRow:
    stack: str  # as its manifest names it: "NestJS RMQ transport"
    foreign: str  # the foreign peer's label
    binding: str  # the acemq peer's label
    broker: str
    direction: str
    cases: dict[str, ForeignCase]


def foreign_peers(peers: dict[str, PeerStatus]) -> dict[str, str]:
    """Peer name -> stack, for every foreign peer of a run."""
    return {name: status.foreign.get("stack", name) for name, status in peers.items() if status.foreign}


def is_foreign_cell(result: CellResult, foreign: Iterable[str]) -> bool:
    """The cell has a foreign peer in it: kept out of the conformance tables."""
    names = set(foreign)
    return bool(names) and any(_name(label) in names for label in result.peers)


def _name(label: str) -> str:
    return label.split("@", 1)[0].split("+", 1)[0]


def matrix(results: list[CellResult], peers: dict[str, PeerStatus]) -> tuple[ForeignRow, ...]:
    """Every row the run's cells make, in the order: stack, broker, binding, direction."""
    from ..spec.catalogue import catalogue

    stacks = foreign_peers(peers)
    if not stacks:
        return ()
    cat = catalogue()
    by_scenario: dict[str, list[str]] = {}
    for case in cat.foreign_cases.values():
        by_scenario.setdefault(case.scenario, []).append(case.id)
    rows: dict[tuple[str, str, str, str], dict[str, ForeignCase]] = {}
    for result in results:
        if result.scenario not in by_scenario:
            continue
        placed = _placed(result, stacks)
        if placed is None:
            continue
        foreign, binding, direction = placed
        key = (foreign, result.broker, binding, direction)
        for case_id in by_scenario[result.scenario]:
            rows.setdefault(key, {})[case_id] = _case(result, cat.foreign_cases[case_id], stacks[_name(foreign)],
                                                      foreign, direction, cat)
    ordered = sorted(rows, key=lambda k: (stacks[_name(k[0])], k[0], k[1], k[2], DIRECTIONS.index(k[3])))
    return tuple(ForeignRow(stacks[_name(f)], f, b, broker, d,
                            {c: rows[(f, broker, b, d)].get(c, ForeignCase("absent")) for c in cat.foreign_cases})
                 for f, broker, b, d in ordered)


def _placed(result: CellResult, stacks: dict[str, str]) -> tuple[str, str, str] | None:
    """(foreign label, binding label, direction) of a cell with one foreign stack in one of
    its two roles and an acemq binding in the other; None for any other cell."""
    requester, responder = result.roles.get("requester"), result.roles.get("responder")
    if not isinstance(requester, str) or not isinstance(responder, str):
        return None
    if _name(requester) in stacks and _name(responder) not in stacks:
        return requester, responder, CALLER
    if _name(responder) in stacks and _name(requester) not in stacks:
        return responder, requester, RESPONDER
    return None


def _case(result: CellResult, case: Any, stack: str, foreign: str, direction: str, cat: Any) -> ForeignCase:
    if result.status == Status.ERROR:
        return ForeignCase("error", result.id, reason=result.message.splitlines()[0] if result.message else "")
    if result.status == Status.SKIP:
        return ForeignCase("skip", result.id, reason=result.reason)
    mine = [f for f in result.failures if case.covers(f.clause) and not _not_acemq(f, foreign)]
    broken = [f for f in mine if f.observed not in _LACKING]
    if not broken:
        # A part shows missing as a failure (the stack's own clause) or, where the check
        # judges the other side, as a check left unevaluated for it.
        unjudged = [m.group(1) for n in result.not_evaluated if case.covers(n.clause)
                    for m in [_LACK_NEEDS.search(n.needs)] if m is not None]
        lacks = tuple(dict.fromkeys([*(str(f.expected) for f in mine), *unjudged]))
        return ForeignCase("lacks" if lacks else "works", result.id, lacks=lacks)
    first = broken[0]  # results keep failures root first (run/wire_verdict.py)
    side = _side(first, foreign)
    known = cat.incompatibility(stack, direction, first.clause)
    reason = known.reason if known is not None else cat.describe(first.clause)
    return ForeignCase("fails", result.id, first.clause, side, first.peer, first.observed, reason)


def _not_acemq(failure: Failure, foreign: str) -> bool:
    """The foreign stack's own messages audited on the wire against what an acemq binding
    writes (no acemq-reply-to, no content_type, no responseMessageId, a direct reply-to address
    in place of a reply queue), or the acemq id it never had: the stack is not acemq. A case is
    decided by what crosses over: the scenario's own checks (a step's, however the wire renamed
    whose side broke it) and every failure of the acemq side."""
    return failure.peer == foreign and (not failure.check.startswith(_STEP) or _UNREPORTED in failure.check)


def _side(failure: Failure, foreign: str) -> str:
    if failure.peer is None:
        return "shared"
    return "foreign" if failure.peer == foreign else "acemq"
