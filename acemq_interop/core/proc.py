"""What /proc says of processes: one snapshot of the table, a process's descendants, its CPU
time and resident memory with theirs."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcStat:
    """One process as /proc/PID/stat has it: enough to place it in its tree, its session and
    its group, to tell it from a later process given the same pid (`start`), and to weigh it."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str  # R, S, D, T, Z ...
    start: int  # clock ticks after boot: with the pid, names one process for good
    cpu_ticks: int  # user + system, its own (not its waited-for children's)
    rss_bytes: int

    @property
    def zombie(self) -> bool:
        return self.state == "Z"


def parse_stat(pid: int, raw: bytes) -> ProcStat:
    """A /proc/PID/stat line (the command name in parentheses may hold spaces and parentheses)."""
    fields = raw.rsplit(b")", 1)[1].split()
    return ProcStat(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]), state=fields[0].decode(),
                    start=int(fields[19]), cpu_ticks=int(fields[11]) + int(fields[12]),
                    rss_bytes=int(fields[21]) * PAGE_BYTES)


def stat_of(pid: int) -> ProcStat | None:
    """The process now, or None when there is none (or /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return parse_stat(pid, handle.read())
    except (OSError, IndexError, ValueError):
        return None


def scan() -> dict[int, ProcStat]:
    """Every process of the table, by pid: one read per process (OSError where /proc cannot be
    listed, as on a system without it)."""
    table: dict[int, ProcStat] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = stat_of(int(entry))
            if stat is not None:
                table[stat.pid] = stat
    return table


def children_map(table: dict[int, ProcStat]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    return children


def _children() -> dict[int, list[int]]:
    """Every live process's children, by parent pid (OSError where /proc cannot be listed)."""
    return children_map(scan())


def descendants(pid: int, children: dict[int, list[int]] | None = None) -> list[int]:
    """The live descendants of a process (children, theirs, ...), from /proc (or from a
    `children_map` of a snapshot already taken)."""
    children, found, todo = children if children is not None else _children(), [], [pid]
    seen = {pid}
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                found.append(child)
                todo.append(child)
    return found


def argv_of(pid: int, limit: int = 160) -> str:
    """A process's command line as one line, cut to `limit` characters (its name if it has none)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        if not raw:
            raw = b"[" + Path(f"/proc/{pid}/comm").read_bytes().strip() + b"]"
    except OSError:
        return "?"
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "..."


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process and of its live descendants (a peer started
    through `sh -c` or a wrapper), from /proc; None where /proc cannot tell."""
    try:
        tree = [pid, *descendants(pid)]
    except OSError:
        return None
    total = 0.0
    for current in tree:
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / TICK
        except (OSError, IndexError, ValueError):
            if current == pid:
                return None
    return total


def resident_mib(pid: int) -> float | None:
    """Resident memory (VmRSS) of a process and of its live descendants (a wrapper script's
    JVM), in MiB, from /proc; None where /proc tells of none of them."""
    try:
        tree = [pid, *descendants(pid)]
    except OSError:
        tree = [pid]
    total_kib, found = 0, False
    for current in tree:
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
                    found = True
                    break
        except (OSError, IndexError, ValueError):
            continue
    return total_kib / 1024 if found else None
