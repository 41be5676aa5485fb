"""A peer's limits: what one peer may take of the machine, from its manifest's `limits:`.

A peer is code the suite does not trust (a binding under certification, a foreign stack);
on a 2-core machine one that leaks or spins takes every other cell's verdict with it. Each
limit, and what a peer past it gets:

- `memory_mib` (default 1024): the resident memory of the peer's processes, summed (its
  whole tree: a child it forked counts). Watched from /proc every WATCH_INTERVAL_S by the
  harness (peers/watch.py), not set as RLIMIT_AS: a JVM, the CLR and Go reserve virtual
  ranges far beyond what they use (a JVM with a 1 GiB limit on its address space does not
  start), and a cgroup's memory.max needs a delegated cgroup tree that neither CI runners
  nor containers give an unprivileged process. Past it the peer is ended, and every cell of
  it not finished is ERROR `peer 'X' exceeded its memory limit (N MiB)`. Measured, a full
  matrix (750 cells): the Java peer peaks at 114 MiB, .NET 72, Node 65, Ruby 49, Python 28,
  Go 12.
- `cpu_share` (default 0.5 cores): the peer's CPU time over the last CPU_WINDOW_S, in
  cores. Past it the peer's processes and threads get the lowest priority (nice 19) for the
  rest of the run: a spinning peer then runs on what the others leave, and cannot change
  their verdicts. It is not ended (a busy peer is not a broken one). Why not a lower
  priority for every peer from the start: their timers are what many scenarios judge, and a
  loaded machine would then make a correct binding's timer late (what the stress mode
  looks for); only a peer that takes more than its share pays. Measured: no peer of a full
  matrix uses more than 0.14 cores over any CPU_WINDOW_S, while a peer spinning two cores
  beside the full matrix on 2 cores got 0.64 (the machine was busy): 0.75 let it be.
- `nice` (default 0): the peer's priority from its start (0 to 19), for a peer known to be
  heavy.
- `open_files` (default 4096): RLIMIT_NOFILE, set in the peer before it runs, so the
  kernel refuses its next file or socket (EMFILE). The harness also ends a peer seen with
  that many open in one process: its cells are ERROR `peer 'X' reached its open-files
  limit (N)`, never a FAIL of a binding that could not open a socket. Measured: at most
  100 (the .NET peer; Python 79).
- `output_mib` (default 64): what the peer writes on stdout and stderr together. Past it
  the peer is ended: ERROR `peer 'X' exceeded its output limit (N MiB ...)`. Its stderr log
  keeps only its last 16 MiB anyway; this bounds the harness's CPU spent reading a flood.
  Measured: a full matrix writes 0.2 MiB per peer.

A peer given as an image (`NAME=IMAGE`, `--in-docker`) gets its memory and open-files
limits from the container engine instead (`docker run --memory --ulimit nofile`); the
engine ends a container past its memory (its cells say `exited (code 137)`).
"""
from __future__ import annotations

import os
import resource
from dataclasses import dataclass, fields
from typing import Any, Callable

MIB = 1024 * 1024
WATCH_INTERVAL_S = 0.25
CPU_WINDOW_S = 10.0
DEMOTED_NICE = 19

# The manifest's `limits:` (MANIFEST_SCHEMA takes it from here): each key, its type and bounds.
LIMITS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "memory_mib": {"type": "integer", "minimum": 16, "maximum": 1024 * 1024},
        "cpu_share": {"type": "number", "exclusiveMinimum": 0, "maximum": 1024},
        "nice": {"type": "integer", "minimum": 0, "maximum": 19},
        "open_files": {"type": "integer", "minimum": 64, "maximum": 1 << 20},
        "output_mib": {"type": "integer", "minimum": 1, "maximum": 1024 * 1024},
    },
    "errorMessage": "limits is a mapping: memory_mib, cpu_share (cores), nice (0-19), open_files, output_mib",
}


@dataclass(frozen=True)
class Limits:
    """One peer's limits (the module doc says what each does and what a peer past it gets)."""

    memory_mib: int = 1024
    cpu_share: float = 0.5
    nice: int = 0
    open_files: int = 4096
    output_mib: int = 64

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> "Limits":
        """From a manifest's `limits:` (checked by its schema): a key left out keeps its default."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})

    def record(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def preexec(self) -> Callable[[], None]:
        """What the peer's process does between fork and exec: its open-files limit and its
        priority, inherited by every thread and process it starts. Computed here, so the
        child calls two system calls and nothing else (no import, no lock: the harness has
        threads, and a forked child must not wait on a lock one of them held)."""
        wanted = self.open_files_rlimit()
        setrlimit, nofile, nice, renice = resource.setrlimit, resource.RLIMIT_NOFILE, os.nice, self.nice

        def apply() -> None:
            # A limit the kernel refuses is not worth a peer that does not start: the watch
            # still holds what it can see.
            try:
                setrlimit(nofile, (wanted, wanted))
            except (OSError, ValueError):
                pass
            if renice:
                try:
                    nice(renice)
                except OSError:
                    pass

        return apply

    def open_files_rlimit(self) -> int:
        """The RLIMIT_NOFILE the peer gets: its limit, never past the harness's own hard limit
        (which an unprivileged process cannot raise)."""
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        return self.open_files if hard == resource.RLIM_INFINITY else min(self.open_files, hard)

    def docker_flags(self) -> list[str]:
        """The same limits for a peer in a container, enforced by the engine."""
        return ["--memory", f"{self.memory_mib}m", "--memory-swap", f"{self.memory_mib}m",
                "--ulimit", f"nofile={self.open_files}:{self.open_files}"]
