"""Who owns a private node or a vhost, and whether that owner is still alive.

A run that is SIGKILLed (a CI runner's hard cancel, the OOM killer) cannot clean up. So
every private node's base dir and every vhost a run makes carry an owner record: the
harness's pid, that process's start time (so a reused pid is not taken for the owner), the
machine's boot id and the pid namespace (so a record from another boot or another
container is never judged by this one's process table), and what it owns (the node name).

A leftover is removed only when its owner is *provably* dead: same boot, same pid
namespace, and no process with that pid and start time. Anything else is left alone (and
`doctor` reports it). Processes of a node are found by the exact `RABBITMQ_NODENAME` in
their /proc/PID/environ, never by a pattern over command lines.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

OWNER_FILE = "owner.json"
VHOST_MARK = "acemq-interop owner "
# epmd is shared by every Erlang node on the machine; it inherits the environment of the
# node that happened to start it, so it is never one node's to kill.
SHARED_PROCESSES = frozenset({"epmd"})


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def boot_id() -> str:
    return _read("/proc/sys/kernel/random/boot_id").strip()


def pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    stat = _read(f"/proc/{pid}/stat")
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class Owner:
    pid: int
    start: int | None
    boot: str
    pidns: str
    host: str
    node: str = ""  # the RabbitMQ node name, for a private node's record

    @classmethod
    def me(cls, node: str = "") -> "Owner":
        return cls(os.getpid(), start_time(os.getpid()), boot_id(), pid_namespace(), socket.gethostname(), node)

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def parse(cls, text: str) -> "Owner | None":
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), data.get("start"), str(data["boot"]), str(data["pidns"]), str(data.get("host", "")),
                       str(data.get("node", "")))
        except (ValueError, KeyError, TypeError):
            return None

    def judgeable(self) -> bool:
        """Whether this machine's process table can tell if the owner lives."""
        return bool(self.boot) and self.boot == boot_id() and self.pidns == pid_namespace()

    def dead(self) -> bool:
        """Provably dead: judgeable, and no process with that pid and start time."""
        if self.boot and self.boot != boot_id():
            return True  # a reboot ends every process of the old boot
        if not self.judgeable():
            return False
        return not os.path.exists(f"/proc/{self.pid}") or start_time(self.pid) != self.start


def write_owner(base: Path, node: str) -> None:
    (base / OWNER_FILE).write_text(Owner.me(node).as_json() + "\n", encoding="utf-8")


def read_owner(base: Path) -> Owner | None:
    return Owner.parse(_read(str(base / OWNER_FILE)))


def vhost_description() -> str:
    """The owner record a run writes into its vhost's description."""
    return VHOST_MARK + Owner.me().as_json()


def vhost_owner(description: str | None) -> Owner | None:
    if not description or not description.startswith(VHOST_MARK):
        return None
    return Owner.parse(description[len(VHOST_MARK):])


# -- processes of a node ----------------------------------------------------------------


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def node_processes(node: str) -> list[int]:
    """The pids whose environment names exactly this node (epmd aside), the VM first."""
    wanted = f"RABBITMQ_NODENAME={node}".encode()
    found: list[tuple[int, int]] = []
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                env = handle.read().split(b"\0")
        except OSError:
            continue
        if wanted not in env:
            continue
        comm = _read(f"/proc/{pid}/comm").strip()
        if comm in SHARED_PROCESSES:
            continue
        found.append((0 if comm == "beam.smp" else 1, pid))
    return [pid for _, pid in sorted(found)]


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed detached node is reaped by init)."""
    stat = _read(f"/proc/{pid}/stat")
    try:
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except IndexError:
        return False


def kill_node(node: str, bound_s: float = 10.0) -> list[int]:
    """SIGKILL every process of the node and wait until they are gone; the pids still alive."""
    deadline = time.monotonic() + bound_s
    pids: list[int] = []
    # Twice over: a launcher caught between fork and exec may start the VM a moment later.
    for _ in range(2):
        for pid in node_processes(node):
            pids.append(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.05)
    return [p for p in pids if alive(p)]
