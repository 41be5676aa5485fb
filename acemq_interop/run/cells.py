"""Cells: one scenario with a choice of peers for its roles; `result_of` describes one as model data."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..peers.manifests import PeerSpec
from ..results.model import BAD_STATUSES, PROBE, CellResult, Status
from ..spec.scenarios import Scenario

PASS, FAIL, ERROR, SKIP, XFAIL, XPASS = Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP, Status.XFAIL, Status.XPASS
__all__ = ["PASS", "FAIL", "ERROR", "SKIP", "XFAIL", "XPASS", "BAD_STATUSES", "Cell", "CellResult", "plan",
           "narrowed", "skip_reason", "result_of"]


@dataclass(frozen=True)
class Cell:
    scenario: Scenario
    assignment: tuple[tuple[str, Any], ...]  # (role, PeerSpec | tuple[PeerSpec, ...] | None for the probe)
    # The id it was planned under, kept when the run narrowed a role every peer plays to the
    # peers able to play it (`narrowed`): a rerun line and --cell name it as planned.
    planned_as: str | None = None

    @property
    def roles(self) -> dict[str, Any]:
        return dict(self.assignment)

    @property
    def id(self) -> str:
        if self.planned_as is not None:
            return self.planned_as
        parts = []
        for role, who in self.assignment:
            if who is None:
                continue
            if isinstance(who, tuple):
                # A mixed gather names its subscribers, so its id says what it ran with
                # and stays unique across selections.
                parts.append(f"{role}={'+'.join(s.label for s in who)}")
            else:
                parts.append(f"{role}={who.label}")
        return f"{self.scenario.id}[{','.join(parts)}]" if parts else self.scenario.id

    def specs(self) -> list[PeerSpec]:
        found: list[PeerSpec] = []
        for _, who in self.assignment:
            if isinstance(who, tuple):
                found.extend(who)
            elif who is not None:
                found.append(who)
        return found


def result_of(cell: Cell, status: Status | str, broker: str = "", **fields: Any) -> CellResult:
    """A model CellResult for this cell: its id, scenario and roles as plain data."""
    roles: dict[str, Any] = {}
    for role, who in cell.assignment:
        roles[role] = PROBE if who is None else ([s.label for s in who] if isinstance(who, tuple) else who.label)
    return CellResult(
        id=cell.id, scenario=cell.scenario.id, title=cell.scenario.title, matrix=cell.scenario.matrix,
        rules=tuple(cell.scenario.rules), clauses=tuple(cell.scenario.clauses), roles=roles, peers=tuple(s.label for s in cell.specs()),
        status=Status(status), broker=broker, level=cell.scenario.level, **fields,
    )


def plan(scenarios: list[Scenario], specs: list[PeerSpec], diagonal: bool = False,
         interop: frozenset[str] = frozenset()) -> list[Cell]:
    """Every cell: the product of the selected peers over each scenario's `peer` roles.

    `diagonal` keeps only the cells where one spec plays every role (a binding against
    itself and the probe): how mutants and a new binding are certified without N x N cells.
    A cell whose mutants all sit on an object their roles never open is left out.
    `interop` (the foreign stacks of `run --foreign`) keeps only the cells where one of them
    meets an acemq binding: the foreign-interop matrix, neither stack against itself nor two
    acemq bindings the conformance matrix already has.
    """
    cells: list[Cell] = []
    for scenario in scenarios:
        peer_roles = scenario.peer_roles
        choices = [(s,) * len(peer_roles) for s in specs] if diagonal else itertools.product(specs, repeat=len(peer_roles))
        for choice in choices:
            chosen = dict(zip(peer_roles, choice))
            assignment = []
            for role, kind in scenario.roles.items():
                if kind == "peer":
                    assignment.append((role, chosen[role]))
                elif kind == "all-peers":
                    assignment.append((role, (choice[0],) if diagonal and choice else tuple(specs)))
                else:
                    assignment.append((role, None))
            if _mutants_act(scenario, assignment) and (not interop or _meets(assignment, interop)):
                cells.append(Cell(scenario, tuple(assignment)))
    return cells


def _meets(assignment: list[tuple[str, Any]], foreign: frozenset[str]) -> bool:
    """One role is a foreign stack and every other peer role an acemq binding."""
    names = [s.name for _, who in assignment if who is not None for s in (who if isinstance(who, tuple) else (who,))]
    return sum(n in foreign for n in names) == 1 and len(names) > 1


def _mutants_act(scenario: Scenario, assignment: list[tuple[str, Any]]) -> bool:
    """False when the cell has mutants and none of them runs its code in this scenario (a
    responder mutant where its peer only opens requesters): that cell is the clean binding's
    cell again, so it is not planned. A spec with several mutants is planned if any acts."""
    mutated = [(role, mutant) for role, who in assignment if who is not None
               for s in (who if isinstance(who, tuple) else (who,)) for mutant in s.mutants]
    return not mutated or any(scenario.mutant_acts(role, mutant) for role, mutant in mutated)


def narrowed(cell: Cell, hellos: dict[str, dict[str, Any]], unavailable: dict[str, str]) -> Cell:
    """The cell with each role every peer plays (a mixed gather's subscribers) kept to the
    peers able to play it (the role's capability, available): a caller-only binding in the run
    leaves the others' mixed gather to run without it, not a SKIP. Unchanged when none would
    remain or none is left out (then `skip_reason` says why it cannot run)."""
    assignment, changed = [], False
    for role, who in cell.assignment:
        if isinstance(who, tuple) and len(who) > 1:
            needs = cell.scenario.needs.get(role, frozenset())
            able = tuple(s for s in who if s.name not in unavailable and s.name in hellos
                         and needs <= set((hellos[s.name] or {}).get("capabilities", [])))
            if able and len(able) < len(who):
                assignment.append((role, able))
                changed = True
                continue
        assignment.append((role, who))
    return Cell(cell.scenario, tuple(assignment), planned_as=cell.id) if changed else cell


def skip_reason(cell: Cell, hellos: dict[str, dict[str, Any]], unavailable: dict[str, str]) -> str | None:
    """Why this cell cannot run with these peers (capability, profile, toolchain), or None."""
    for role, who in cell.assignment:
        if who is None:
            continue
        for spec in who if isinstance(who, tuple) else (who,):
            if spec.name in unavailable:
                return f"peer {spec.name} unavailable: {unavailable[spec.name]}"
            hello = hellos[spec.name]
            if int(hello.get("protocol", 1)) < cell.scenario.min_protocol:
                return f"peer {spec.name} speaks peer protocol {hello.get('protocol', 1)}; this scenario needs {cell.scenario.min_protocol}"
            missing = cell.scenario.needs.get(role, frozenset()) - set(hello.get("capabilities", []))
            if missing:
                return f"peer {spec.name} lacks capability {', '.join(sorted(missing))} for role {role}"
            if spec.profile not in hello.get("profiles", ["current"]):
                return f"peer {spec.name} does not offer profile {spec.profile}"
            offered = hello.get("mutants", [])
            for mutant in spec.mutants:
                if mutant not in offered:
                    return f"peer {spec.name} does not offer mutant {mutant}"
    return None
