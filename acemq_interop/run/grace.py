"""How late a binding may end a wait its timeout bounds: the cell's grace, measured.

An upper bound on a budget (`no_later_than: 2000` on an `elapsed_ms`) holds when the value
is at most the budget plus this grace. The grace is not a guess: it is derived from the
cell's own round trips to its peers (each `requester.open` and `counters` command, from the
harness's send to the peer's answer), so a loaded machine widens it and a quiet one narrows
it. A timer that fires late under load is late by about what a command waits in the same
peer's queue and the broker's; a defect that restarts or stretches the budget is late by a
fraction of the budget itself, which the scenarios make far larger than this.

And from the machine's own timers: a meter thread of the harness sleeps a few milliseconds
at a time and records how late it wakes. On a machine so loaded that the harness's own
timers fire late, a peer's fire late by as much, and no round trip need show it (a thread
woken late after its command was answered): the grace adds the worst lateness the meter saw
while the cell ran. On a quiet machine that is about a millisecond.
"""
from __future__ import annotations

import threading
import time
from collections import deque
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
    timer_lag_ms: float = 0.0  # how late the harness's own timers woke while the cell ran, at worst

    def explain(self) -> str:
        lag = f" + the machine's worst timer lateness while the cell ran ({self.timer_lag_ms:.0f} ms)" if self.timer_lag_ms >= 1 else ""
        return (f"grace {self.ms:.0f} ms = {FLOOR_MS:.0f} + {FACTOR:g} x the cell's slowest command round trip "
                f"({self.slowest_ms:.0f} ms of {self.samples}){lag}")


class TimerLag:
    """How late a thread sleeping TICK_S at a time wakes: the machine's timer lateness, kept
    for the last WINDOW_S seconds (one meter per process, started on first use).

    Kept as the worst wake-up of each BUCKET_S, not every wake-up: 60 000 samples a window
    held about 10 MiB, which the soak (`run --repeat`) saw as the harness growing over its
    first ten minutes. A bucket counts for a cell if it ended after the cell started, so a
    cell's grace may take in a wake-up at most BUCKET_S before its start."""

    TICK_S = 0.01
    BUCKET_S = 0.1
    WINDOW_S = 600.0

    def __init__(self) -> None:
        self._buckets: deque[list[float]] = deque()  # [first wake-up, last wake-up, worst lateness]
        self._lock = threading.Lock()
        threading.Thread(target=self._run, name="timer-lag", daemon=True).start()

    def _run(self) -> None:
        while True:
            asked = time.monotonic()
            time.sleep(self.TICK_S)
            now = time.monotonic()
            self._note(now, max(0.0, now - asked - self.TICK_S))

    def _note(self, now: float, lag: float) -> None:
        with self._lock:
            last = self._buckets[-1] if self._buckets else None
            if last is not None and now - last[0] < self.BUCKET_S:
                last[1], last[2] = now, max(last[2], lag)
            else:
                self._buckets.append([now, now, lag])
            while self._buckets and self._buckets[0][1] < now - self.WINDOW_S:
                self._buckets.popleft()

    def worst_since(self, since: float) -> float:
        """The worst lateness (seconds) of a wake-up since `since` (a time.monotonic())."""
        with self._lock:
            return max((worst for _, last, worst in self._buckets if last >= since), default=0.0)


_meter: TimerLag | None = None
_meter_lock = threading.Lock()


def timer_lag() -> TimerLag:
    global _meter
    with _meter_lock:
        if _meter is None:
            _meter = TimerLag()
        return _meter


def of_trace(trace: Iterable[dict[str, Any]], since: float | None = None) -> Grace:
    """The grace a cell has earned by now, from the round trips its trace records and, with
    `since` (the cell's start), the harness's own timer lateness since then."""
    rtts = [float(e["rtt_ms"]) for e in trace
            if e.get("step") in MEASURED_OPS and isinstance(e.get("rtt_ms"), (int, float))]
    slowest = max(rtts, default=0.0)
    lag_ms = timer_lag().worst_since(since) * 1000 if since is not None else 0.0
    return Grace(ms=FLOOR_MS + FACTOR * slowest + lag_ms, slowest_ms=slowest, samples=len(rtts), timer_lag_ms=lag_ms)
