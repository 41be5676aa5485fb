"""What the machine a measurement ran on is: CPUs, memory, kernel, and how busy it was.

Figures taken on a shared machine mean little without its load beside them: `load_average`
is read before and after a bench so a reader can tell a quiet run from a crowded one, and
`busy_cpu_s` around each measurement says how much of the CPUs others took while it ran
(`others_share`): what a rate's spread comes from when the code measured did not change.
"""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def _first(path: str, prefix: str) -> str | None:
    """The value of the first line of a /proc file that starts with `prefix`."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, as `uptime` prints them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine_facts() -> dict[str, Any]:
    memory = _first("/proc/meminfo", "MemTotal:")
    return {"cpus": os.cpu_count(), "cpu_model": _first("/proc/cpuinfo", "model name") or "",
            "memory_gib": round(int(memory.split()[0]) / 1024 / 1024, 1) if memory else None,
            "kernel": platform.release(), "python": platform.python_version()}


def busy_cpu_s() -> float | None:
    """CPU seconds every CPU of the machine spent on anything but idling since boot, from
    /proc/stat's first line: user, nice, system, irq, softirq, and the hypervisor's steal
    (a virtual machine's CPU given to another guest is as lost to a measurement as one
    another process used); None where /proc cannot tell."""
    try:
        line = Path("/proc/stat").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    if not line.startswith("cpu "):
        return None
    try:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in line.split()[1:9])
    except ValueError:
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def others_share(wall_s: float, busy_s: float, ours_s: float, cpus: int) -> float:
    """The share of the machine's CPUs (0 to 1) that was busy with something other than what
    is measured (`ours_s`: the broker's, the peers' and the harness's CPU seconds) over a
    window of `wall_s` in which the CPUs were busy `busy_s` in all."""
    if wall_s <= 0 or cpus < 1:
        return 0.0
    return min(1.0, max(0.0, (busy_s - ours_s) / (wall_s * cpus)))
