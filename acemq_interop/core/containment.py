"""Containment: every process a peer starts is the run's to end.

A peer runs in a session (and process group) of its own, and its group is killed when it
stops. A process that leaves the group (`setsid`) or the tree (a double fork: its parent
exits at once) used to outlive the run: re-parented to init, nothing of the harness's
looked for it again. So, on Linux, the harness makes itself the *child subreaper* of what it
starts (`prctl(PR_SET_CHILD_SUBREAPER, 1)`): an orphan is re-parented to the harness
instead of init, stays its descendant, and is found, ended and reaped (a re-parented child
that exits is the harness's zombie until it is waited for).

It is the subreaper only while a peer of it runs (`adopt`, from just before a peer starts
to the end of its shutdown; peers/process.py), never for a whole session: the flag is the
process's, and adopts every orphan below it, not only a peer's. A private node's VM
(`rabbitmq-server -detached` leaves it to whoever reaps orphans) and epmd (every Erlang
node's on the machine) are started before the peers and stopped after them; held for the
session, the harness adopted both, and a SIGKILLed harness's children were no longer only
its peers but a node and a daemon that rightly outlive it (a killed run's node is for
`doctor --clean` or the next run to sweep).

Four things name a process as a peer's (peers/process.py asks `tree_of`): it is in the
peer's session or group, or below the peer; it holds one of the peer's pipes (a child
inherits them, and a daemon that keeps them holds a CI job's output open); it carries the
peer's mark in its environment (MARK_ENV, inherited by whatever the peer starts unless it
clears it); it was seen in the peer's tree earlier (the resource watch keeps what it saw).
At the end of a session every
process that became the harness's descendant during it, in a session that is not the
harness's own, is ended too (`Containment.close`): a peer's orphan that cleared its
environment is still one of those, and nothing the harness started in its own session (a
test's helper, a build still under way) is.

Where prctl is unavailable (not Linux), orphans go to init as before: `doctor` says so, and
the run names each process carrying a peer's mark that it could not end.
"""
from __future__ import annotations

import ctypes
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable

from .ownership import SHARED_PROCESSES
from .proc import ProcStat, argv_of, children_map, descendants, scan, stat_of

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
# Every peer of this harness process carries `MARK_ENV=<RUN_MARK>/<peer>/<n>`: the token is
# new per harness process, so a mark is never another harness's (another run on the machine).
MARK_ENV = "ACEMQ_INTEROP_CONTAINED"
RUN_MARK = f"{os.getpid()}.{secrets.token_hex(6)}"
END_BOUND_S = 5.0


@dataclass(frozen=True)
class Proc:
    """One process for good: its pid and its start time (a pid given again later is another)."""

    pid: int
    start: int

    @classmethod
    def of(cls, stat: ProcStat) -> "Proc":
        return cls(stat.pid, stat.start)

    def now(self) -> ProcStat | None:
        """This process as it is now (a zombie too), or None when it is gone or the pid is another's."""
        stat = stat_of(self.pid)
        return stat if stat is not None and stat.start == self.start else None

    def alive(self) -> bool:
        stat = self.now()
        return stat is not None and not stat.zombie

    def describe(self) -> str:
        return f"pid {self.pid} ({argv_of(self.pid)})"


# -- the subreaper -------------------------------------------------------------------------


def _prctl(option: int, value: int | ctypes.c_int) -> str | None:
    """One prctl call; None when it worked, else why not (for a person)."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform}): prctl(PR_SET_CHILD_SUBREAPER) is Linux's"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        argument = ctypes.byref(value) if isinstance(value, ctypes.c_int) else ctypes.c_ulong(value)
        if libc.prctl(ctypes.c_int(option), argument, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            error = ctypes.get_errno()
            return f"prctl refused: {os.strerror(error)}"
    except (OSError, AttributeError) as exc:
        return f"prctl is not reachable: {exc}"
    return None


def subreaper_problem() -> str | None:
    """Why the harness cannot adopt a peer's orphans here, or None when it can (`doctor`).
    Asks without changing anything: reading the flag works wherever setting it does."""
    flag = ctypes.c_int(0)
    problem = _prctl(PR_GET_CHILD_SUBREAPER, flag)
    if problem is None and not os.path.isdir("/proc/self"):
        problem = "no /proc: the harness cannot find what a peer started"
    return problem


def is_subreaper() -> bool:
    flag = ctypes.c_int(0)
    return _prctl(PR_GET_CHILD_SUBREAPER, flag) is None and bool(flag.value)


_lock = threading.Lock()
_holders = 0  # the peers running now (each holds the subreaper flag)
_was_subreaper = False
_sessions = 0  # the sessions under way in this process (each sweeps at its end)


def adopt() -> str | None:
    """The harness is a subreaper while any peer of it runs (peers may overlap, and so may
    sessions in one process, e.g. a test's): called before a peer starts, `let_go` after its
    shutdown. None when it is, else why not (then `let_go` is not called)."""
    global _holders, _was_subreaper
    with _lock:
        if _holders == 0:
            _was_subreaper = is_subreaper()
            problem = None if _was_subreaper else _prctl(PR_SET_CHILD_SUBREAPER, 1)
            if problem is not None:
                return problem
        _holders += 1
        return None


def let_go() -> None:
    """One peer fewer: with none left, orphans go to init again (what was adopted stays)."""
    global _holders
    with _lock:
        _holders -= 1
        if _holders == 0 and not _was_subreaper:
            _prctl(PR_SET_CHILD_SUBREAPER, 0)


def _others_hold(held: bool) -> bool:
    """Whether another session of this process is under way (its peers are not leftovers)."""
    with _lock:
        return _sessions > (1 if held else 0)


# -- finding and ending ----------------------------------------------------------------------


def marked(mark: str, prefix: bool = False) -> list[Proc]:
    """The processes whose environment carries MARK_ENV with this value (`prefix`: starting
    with it). A process that cleared its environment is not found here (see the module doc)."""
    wanted = f"{MARK_ENV}={mark}".encode()
    found = []
    for pid in (int(e) for e in _listdir_proc() if e.isdigit()):
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                env = handle.read().split(b"\0")
        except OSError:
            continue
        if any(item.startswith(wanted) if prefix else item == wanted for item in env):
            stat = stat_of(pid)
            if stat is not None:
                found.append(Proc.of(stat))
    return found


def _listdir_proc() -> list[str]:
    try:
        return os.listdir("/proc")
    except OSError:
        return []


def pipe_inodes(fds: Iterable[int]) -> set[int]:
    """The inodes of the pipes behind these descriptors (the harness's ends of a peer's pipes)."""
    inodes = set()
    for fd in fds:
        try:
            inodes.add(os.fstat(fd).st_ino)
        except OSError:
            pass
    return inodes


def _holds(pid: int, inodes: set[int]) -> bool:
    """Whether the process has one of these pipes open."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("pipe:[") and int(target[6:-1]) in inodes:
                return True
    except OSError:
        pass
    return False


def tree_of(root: int, mark: str, seen: Iterable[Proc] = (), pipes: set[int] = frozenset()) -> set[Proc]:
    """Every live process that is a peer's (`root` its pid, `mark` its MARK_ENV value, `pipes`
    the inodes of its stdin, stdout and stderr), the peer itself included, among the
    harness's descendants: below it, in its session or group (a session id is a pid, given
    again once the session is gone: only a descendant's is trusted), holding one of its
    pipes; anywhere: carrying its mark, or `seen` in its tree before and still the same process."""
    try:
        table = scan()
    except OSError:
        table = {}
    found: set[Proc] = set()
    if table:
        children = children_map(table)
        mine = set(descendants(os.getpid(), children))
        below = set(descendants(root, children)) | ({root} if root in table else set())
        for pid in mine:
            stat = table[pid]
            if pid in below or stat.sid == root or stat.pgid == root or (pipes and _holds(pid, pipes)):
                found.add(Proc.of(stat))
    found.update(marked(mark))
    found.update(p for p in seen if p.now() is not None)
    return found


def end(processes: Iterable[Proc], bound_s: float = END_BOUND_S, reap_too: bool = True) -> list[Proc]:
    """SIGKILL each process (a stopped one too), wait until none is alive (bounded), and reap
    those that are the harness's children now (re-parented orphans: never a child a Popen
    owns, whose exit status is its own to collect; the caller leaves those out). The ones
    still alive after the bound (another user's, say), for the caller to name."""
    targets = [p for p in processes if p.pid != os.getpid()]
    for process in targets:
        if process.now() is not None:
            try:
                os.kill(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + bound_s
    while True:
        if reap_too:
            reap(targets)
        left = [p for p in targets if p.alive()]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def reap(processes: Iterable[Proc]) -> None:
    """Collect the exit of each of these that is a zombie child of the harness (a re-parented
    orphan stays one until it is waited for)."""
    me = os.getpid()
    for process in processes:
        stat = process.now()
        if stat is not None and stat.zombie and stat.ppid == me:
            try:
                os.waitpid(process.pid, os.WNOHANG)
            except ChildProcessError:
                pass


# -- a session's containment ---------------------------------------------------------------


@dataclass
class ContainmentRecord:
    """What a session's containment came to: whether the harness could adopt orphans, the
    processes it ended at the end, those it could not end (named in the log and the summary)."""

    subreaper: bool
    problem: str | None = None
    ended: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def record(self) -> dict[str, object]:
        return {"subreaper": self.subreaper, "problem": self.problem, "ended": self.ended, "left": self.left}


class Containment:
    """One session's containment: whether the harness can adopt its peers' orphans here (it
    does while each peer runs, `adopt`), and the sweep at the session's end."""

    def __init__(self) -> None:
        self.problem: str | None = None
        self._baseline: set[Proc] = set()
        self._held = False

    def __enter__(self) -> "Containment":
        global _sessions
        self.problem = subreaper_problem()
        with _lock:
            _sessions += 1
        self._held = True
        self._baseline = self._descendants()
        return self

    def __exit__(self, *exc: object) -> None:
        global _sessions
        if self._held:
            self._held = False
            with _lock:
                _sessions -= 1

    @staticmethod
    def _descendants() -> set[Proc]:
        try:
            table = scan()
        except OSError:
            return set()
        return {Proc.of(table[pid]) for pid in descendants(os.getpid(), children_map(table)) if pid in table}

    def close(self) -> ContainmentRecord:
        """End every process that became the harness's descendant during the session in a
        session that is not the harness's own (what a peer left: the harness runs its own
        helpers in its session, and a peer in one of its own), every process carrying a mark
        of this harness's peers, and reap them. epmd is spared: it is every Erlang node's on
        the machine (core/ownership.py), should one be started while a peer runs. Sessions that
        overlap in one process (a test's) leave the sweep to the last to end: until then
        what is new may be the other's, and each peer's own processes went with it already."""
        record = ContainmentRecord(subreaper=self.problem is None, problem=self.problem)
        if _others_hold(self._held):
            self.__exit__()
            return record
        own_session = os.getsid(0)
        leftovers: set[Proc] = set()
        for process in self._descendants() - self._baseline:
            stat = process.now()
            if stat is None or stat.sid == own_session:
                continue
            if not stat.zombie and _comm(process.pid) in SHARED_PROCESSES:
                continue  # a zombie is reaped whatever it was (epmd's own daemonizing leaves two)
            leftovers.add(process)
        leftovers.update(marked(RUN_MARK + "/", prefix=True))
        alive = [p for p in leftovers if p.alive()]
        names = {p: p.describe() for p in alive}
        left = end(leftovers)
        record.ended = [names[p] for p in alive if p not in left]
        record.left = [p.describe() for p in left]
        self.__exit__()
        return record


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
