"""What killed runs left: private nodes' base dirs and vhosts, with what is known of their owners.

Only what an owner record proves dead is ever removed (core/ownership.py); the rest is listed.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..core.ownership import Owner, kill_node, read_owner, vhost_owner
from .management import Management
from .node import NODE_DIR_PREFIX

VHOST_PREFIX = "acemq-interop-"


@dataclass(frozen=True)
class Leftover:
    """A private node's base dir (or a vhost) a run left, and what is known of its owner."""

    what: str  # the dir or the vhost name
    node: str  # the node name, for a dir
    state: str  # "owner alive", "owner dead", "owner unknown" (no record, or another machine's)

    def line(self) -> str:
        return f"{self.what}" + (f" (node {self.node})" if self.node else "") + f": {self.state}"


def _state(owner: Owner | None) -> str:
    if owner is None:
        return "owner unknown (no owner record)"
    if owner.dead():
        return "owner dead"
    if not owner.judgeable():
        return f"owner unknown (recorded by pid {owner.pid} on {owner.host or 'another machine'}, not judged from here)"
    return f"owner alive (pid {owner.pid})"


def leftover_nodes() -> list[Leftover]:
    """Every private node's base dir in the temporary folder, with its owner's state."""
    found = []
    for base in sorted(Path(tempfile.gettempdir()).glob(NODE_DIR_PREFIX + "*")):
        if base.is_dir():
            owner = read_owner(base)
            found.append(Leftover(str(base), owner.node if owner else "", _state(owner)))
    return found


def sweep_nodes(log: Callable[[str], None]) -> list[Leftover]:
    """Kill the nodes of dead owners and remove their dirs; never anything else."""
    swept = []
    for left in leftover_nodes():
        if left.state != "owner dead":
            continue
        if left.node and kill_node(left.node):
            log(f"a node left by a killed run, {left.node}, would not die: {left.what} kept")
            continue
        shutil.rmtree(left.what, ignore_errors=True)
        log(f"removed a private node left by a killed run: {left.node} ({left.what})")
        swept.append(left)
    return swept


def leftover_vhosts(management: Management) -> list[Leftover]:
    """The broker's acemq-interop-* vhosts, with what is known of their owners."""
    return [Leftover(v["name"], "", _state(vhost_owner(v.get("description"))))
            for v in management.vhost_records() if str(v.get("name", "")).startswith(VHOST_PREFIX)]


def sweep_vhosts(management: Management, log: Callable[[str], None]) -> list[Leftover]:
    """Delete the acemq-interop-* vhosts whose recorded owner is provably dead."""
    swept = []
    for left in leftover_vhosts(management):
        if left.state == "owner dead":
            management.delete_vhost(left.what)
            log(f"deleted a vhost left by a killed run: {left.what}")
            swept.append(left)
    return swept
