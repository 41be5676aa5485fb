"""What /proc says of a process: its CPU time, its descendants' included."""
from __future__ import annotations

import os
from pathlib import Path


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process and of its live descendants (a peer started
    through `sh -c` or a wrapper), from /proc; None where /proc cannot tell."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(entry))
    except OSError:
        return None
    total, todo, seen = 0.0, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
        except (OSError, IndexError, ValueError):
            if current == pid:
                return None
            continue
        todo += children.get(current, [])
    return total
