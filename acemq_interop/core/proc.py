"""What /proc says of a process: its descendants, and its CPU time and resident memory with theirs."""
from __future__ import annotations

import os
from pathlib import Path


def _children() -> dict[int, list[int]]:
    """Every live process's children, by parent pid (OSError where /proc cannot be listed)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """The live descendants of a process (children, theirs, ...), from /proc."""
    children, found, todo = _children(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process and of its live descendants (a peer started
    through `sh -c` or a wrapper), from /proc; None where /proc cannot tell."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tree = [pid, *descendants(pid)]
    except OSError:
        return None
    total = 0.0
    for current in tree:
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
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
