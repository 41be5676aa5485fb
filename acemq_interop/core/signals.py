"""Ctrl-C and SIGTERM while the harness cleans up: deferred, never lost, never fatal to it.

A CI job's cancel sends SIGTERM (the CLI turns it into KeyboardInterrupt, like Ctrl-C), and
an impatient user presses Ctrl-C twice. Cleanup (stopping a node, deleting a vhost, shutting
peers down) runs inside `deferred()`: a signal arriving then waits until the block is done.
It is then raised (the default), or, with `reraise=False` (a block that runs while another
exception is already on its way, or one whose caller decides), only recorded: `pending()`
tells the caller that the run was interrupted, so what already ran is still written out.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_depth = [0]  # nesting of deferred blocks on the main thread: only the outermost defers
_pending = threading.Event()
_again = threading.Event()  # a signal came while absorbed (after a first interrupt)


def pending() -> bool:
    """Whether a signal was caught by a deferred block (and not raised) in this process."""
    return _pending.is_set()


def clear() -> None:
    """A new run starts: an earlier run's interrupt is not this one's."""
    _pending.clear()
    _again.clear()


def again() -> bool:
    """Whether a signal came while absorbed: the user asks to stop waiting."""
    return _again.is_set()


def _absorb_handler(signum: int, frame: object) -> None:
    _pending.set()
    _again.set()


@contextmanager
def absorbed() -> Iterator[None]:
    """After a first interrupt, while what ran is wound down and written out: a further
    signal is recorded (`pending`, `again`), never raised, so it cannot lose the results.
    Main thread only (elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, _absorb_handler)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def absorb() -> None:
    """The same for the rest of the process (the CLI, once it holds an interrupted run)."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(signum, _absorb_handler)
            except (ValueError, OSError):
                pass


def note_interrupt() -> None:
    """Record an interrupt the caller handled itself (so later code knows the run was cut)."""
    _pending.set()


@contextmanager
def deferred(reraise: bool = True) -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is done; then the first of them is raised as
    KeyboardInterrupt (or, with reraise=False, only recorded for `pending`). Only the main
    thread can do this; a block inside another leaves it to the outer one."""
    if threading.current_thread() is not threading.main_thread() or _depth[0]:
        yield
        return
    caught: list[int] = []

    def catch(signum: int, frame: object) -> None:
        caught.append(signum)
        _pending.set()

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, catch)
        except (ValueError, OSError):
            pass
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught and reraise:
            raise KeyboardInterrupt


def ignore_from_now() -> None:
    """At the very end of the CLI: a late signal cannot interrupt the interpreter's exit
    (it joins the cell threads still winding down after an interrupt)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, signal.SIG_IGN)
        except (ValueError, OSError):
            pass
