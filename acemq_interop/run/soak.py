"""The soak's measurements (results/soak.py judges them): the harness's own footprint after
a run, and what a run left on its broker.

The harness's figures are read from /proc/self after each run of `run --repeat N` (the
runs share one harness process, so a leak adds up there). Its temporary entries are the
folders it makes (`acemq-interop-*` in $TMPDIR and /dev/shm: a private node's data dir, a
TLS run's certificates, a run's log folder) whose owner record names this process: on a
machine shared with other runs, theirs are not this harness's leak.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..broker.leftovers import VHOST_PREFIX
from ..broker.management import Management
from ..core.errors import BrokerError
from ..core.ownership import Owner, read_owner
from ..core.proc import children_map, descendants, scan

TEMP_PREFIX = "acemq-interop-"
SHM_DIR = Path("/dev/shm")
SETTLE_S = 1.0  # a thread or a process on its way out when a run returns is given this long
CONNECTIONS_SETTLE_S = 10.0  # a connection closed as its peer exits leaves the management API's list within this


def harness_figures(settle_s: float = SETTLE_S) -> dict[str, float | None]:
    """The harness's RSS (MiB), open fds, threads, descendant processes (zombies included),
    and the temporary and /dev/shm entries it owns, as they are now. Threads and processes
    are counted over `settle_s` and the lowest count kept: one ending as the run returns (the
    resource watch's thread after its last peer) is not a leak."""
    threads, children = _threads(), _children()
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline and (threads or children):
        time.sleep(0.05)
        threads, children = _min(threads, _threads()), _min(children, _children())
    return {"rss_mib": _rss_mib(), "fds": _fds(), "threads": threads, "children": children,
            "temp": owned_entries(Path(tempfile.gettempdir())),
            "shm": owned_entries(SHM_DIR) if SHM_DIR.is_dir() and SHM_DIR != Path(tempfile.gettempdir()) else 0}


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _status(key: str) -> str | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].split()[0]
    except OSError:
        pass
    return None


def _rss_mib() -> float | None:
    kib = _status("VmRSS")
    return round(int(kib) / 1024, 1) if kib is not None else None


def _fds() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the one listing it
    except OSError:
        return None


def _threads() -> int:
    count = _status("Threads")
    return int(count) if count is not None else threading.active_count()


def _children() -> int | None:
    try:
        return len(descendants(os.getpid(), children_map(scan())))
    except OSError:
        return None


def owned_entries(folder: Path) -> int:
    """The harness's folders in `folder` (its prefix) whose owner record is this process's."""
    me = Owner.me()
    count = 0
    try:
        entries = [e for e in folder.iterdir() if e.name.startswith(TEMP_PREFIX)]
    except OSError:
        return 0
    for entry in entries:
        owner = read_owner(entry) if entry.is_dir() else None
        if owner is not None and (owner.pid, owner.start, owner.boot) == (me.pid, me.start, me.boot):
            count += 1
    return count


@dataclass
class ConnectionsLeft:
    """What the management API lists in the run's vhost once its peers stopped: `open`, the
    connections a process still holds (the broker gives each a state: running, blocked,
    closing...), and `stale`, rows of connections already closed (no state, no process holding
    their client end). The management statistics are built from events and drop some when
    they fall behind, a closed connection's row then staying until a later clean-up (the
    RabbitMQ team on rabbitmq-management#276); seen here on 3.10.8 under the full matrix, about
    one row in 4,000 connections. A stale row is the broker's bookkeeping, not a connection of
    the run; it goes with the vhost, and the soak shows it without judging it."""

    open: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)


def connections_left(management: Management, vhost: str, lost: Callable[[], str | None],
                     settle_s: float = CONNECTIONS_SETTLE_S) -> ConnectionsLeft | None:
    """The connections still listed in the run's vhost once its peers stopped, each by the name
    that says whose it is (its client-provided `connection_name`: a role's names its cell and
    role, the harness's own say so; else the broker's name, its client's address), or None
    when the broker could not be asked. The list is read until no open one is left or
    `settle_s` has passed: a connection closed as its peer exited leaves the management API's
    list a moment later, later still on a loaded machine (the API's view is built from events)."""
    deadline = time.monotonic() + settle_s
    while True:
        if lost():
            return None
        try:
            rows = management.connections(vhost)
        except BrokerError:
            return None
        live = [row for row in rows if row.get("state")]
        if not live or time.monotonic() > deadline:
            return ConnectionsLeft(open=sorted(_described(row) for row in live),
                                   stale=sorted(_described(row) for row in rows if not row.get("state")))
        time.sleep(0.2)


def _described(row: dict) -> str:
    """A connection left: its name, its state as the broker says, and which process on this
    machine holds its client end."""
    name = str(row.get("connection_name") or row.get("name"))
    port = row.get("peer_port")
    holder = socket_holder(int(port)) if isinstance(port, int) else None
    return f"{name} ({row.get('state') or 'no state'}, client end {holder or 'held by no process here'})"


def socket_holder(port: int) -> str | None:
    """The process holding the TCP socket whose local end is loopback port `port`: `pid N
    (command)`, else None. Read from /proc/net/tcp{,6} (the socket's inode) and /proc/*/fd."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    inodes.discard("0")
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    comm = (entry / "comm").read_text().strip()
                    return f"pid {entry.name} ({comm})"
        except OSError:
            continue
    return "a socket no process here holds"


def suite_vhosts(management: Management) -> int | None:
    """The vhosts on the broker named as the suite names its own (a run's, a pre-flight's)."""
    try:
        return sum(1 for name in management.vhosts() if name.startswith(VHOST_PREFIX))
    except BrokerError:
        return None
