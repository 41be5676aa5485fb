"""The resource watch: what each running peer's processes take, from /proc, and its limits
held (peers/limits.py says each limit and what a peer past it gets).

One thread for the harness process, running while any peer runs: every WATCH_INTERVAL_S it
reads the process table once (one read of /proc/PID/stat a process: about 1.5 ms for a
hundred processes) and, for each peer, sums the resident memory and CPU time of its tree,
counts the open files of each of its processes, and keeps the peaks. A peer's tree is
everything containment (core/containment.py) would end with it: below it, in its session
or group, an orphan re-parented to the harness that carries its mark, and whatever was
seen in it before, so a peer cannot put its memory out of sight in a double-forked child.
"""
from __future__ import annotations

import collections
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from ..core.containment import MARK_ENV, Proc
from ..core.proc import TICK, ProcStat, children_map, descendants, scan
from .limits import CPU_WINDOW_S, DEMOTED_NICE, MIB, WATCH_INTERVAL_S, Limits


@dataclass
class Usage:
    """What one peer's processes took: now, at their peak, and in all."""

    rss_bytes: int = 0
    peak_rss_bytes: int = 0
    peak_open_files: int = 0
    cpu_ticks: int = 0  # its processes' CPU time, those that ended included
    peak_cpu_share: float = 0.0  # the most cores it used over a CPU_WINDOW_S
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    demoted: bool = False  # past its CPU share: its processes run at DEMOTED_NICE
    seen: set[Proc] = field(default_factory=set)  # every process ever in its tree

    @property
    def output_bytes(self) -> int:
        return self.stdout_bytes + self.stderr_bytes

    def record(self) -> dict[str, object]:
        return {"peak_rss_mib": round(self.peak_rss_bytes / MIB, 1), "peak_open_files": self.peak_open_files,
                "cpu_s": round(self.cpu_ticks / TICK, 2), "peak_cpu_share": round(self.peak_cpu_share, 2),
                "output_mib": round(self.output_bytes / MIB, 2), "demoted": self.demoted}


class Watched(Protocol):
    """What the watch needs of a peer (peers/process.py's PeerProcess)."""

    name: str
    mark: str
    limits: Limits
    usage: Usage

    @property
    def pid(self) -> int: ...

    def exceeded(self, reason: str) -> None: ...

    def note(self, text: str) -> None: ...


@dataclass
class _State:
    """The watch's memory of one peer between two looks."""

    last_cpu: dict[Proc, int] = field(default_factory=dict)
    gone_cpu: int = 0
    samples: collections.deque = field(default_factory=collections.deque)  # (monotonic time, cpu ticks)
    reniced: set[Proc] = field(default_factory=set)


class ResourceWatch:
    """The harness's one watch thread; peers come and go (`add`, `remove`)."""

    def __init__(self, interval_s: float = WATCH_INTERVAL_S):
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._peers: dict[int, tuple[Watched, _State]] = {}
        self._thread: threading.Thread | None = None
        self._marks: dict[Proc, str] = {}  # the harness's children by their mark ("" for none)

    def add(self, peer: Watched) -> None:
        with self._lock:
            self._peers[id(peer)] = (peer, _State())
            if self._thread is None:
                # A daemon thread that ends with the last peer: a run leaves no thread behind.
                self._thread = threading.Thread(target=self._run, name="acemq-interop-resource-watch", daemon=True)
                self._thread.start()

    def remove(self, peer: Watched) -> None:
        with self._lock:
            self._peers.pop(id(peer), None)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._peers:
                    self._thread = None
                    self._marks.clear()
                    return
                peers = list(self._peers.values())
            try:
                self.look(peers)
            except OSError:  # no /proc here: nothing to watch with
                with self._lock:
                    self._peers.clear()
                continue
            except Exception:  # noqa: BLE001 - a harness bug in one look must not end the watching
                pass
            time.sleep(self.interval_s)

    def look(self, peers: list[tuple[Watched, _State]]) -> None:
        """One look at every peer: its usage brought up to date, its limits held."""
        table = scan()
        children = children_map(table)
        adopted = self._adopted(table, children)
        now = time.monotonic()
        for peer, state in peers:
            members = self._tree(peer, table, children, adopted)
            self._measure(peer, state, members, now)

    def _adopted(self, table: dict[int, ProcStat], children: dict[int, list[int]]) -> dict[str, list[int]]:
        """The harness's children by the mark they carry (an orphan of a peer is re-parented
        to the harness while it is the subreaper); each child's environment read once."""
        marks: dict[str, list[int]] = {}
        for pid in children.get(os.getpid(), []):
            process = Proc.of(table[pid])
            if process not in self._marks:
                self._marks[process] = _mark_of(pid)
            mark = self._marks[process]
            if mark:
                marks.setdefault(mark, []).append(pid)
        for process in [p for p in self._marks if p.pid not in table or table[p.pid].start != p.start]:
            del self._marks[process]
        return marks

    @staticmethod
    def _tree(peer: Watched, table: dict[int, ProcStat], children: dict[int, list[int]],
              adopted: dict[str, list[int]]) -> list[ProcStat]:
        # What was seen in it before and is still there (a child that left its session, then
        # its parent exited) stays its own, with whatever that started since.
        still = [p.pid for p in peer.usage.seen if p.pid in table and table[p.pid].start == p.start]
        roots = [peer.pid, *adopted.get(peer.mark, []), *still]
        pids = set(roots)
        for root in roots:
            pids.update(descendants(root, children))
        return [table[pid] for pid in pids if pid in table and not table[pid].zombie]

    def _measure(self, peer: Watched, state: _State, members: list[ProcStat], now: float) -> None:
        usage, limits = peer.usage, peer.limits
        current = {Proc.of(stat): stat for stat in members}
        usage.seen = set(current)  # the ones gone need no ending
        for process in [p for p in state.last_cpu if p not in current]:
            state.gone_cpu += state.last_cpu.pop(process)
        for process, stat in current.items():
            state.last_cpu[process] = stat.cpu_ticks
        usage.cpu_ticks = state.gone_cpu + sum(state.last_cpu.values())
        usage.rss_bytes = sum(stat.rss_bytes for stat in members)
        usage.peak_rss_bytes = max(usage.peak_rss_bytes, usage.rss_bytes)
        open_files = max((_open_files(stat.pid) for stat in members), default=0)
        usage.peak_open_files = max(usage.peak_open_files, open_files)
        if usage.rss_bytes > limits.memory_mib * MIB:
            self.remove(peer)
            peer.exceeded(f"peer '{peer.name}' exceeded its memory limit ({limits.memory_mib} MiB): "
                          f"its processes held {usage.rss_bytes // MIB} MiB")
            return
        if open_files >= limits.open_files:
            self.remove(peer)
            peer.exceeded(f"peer '{peer.name}' reached its open-files limit ({limits.open_files}): "
                          f"one of its processes had {open_files} open")
            return
        self._share(peer, state, current, now)

    @staticmethod
    def _share(peer: Watched, state: _State, current: dict[Proc, ProcStat], now: float) -> None:
        """The cores the peer used over the last CPU_WINDOW_S; past its share, every process
        and thread of it at the lowest priority (and each one that comes after)."""
        usage, samples = peer.usage, state.samples
        samples.append((now, usage.cpu_ticks))
        while len(samples) > 2 and now - samples[1][0] >= CPU_WINDOW_S:
            samples.popleft()
        since, ticks = samples[0]
        if now - since >= CPU_WINDOW_S * 0.95:
            share = (usage.cpu_ticks - ticks) / TICK / (now - since)
            usage.peak_cpu_share = max(usage.peak_cpu_share, share)
            if share > peer.limits.cpu_share and not usage.demoted:
                usage.demoted = True
                peer.note(f"peer '{peer.name}' used {share:.2f} cores over {now - since:.0f}s, more than its CPU share "
                          f"({peer.limits.cpu_share:g}): its processes run at nice {DEMOTED_NICE} from now on")
        if usage.demoted:
            for process in current:
                if process not in state.reniced:
                    state.reniced.add(process)
                    _renice(process.pid, DEMOTED_NICE)


def _mark_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            for item in handle.read().split(b"\0"):
                if item.startswith(MARK_ENV.encode() + b"="):
                    return item.split(b"=", 1)[1].decode("utf-8", "replace")
    except OSError:
        pass
    return ""


def _open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _renice(pid: int, nice: int) -> None:
    """Every thread of a process (Linux's priority is a thread's; a new thread takes its
    creator's)."""
    try:
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        threads = [pid]
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError:
            pass


WATCH = ResourceWatch()
