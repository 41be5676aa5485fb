"""The soak: what each run of `run --repeat N` left behind, and whether it grows.

After each run the harness records its own resident memory, open files, threads, child
processes, the temporary and /dev/shm entries it owns, and what the broker holds at the
run's end: connections still open in the run's vhost once its peers stopped, and the
suite's vhosts (run/soak.py measures them). A harness that leaks shows as a figure that
climbs run after run; one that does not stays flat once warm (the first runs fill caches,
start epmd, load the catalogue).

The rule (`growth`): the first WARMUP_RUNS runs set each figure's ceiling, their highest
value plus the figure's tolerance (TOLERANCE); a later run above that ceiling is growth,
and growth fails the repeat with its own exit code (commands/common.py EXIT_SOAK). Memory is
allowed some slack (an allocator keeps what it freed; a result set of a long run is kept
until the next); a count of things (a file, a thread, a process, a folder, a connection, a
vhost) is allowed none: one more after the warm-up is one that was not given back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SOAK_SCHEMA_VERSION = 2  # 2: a run's `connections_left` (the connections it left open) and `stale_connection_rows`
WARMUP_RUNS = 3
# The figures, in the order every view shows them, with a short heading for tables.
FIGURES: dict[str, str] = {
    "rss_mib": "RSS MiB", "fds": "fds", "threads": "threads", "children": "children", "temp": "temp",
    "shm": "shm", "connections": "connections", "vhosts": "vhosts",
}
# Each figure's tolerance over its warm-up ceiling: (absolute, fraction of the ceiling); the
# larger of the two applies.
TOLERANCE: dict[str, tuple[float, float]] = {
    "rss_mib": (16.0, 0.10), "fds": (0, 0.0), "threads": (0, 0.0), "children": (0, 0.0), "temp": (0, 0.0),
    "shm": (0, 0.0), "connections": (0, 0.0), "vhosts": (0, 0.0),
}


def allowed_over(name: str, ceiling: float) -> float:
    absolute, fraction = TOLERANCE[name]
    return max(absolute, fraction * ceiling)


@dataclass(frozen=True)
class Growth:
    """One figure of one run above its warm-up ceiling plus its tolerance."""

    figure: str
    run: int  # 1-based
    value: float
    ceiling: float
    allowed: float

    def line(self) -> str:
        return (f"{self.figure} grew: {self.value:g} in run {self.run}, over the first {WARMUP_RUNS} runs' "
                f"highest {self.ceiling:g} + {self.allowed:g}")


def growth(runs: list[dict[str, Any]]) -> list[Growth]:
    """Every figure of a run after the warm-up that is above the warm-up's highest value plus
    the figure's tolerance. A figure no run could measure (None) is left out; with no run
    after the warm-up there is nothing to judge."""
    found: list[Growth] = []
    if len(runs) <= WARMUP_RUNS:
        return found
    for name in FIGURES:
        warm = [r.get(name) for r in runs[:WARMUP_RUNS]]
        known = [v for v in warm if v is not None]
        if not known:
            continue
        ceiling = max(known)
        allowed = allowed_over(name, ceiling)
        for index, run in enumerate(runs[WARMUP_RUNS:], WARMUP_RUNS + 1):
            value = run.get(name)
            if value is not None and value > ceiling + allowed:
                found.append(Growth(name, index, value, ceiling, allowed))
    return found


@dataclass
class SoakReport:
    """The figures of every run of a repeat, and the growth the rule finds in them."""

    runs: list[dict[str, Any]]
    grew: list[Growth] = field(default_factory=list)

    @classmethod
    def of(cls, runs: list[dict[str, Any]]) -> "SoakReport":
        return cls(runs, growth(runs))

    @property
    def judged(self) -> bool:
        return len(self.runs) > WARMUP_RUNS

    def summary_line(self) -> str:
        if not self.judged:
            return (f"soak: {len(self.runs)} runs, no growth judged (the first {WARMUP_RUNS} are the warm-up: "
                    f"give --repeat {WARMUP_RUNS + 1} or more)")
        if self.grew:
            return f"soak: GROWTH after the first {WARMUP_RUNS} runs: " + "; ".join(g.line() for g in self.grew)
        return f"soak: every figure flat after the first {WARMUP_RUNS} runs ({len(self.runs)} runs)"

    def leftovers(self) -> list[tuple[int, list[str]]]:
        """Each run that left connections open, with their names (whose they were)."""
        return [(index, list(run.get("connections_left") or [])) for index, run in enumerate(self.runs, 1)
                if run.get("connections_left")]

    def leftover_lines(self) -> list[str]:
        """A line for each run that left connections open, then one for each whose broker kept
        stale rows of closed connections (noted, not judged: see run/soak.py)."""
        lines = [f"run {index}: {len(names)} connection(s) left open: {_some(names)}" for index, names in self.leftovers()]
        lines += [f"run {index}: {len(rows)} stale row(s) of closed connections in the broker's statistics "
                  f"(no state, no process holding them; not judged): {_some(rows)}"
                  for index, run in enumerate(self.runs, 1) if (rows := list(run.get("stale_connection_rows") or []))]
        return lines

    def table(self) -> list[list[str]]:
        """A header row, then one row a run: its number and each figure ('-' where unknown)."""
        rows = [["run", *FIGURES.values()]]
        for index, run in enumerate(self.runs, 1):
            rows.append([str(index), *(_shown(run.get(name)) for name in FIGURES)])
        return rows

    def record(self) -> dict[str, Any]:
        return {
            "schema_version": SOAK_SCHEMA_VERSION,
            "summary": self.summary_line(),
            "warmup_runs": WARMUP_RUNS,
            "tolerance": {name: {"absolute": a, "fraction": f} for name, (a, f) in TOLERANCE.items()},
            "runs": [{"run": index, **run} for index, run in enumerate(self.runs, 1)],
            "growth": [{"figure": g.figure, "run": g.run, "value": g.value, "ceiling": g.ceiling, "allowed": g.allowed}
                       for g in self.grew],
        }


def _some(names: list[str], most: int = 8) -> str:
    return ", ".join(names[:most]) + (f" (and {len(names) - most} more)" if len(names) > most else "")


def _shown(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if isinstance(value, float) and not value.is_integer() else f"{value:g}"
