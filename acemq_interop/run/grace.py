"""How late a binding may end a wait its timeout bounds: the cell's grace, measured.

An upper bound on a budget (`no_later_than: 2000` on an `elapsed_ms`) holds when the value
is at most the budget plus this grace. The grace is not a guess: it is derived from the
cell's own round trips to its peers (each `requester.open` and `counters` command, from the
harness's send to the peer's answer), so a loaded machine widens it and a quiet one narrows
it. A timer that fires late under load is late by about what a command waits in the same
peer's queue and the broker's; a defect that restarts or stretches the budget is late by a
fraction of the budget itself, which the scenarios make far larger than this.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

FLOOR_MS = 200.0  # a timer wheel's tick, a GC pause, a thread switch on a 2-core machine
FACTOR = 2.0  # a timer's wake-up and its answer each wait about one round trip under the same load
MEASURED_OPS = ("requester.open", "counters")  # quick commands: no broker wait beyond a declare


@dataclass(frozen=True)
class Grace:
    ms: float
    slowest_ms: float  # the cell's slowest measured round trip so far
    samples: int

    def explain(self) -> str:
        return (f"grace {self.ms:.0f} ms = {FLOOR_MS:.0f} + {FACTOR:g} x the cell's slowest command round trip "
                f"({self.slowest_ms:.0f} ms of {self.samples})")


def of_trace(trace: Iterable[dict[str, Any]]) -> Grace:
    """The grace a cell has earned by now, from the round trips its trace records."""
    rtts = [float(e["rtt_ms"]) for e in trace
            if e.get("step") in MEASURED_OPS and isinstance(e.get("rtt_ms"), (int, float))]
    slowest = max(rtts, default=0.0)
    return Grace(ms=FLOOR_MS + FACTOR * slowest, slowest_ms=slowest, samples=len(rtts))
