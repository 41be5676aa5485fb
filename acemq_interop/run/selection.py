"""What a run was asked for, checked before any broker starts: a typo is a usage error.

A run that tests nothing must not come out green: an unknown peer, profile or mutant, a
scenario glob that matches nothing, an empty peer list or a `--cell` that names no planned
cell each stop the run with exit 2 and the valid choices, before a node or container is
started or a peer is built.
"""
from __future__ import annotations

from ..spec import catalogue
from .cells import Cell
from ..core.errors import UsageError
from ..peers.manifests import PeerSpec


def check_specs(specs: list[PeerSpec], image_peers: frozenset[str] = frozenset()) -> None:
    """Every profile and mutant named exists in the catalogue (and the profile for that peer)."""
    if not specs:
        raise UsageError("the peer list is empty: name at least one peer with --peers (see `acemq-interop list`)")
    cat = catalogue.catalogue()
    for spec in specs:
        if spec.profile not in cat.profiles:
            raise UsageError(f"{spec.label}: unknown profile '{spec.profile}'; profiles: {', '.join(cat.profiles)}")
        # An image peer's binding is known only from its hello: the runner checks its offer then.
        if spec.name not in image_peers and not cat.profiles[spec.profile].offered_by(spec.name):
            offered = [name for name, p in cat.profiles.items() if p.offered_by(spec.name)]
            raise UsageError(f"{spec.label}: the catalogue has no profile '{spec.profile}' for {spec.name}; "
                             f"profiles for {spec.name}: {', '.join(offered)}")
        for mutant in spec.mutants:
            if mutant not in cat.mutants:
                raise UsageError(f"{spec.label}: unknown mutant '{mutant}'; mutants: {', '.join(sorted(cat.mutants))}")


def check_cells(planned: list[Cell], only_cells: list[str] | None) -> None:
    """Every `--cell` id is a cell of this selection."""
    if not only_cells:
        return
    ids = {cell.id for cell in planned}
    missing = [c for c in only_cells if c not in ids]
    if missing:
        sample = ", ".join(sorted(ids)[:8]) + (f" ... ({len(ids)} in all)" if len(ids) > 8 else "")
        raise UsageError(f"--cell {', '.join(repr(m) for m in missing)}: no planned cell has that id with these --peers "
                         f"and --scenarios (the cell's peers must be selected); planned cells: {sample or 'none'}")
