"""What killed runs left: private nodes' base dirs, TLS certificate dirs and vhosts, with what
is known of their owners.

Only what an owner record proves dead is ever removed (core/ownership.py); the rest is listed.
A `--tls` run's certificates (the broker's private key among them) live in a private
`$TMPDIR/acemq-interop-tls-*` folder with an owner record written before any key is made
(`owned_certificates`), so a run SIGKILLed mid-way leaves a folder the next run, or
`doctor --clean`, removes.
"""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..amqp.tls import Certificates, make_certificates
from ..core.ownership import Owner, kill_node, read_owner, vhost_owner, write_owner
from .management import Management
from .node import NODE_DIR_PREFIX, node_dir_roots

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
    """Every private node's base dir (in memory or the temporary folder), with its owner's state."""
    found = []
    for base in sorted(b for root in node_dir_roots() for b in root.glob(NODE_DIR_PREFIX + "*")):
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


TLS_DIR_PREFIX = "acemq-interop-tls-"


@contextmanager
def owned_certificates() -> Iterator[Certificates]:
    """A run's certificates (amqp/tls.py's layout) in a private temporary folder that carries
    its owner record from before the first key exists, removed at the end whatever happens."""
    where = Path(tempfile.mkdtemp(prefix=TLS_DIR_PREFIX))
    try:
        where.chmod(0o700)
        write_owner(where, "")
        yield make_certificates(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def leftover_tls_dirs() -> list[Leftover]:
    """Every run certificate folder in the temporary folder, with its owner's state."""
    found = []
    for where in sorted(Path(tempfile.gettempdir()).glob(TLS_DIR_PREFIX + "*")):
        if where.is_dir():
            found.append(Leftover(str(where), "", _state(read_owner(where))))
    return found


def sweep_tls_dirs(log: Callable[[str], None]) -> list[Leftover]:
    """Remove the certificate folders of dead owners (a private key among them); never anything else."""
    swept = []
    for left in leftover_tls_dirs():
        if left.state == "owner dead":
            shutil.rmtree(left.what, ignore_errors=True)
            log(f"removed the TLS certificates (with a private key) a killed run left: {left.what}")
            swept.append(left)
    return swept
