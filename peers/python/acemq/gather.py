"""The state of one scatter-gather (SG-5..SG-8), free of any I/O.

A Gather collects replies in arrival order. With an expected count it
completes as soon as the count is reached; at its deadline it either resolves
(no count given: the timeout is a budget) or fails with RequestTimeoutError
holding the partial replies. Once finished it accepts nothing more, so a late
reply is the caller's to count as Unmatched.

Whether a reply is still taken is decided under the gather's lock together with
taking it: a reply arriving once the count is in or the deadline has passed is
refused even while nobody has yet woken to finish the gather (SG-8.1).
"""

from __future__ import annotations

import threading
import time
from enum import Enum
from typing import Any, Callable, Optional

from .errors import ConnectionLost, RequesterClosed, RequestTimeoutError


class GatherState(Enum):
    COLLECTING = "collecting"
    RESOLVED = "resolved"
    REJECTED = "rejected"
    CLOSED = "closed"  # its requester was closed while it collected
    LOST = "lost"  # its requester's connection was lost while it collected (RR-20.1)


class Gather:
    def __init__(
        self,
        request_id: str,
        correlation_id: Optional[str],
        expected_reply_count: Optional[int] = None,
        on_reply: Optional[Callable[[Any], None]] = None,
        rejects_shortfall: bool = True,
        resolves_early: bool = True,
        restarts_per_reply: bool = False,
    ) -> None:
        if expected_reply_count is not None and expected_reply_count < 1:
            raise ValueError("expected_reply_count must be at least 1")
        self.request_id = request_id
        self.correlation_id = correlation_id
        self.expected_reply_count = expected_reply_count
        self._on_reply = on_reply
        # SG-6: a shortfall rejects (False resolves with the partial replies instead).
        self._rejects_shortfall = rejects_shortfall
        # SG-5: a reached count resolves at once (False waits for the deadline).
        self._resolves_early = resolves_early
        # SG-9 forbids True: every reply taken starts the timeout again.
        self._restarts_per_reply = restarts_per_reply
        # Armed (time.monotonic) once the gather is published; None until then.
        self._deadline: Optional[float] = None
        self._timeout = 0.0
        self._lock = threading.Lock()
        self._replies: list[Any] = []
        self._state = GatherState.COLLECTING
        self._done = threading.Event()
        self._lost_reason = ""
        # Whether the deadline ended it (a shortfall, or a count-less gather's budget spent),
        # rather than its count, a failed publish or its requester's close.
        self.expired = False

    @property
    def state(self) -> GatherState:
        with self._lock:
            return self._state

    @property
    def replies(self) -> list[Any]:
        with self._lock:
            return list(self._replies)

    def arm(self, timeout: float) -> None:
        """Start the timeout: the gather ends ``timeout`` seconds from now (SG-9)."""
        with self._lock:
            self._timeout = timeout
            self._deadline = time.monotonic() + timeout

    def add(self, reply: Any) -> bool:
        """Take one reply; False when the gather has finished, holds its count or is past its
        deadline (Unmatched)."""
        with self._lock:
            if not self._open():
                return False
            self._replies.append(reply)
            if self._restarts_per_reply and self._deadline is not None:
                self._deadline = time.monotonic() + self._timeout
            if self._count_reached() and self._resolves_early:
                self._state = GatherState.RESOLVED
                self._done.set()
        if self._on_reply is not None:
            self._on_reply(reply)
        return True

    def accepting(self) -> bool:
        """Whether a reply arriving now would be taken (the gather is pending)."""
        with self._lock:
            return self._open()

    def _open(self) -> bool:
        """Whether it takes replies; called with the lock held. A passed deadline ends it here
        and now, rather than when its waiter wakes."""
        if self._state is not GatherState.COLLECTING or self._count_reached():
            return False
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self._expire()
            return False
        return True

    def expire(self) -> GatherState:
        """The deadline passed: finish now, unless the count was reached first."""
        with self._lock:
            self._expire()
            return self._state

    def _expire(self) -> None:
        if self._state is GatherState.COLLECTING:
            shortfall = self.expected_reply_count is not None and not self._count_reached()
            if shortfall and self._rejects_shortfall:
                self._state = GatherState.REJECTED
            else:
                self._state = GatherState.RESOLVED
            self.expired = True
            self._done.set()

    @property
    def done(self) -> bool:
        """Whether it has finished (resolved, rejected or closed)."""
        return self._done.is_set()

    def _count_reached(self) -> bool:
        """Whether the expected count has arrived; called with the lock held."""
        return self.expected_reply_count is not None and len(self._replies) >= self.expected_reply_count

    def cancel(self) -> None:
        """Finish as a shortfall (the requester closed); no-op when already finished."""
        with self._lock:
            if self._state is GatherState.COLLECTING:
                self._state = GatherState.REJECTED
                self._done.set()

    def close(self) -> None:
        """Finish at once because the requester closed: ``wait`` raises RequesterClosed."""
        with self._lock:
            if self._state is GatherState.COLLECTING:
                self._state = GatherState.CLOSED
                self._done.set()

    def lose(self, reason: str) -> None:
        """Finish at once because the connection was lost (RR-20.1): ``wait`` raises ConnectionLost."""
        with self._lock:
            if self._state is GatherState.COLLECTING:
                self._state = GatherState.LOST
                self._lost_reason = reason
                self._done.set()

    def wait(self, timeout: Optional[float] = None) -> list[Any]:
        """Block until finished or past the deadline (armed now with ``timeout`` when it was not
        yet); the replies, or RequestTimeoutError (a shortfall), or RequesterClosed."""
        with self._lock:
            if self._deadline is None:
                self._timeout = timeout or 0.0
                self._deadline = time.monotonic() + self._timeout
        while True:
            with self._lock:
                remaining = self._deadline - time.monotonic()  # it moves under restarts_per_reply
            if remaining <= 0 or self._done.wait(remaining):
                break
        state = self.expire()
        if state is GatherState.CLOSED:
            raise RequesterClosed("the requester was closed")
        if state is GatherState.LOST:
            raise ConnectionLost(self._lost_reason)
        if state is GatherState.REJECTED:
            raise RequestTimeoutError(self.request_id, self.expected_reply_count or 0, self.replies)
        return self.replies
