"""Observer hooks: how a service (or the peer adapter) hears what a binding does.

Subclass and override what you need; every method is a no-op by default.
Hooks run on the binding's own threads, so keep them short and thread-safe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .responder import Request


class RequesterObserver:
    def unmatched(self, correlation_id: Optional[str], response_message_id: Optional[str] = None) -> None:
        """A reply was counted Unmatched and dropped (RR-8, SG-8).

        ``correlation_id`` is the reply's AMQP correlation_id and ``response_message_id``
        its ``responseMessageId`` header, each None when the reply has none.
        """

    def connection_lost(self, reason: str) -> None:
        """The broker or the network closed the requester's connection or reply channel.

        ``reason`` is pika's text (reply code and text where the broker gave them).
        Not called when the requester is closed by its owner. Pending calls end with
        ConnectionLost; the requester then reconnects by itself (``recovered``).
        """

    def recovered(self) -> None:
        """The requester is connected again and consumes its new reply queue."""


class ResponderObserver:
    def handled(self, request: "Request") -> None:
        """The handler is about to run for ``request``."""

    def replied(self, message_id: Optional[str], failure: Optional[str]) -> None:
        """A reply (a failure reply when ``failure`` is set) was confirmed and not returned."""

    def reply_failed(self, message_id: Optional[str], attempt: int, error: str) -> None:
        """A reply publish was returned, nacked or lost with its channel (RR-14)."""

    def dead_lettered(self, message_id: Optional[str], reason: str) -> None:
        """The request was published to ``{queue}.dlq`` (confirmed) and acknowledged."""

    def unanswerable(self, message_id: Optional[str]) -> None:
        """A request naming no reply address was counted and acknowledged (RR-12)."""

    def connection_lost(self, reason: str) -> None:
        """The broker or the network closed the responder's connection or consumer channel.

        Not called when the responder is stopped by its owner. The responder then
        reconnects by itself (``recovered``); requests it held come back from the queue.
        """

    def recovered(self) -> None:
        """The responder is connected again, has declared its queues and consumes again."""
