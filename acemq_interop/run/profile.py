"""Where a run's time goes (`run --profile`): CPU seconds of the harness, the broker and each
peer; the harness's own profile by function; and, per cell, the time spent waiting on what a
scenario provokes (timers, a peer's answer, the broker) against the time spent working.

The harness profile is sampled, not traced: a thread looks at every thread's stack every
few milliseconds (`sys._current_frames`), so the cells run at their own speed and the
figures cover the worker threads, the peers' reader threads and the tracer alike. A thread
counts as working when its CPU clock moved since the last look; then its top frame counts
(self) and every frame below it once (cumulative). Threads that did not run are waiting.
"""
from __future__ import annotations

import json
import resource
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable


SAMPLE_S = 0.005
_RUNNING_CPU_S = 0.0005  # CPU a thread must have used since the last look to count as working
# Frames that mean a thread is blocked, not working: a lock, a socket, a sleep, a queue.
_WAITING = ("wait", "sleep", "select", "poll", "acquire", "recv", "recv_into", "readline", "read", "accept",
            "_wait_for_tstate_lock", "get")


def harness_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Sampler:
    """Samples every thread's stack until stopped; `top` says where the harness was."""

    def __init__(self, interval_s: float = SAMPLE_S) -> None:
        self._interval = interval_s
        self._stop = threading.Event()
        self.self_samples: Counter[str] = Counter()
        self.cumulative: Counter[str] = Counter()
        self.samples = 0
        self.waiting = 0
        self._thread = threading.Thread(target=self._run, name="profile-sampler", daemon=True)

    def start(self) -> "Sampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        me = threading.get_ident()
        last: dict[int, float] = {}
        while not self._stop.wait(self._interval):
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                # A thread is working when its own CPU clock moved since the last look: one
                # blocked in C (a socket read, a queue) shows no Python frame that says so.
                try:
                    cpu = time.clock_gettime(time.pthread_getcpuclockid(ident))
                except (OSError, ValueError, OverflowError):
                    continue
                moved, last[ident] = cpu - last.get(ident, cpu), cpu
                self.samples += 1
                if moved < _RUNNING_CPU_S or frame.f_code.co_name in _WAITING:
                    self.waiting += 1
                    continue
                self.self_samples[_where(frame)] += 1
                seen: set[str] = set()
                while frame is not None:
                    where = _where(frame)
                    if where not in seen:
                        self.cumulative[where] += 1
                        seen.add(where)
                    frame = frame.f_back  # type: ignore[assignment]

    def top(self, count: int = 25) -> list[dict[str, Any]]:
        working = max(1, self.samples - self.waiting)
        return [{"function": where, "self_samples": n, "self_share": round(n / working, 3),
                 "cumulative_share": round(self.cumulative[where] / working, 3)}
                for where, n in self.self_samples.most_common(count)]


def _where(frame: Any) -> str:
    code = frame.f_code
    path = code.co_filename
    marker = "acemq_interop/"
    short = path[path.index(marker):] if marker in path else Path(path).name
    return f"{short}:{code.co_name}"


@dataclass
class CellClock:
    """Per cell: seconds spent waiting on what the scenario provoked, by kind of wait."""

    waits: Counter[str] = field(default_factory=Counter)

    def waited(self, kind: str, seconds: float) -> None:
        self.waits[kind] += max(0.0, seconds)

    @property
    def total(self) -> float:
        return sum(self.waits.values())


def cells_summary(clocks: Iterable[tuple[str, float, CellClock]]) -> dict[str, Any]:
    """Across the cells: their summed duration, how much of it was waiting (by kind), the rest working."""
    duration = waiting = 0.0
    by_kind: Counter[str] = Counter()
    slowest: list[tuple[float, str, float]] = []
    for cell_id, seconds, clock in clocks:
        duration += seconds
        waiting += min(seconds, clock.total)
        by_kind.update(clock.waits)
        slowest.append((seconds, cell_id, clock.total))
    slowest.sort(reverse=True)
    return {"cells_s": round(duration, 1), "waiting_s": round(waiting, 1), "working_s": round(duration - waiting, 1),
            "waiting_by_kind_s": {k: round(v, 1) for k, v in by_kind.most_common()},
            "slowest": [{"cell": c, "seconds": round(s, 2), "waiting_s": round(w, 2)} for s, c, w in slowest[:10]]}


def write(profile: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "profile.json"
    path.write_text(json.dumps(profile, indent=1) + "\n", encoding="utf-8")
    return path


def text(profile: dict[str, Any]) -> str:
    """The profile as a person reads it at the end of a run."""
    cpu = profile["cpu_s"]
    lines = [f"Profile: {profile['wall_s']:.1f}s wall; CPU seconds: harness {cpu['harness']:.1f}, broker "
             + (f"{cpu['broker']:.1f}" if cpu.get("broker") is not None else "not measured (not the harness's own)")
             + ", " + ", ".join(f"{name} {s:.1f}" if s is not None else f"{name} ?" for name, s in sorted(cpu["peers"].items()))]
    cells = profile["cells"]
    lines.append(f"Cells: {cells['cells_s']:.1f}s summed, {cells['waiting_s']:.1f}s waiting on what the scenarios provoke ("
                 + ", ".join(f"{k} {v:.1f}s" for k, v in cells["waiting_by_kind_s"].items())
                 + f"), {cells['working_s']:.1f}s the rest (peer commands, the probe, cleanup)")
    lines.append("Harness by function (share of the samples that were working, self / cumulative):")
    lines += [f"  {row['self_share']:6.1%} {row['cumulative_share']:6.1%}  {row['function']}" for row in profile["harness"][:15]]
    return "\n".join(lines)
