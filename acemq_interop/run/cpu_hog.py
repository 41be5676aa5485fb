"""A CPU hog beside a run (`run --cpu-hog N`): N busy processes, so that a verdict that depends
on the machine being idle shows up here before it shows up in a user's loaded CI.

Each hog is bounded three ways: the run stops it at its end (whatever ends the run), it stops
by itself once its parent (the harness) is gone, and it never outlives HOG_BOUND_S.
"""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

HOG_BOUND_S = 3 * 3600
MAX_HOGS = 64
# Busy for the bound; every 100k turns, a look at whether the harness is still its parent.
_HOG = (
    "import os, time\n"
    "parent, end = os.getppid(), time.monotonic() + {bound}\n"
    "while time.monotonic() < end and os.getppid() == parent:\n"
    "    for _ in range(100000): pass\n"
)


@contextmanager
def cpu_hogs(count: int, log: Callable[[str], None], bound_s: float = HOG_BOUND_S) -> Iterator[list[subprocess.Popen]]:
    """`count` busy processes for the duration of the block (none for 0)."""
    hogs: list[subprocess.Popen] = []
    try:
        for _ in range(count):
            hogs.append(subprocess.Popen([sys.executable, "-c", _HOG.format(bound=float(bound_s))],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if hogs:
            log(f"cpu hog: {count} busy process(es) beside the run (pids {', '.join(str(h.pid) for h in hogs)})")
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(timeout=10)
