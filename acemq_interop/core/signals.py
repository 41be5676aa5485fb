"""Ctrl-C and SIGTERM while the harness cleans up: deferred, never lost, never fatal to it.

A CI job's cancel sends SIGTERM (the CLI turns it into KeyboardInterrupt, like Ctrl-C), and
an impatient user presses Ctrl-C twice. Cleanup (stopping a node, deleting a vhost, shutting
peers down) runs inside `deferred()`: a signal arriving then waits until the block is done.
It is then raised (the default), or, with `reraise=False` (a block that runs while another
exception is already on its way, or one whose caller decides), only recorded: `pending()`
tells the caller that the run was interrupted, so what already ran is still written out.

The CLI installs one handler for both signals from its first line (`install`), so a signal
is never the interpreter's default (a SIGTERM that kills the process where it stands, a
KeyboardInterrupt raised between any two statements). The handler has two modes:
- recording (the default): the signal is only recorded (`pending`; a further one, `again`);
- raising (`arm`): the first signal raises KeyboardInterrupt once, and the handler is back
  to recording before it does, so a burst of signals raises exactly once, where the code
  that armed it is ready for it. `disarm` (the cells have all ended: from here on what ran
  is only written out) is one assignment, so no signal can land between two blocks.
A library caller (a test) that never calls `install` keeps Python's own handlers, and the
blocks below install and restore theirs as before.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_depth = [0]  # nesting of deferred blocks on the main thread: only the outermost defers
_pending = threading.Event()
_again = threading.Event()  # a signal came while absorbed (after a first interrupt)
_installed = [False]  # the CLI's handler is in place (install)
_raising = [False]  # its mode: raise the next signal once (arm), or record it


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


def _handler(signum: int, frame: object) -> None:
    """The CLI's one handler (see the module's doc)."""
    if _pending.is_set():
        _again.set()
    _pending.set()
    if _raising[0] and not _depth[0]:
        _raising[0] = False  # once: every later signal is recorded
        raise KeyboardInterrupt


def install() -> None:
    """The CLI, first thing: SIGINT and SIGTERM recorded, never the default action."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, _handler)
        except (ValueError, OSError):
            return
    _installed[0] = True


def installed() -> bool:
    return _installed[0]


def arm() -> None:
    """From here the next signal raises KeyboardInterrupt (once). A signal recorded before
    is raised now, so it is never lost between recording and raising."""
    if not _installed[0]:
        return
    if _pending.is_set():
        _raising[0] = False
        raise KeyboardInterrupt
    _raising[0] = True


def disarm() -> None:
    """From here every signal is only recorded (`pending`, `again`)."""
    _raising[0] = False


def armed() -> bool:
    return _installed[0] and _raising[0]


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
    if _installed[0]:
        disarm()
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
    if _installed[0]:
        disarm()
        return
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
    thread can do this; a block inside another leaves it to the outer one. Under the CLI's
    handler a signal is raised at the end only where the handler was armed."""
    if threading.current_thread() is not threading.main_thread() or _depth[0]:
        yield
        return
    if _installed[0]:
        was_pending = _pending.is_set()
        _depth[0] += 1
        try:
            yield
        finally:
            _depth[0] -= 1
            if _pending.is_set() and not was_pending and _raising[0]:
                _raising[0] = False  # caught here: raised now, or left to the caller (pending)
                if reraise:
                    raise KeyboardInterrupt
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
    _raising[0] = False
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, signal.SIG_IGN)
        except (ValueError, OSError):
            pass


def uninstall(previous: dict) -> None:
    """A caller in Python that ran the CLI (a test): its own handlers back, nothing armed."""
    _raising[0] = False
    _installed[0] = False
    for signum, handler in previous.items():
        try:
            signal.signal(signum, handler)
        except (ValueError, OSError, TypeError):
            pass
