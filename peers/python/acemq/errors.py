"""Errors a caller of the binding can catch."""

from __future__ import annotations

from typing import Any, Optional


class AcemqError(Exception):
    """Base class of every error the binding raises on purpose."""


class RequestTimedOut(AcemqError):
    """No reply arrived within the call's timeout (RR-9).

    The request may still be processed: a timeout says no answer arrived,
    not that nothing happened.
    """

    def __init__(self, request_id: str, timeout: float) -> None:
        super().__init__(f"no reply to {request_id} within {timeout:g} s")
        self.request_id = request_id
        self.timeout = timeout


class ResponderFailed(AcemqError):
    """The responder's handler failed; ``failure`` is its ``acemq-error`` text (RR-10)."""

    def __init__(self, request_id: str, failure: str) -> None:
        super().__init__(failure)
        self.request_id = request_id
        self.failure = failure


class ReplyDecodeError(AcemqError):
    """A reply without ``acemq-error`` whose body is not JSON (RR-19)."""

    def __init__(self, request_id: str, reason: str) -> None:
        super().__init__(reason)
        self.request_id = request_id
        self.reason = reason


class RequestTimeoutError(AcemqError):
    """A gather with an expected reply count ended short (SG-6).

    ``partial_replies`` holds every reply that arrived, in arrival order.
    """

    def __init__(self, request_id: str, expected: int, partial_replies: list[Any]) -> None:
        super().__init__(
            f"gather {request_id}: {len(partial_replies)} of {expected} replies before the timeout"
        )
        self.request_id = request_id
        self.expected = expected
        self.partial_replies = partial_replies


class RequestRefused(AcemqError):
    """The broker did not accept a request: returned as unroutable, nacked, or refused."""


class ShortStringTooLong(AcemqError, ValueError):
    """A short-string property would exceed 255 bytes (RR-18); it is never truncated."""

    def __init__(self, name: str, length: int) -> None:
        super().__init__(f"{name} is {length} bytes of UTF-8; an AMQP short string holds at most 255")
        self.name = name
        self.length = length


class ConnectionLost(AcemqError):
    """The requester's connection was lost while the call was pending (RR-20.1), or is down
    and not coming back: its reply queue died with it, so no reply can reach the call.

    Not a timeout, and not counted in ``timed_out``. ``reason`` is the client's text
    (``320 CONNECTION_FORCED - ...``). The requester reconnects by itself; a later call
    goes out on its new reply queue.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"connection lost: {reason}")
        self.reason = reason


class RequesterClosed(AcemqError):
    """The requester was closed while the call was pending, or before it started."""


def describe(exc: Optional[BaseException]) -> str:
    """A one-line description of an error for logs and protocol answers."""
    if exc is None:
        return "unknown error"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
