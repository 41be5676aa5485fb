"""Mandatory, confirmed publishing (RR-13), many publishes outstanding at once.

BlockingChannel's ``confirm_delivery`` makes every ``basic_publish`` wait for its
ack on the connection's I/O thread, so one requester or responder could have only
one publish outstanding. The publisher therefore drives the asynchronous channel
underneath the BlockingChannel (``_impl``, pika's own ``Channel``) on the I/O
thread: a publish returns a Future at once, and the broker's confirms settle the
Futures by delivery tag (one per publish, counted from 1 after ``confirm.select``;
an ack or nack with ``multiple`` settles every tag up to its own).

For an unroutable mandatory publish the broker sends ``basic.return`` and then the
ack of that publish, so an ack alone proves nothing. A return carries no delivery
tag, but it carries the message: it marks the oldest unconfirmed publish with the
same exchange, routing key, ``message_id`` and ``correlation_id`` that is not
marked yet. pika reads frames in order, so that publish is still unconfirmed when
the return comes; publishes that look alike route alike, so which of several
identical ones is marked does not matter.
"""

from __future__ import annotations

from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Mapping, Optional

import pika
from pika import data as amqp_data
from pika import exceptions as px
from pika import spec

from .connection import ConnectionThread
from .errors import AcemqError


class PublishFailed(AcemqError):
    """The broker returned or nacked a publish, or the channel failed under it."""

    def __init__(self, detail: str, returned: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.returned = returned  # basic.return: routed nowhere (the broker did ack it)


class _Unconfirmed:
    """One publish the broker has not confirmed yet."""

    __slots__ = ("identity", "confirm", "returned")

    def __init__(self, identity: tuple[Any, ...]) -> None:
        self.identity = identity
        self.confirm: "Future[None]" = Future()
        self.returned: Optional[str] = None  # the return's code and text


def _identity(exchange: str, routing_key: str, properties: Optional[pika.BasicProperties]) -> tuple[Any, ...]:
    message_id = properties.message_id if properties is not None else None
    correlation_id = properties.correlation_id if properties is not None else None
    return (exchange, routing_key, message_id, correlation_id)


class Confirms:
    """The unconfirmed publishes of one confirm-mode channel, by delivery tag; no I/O.

    Fed by the channel's callbacks (I/O thread): ``publishing`` before each publish,
    ``returned`` for a basic.return, ``confirmed`` for an ack or nack, ``failed`` when
    the channel goes.
    """

    def __init__(self) -> None:
        self._unconfirmed: "OrderedDict[int, _Unconfirmed]" = OrderedDict()  # oldest first
        self._next_tag = 1  # confirm.select starts the channel's delivery tags at 1

    def __len__(self) -> int:
        return len(self._unconfirmed)

    def publishing(self, exchange: str, routing_key: str, properties: Optional[pika.BasicProperties]) -> tuple[int, "Future[None]"]:
        """Register the next publish (before it is sent): its delivery tag and its Future."""
        tag, self._next_tag = self._next_tag, self._next_tag + 1
        entry = _Unconfirmed(_identity(exchange, routing_key, properties))
        self._unconfirmed[tag] = entry
        return tag, entry.confirm

    def not_sent(self, tag: int, error: PublishFailed) -> None:
        """The publish registered as ``tag`` never left: its tag is not used."""
        entry = self._unconfirmed.pop(tag, None)
        if tag == self._next_tag - 1:
            self._next_tag = tag
        if entry is not None:
            entry.confirm.set_exception(error)

    def returned(self, exchange: str, routing_key: str, properties: Optional[pika.BasicProperties], why: str) -> None:
        """Mark the oldest unmarked unconfirmed publish of this message as returned."""
        identity = _identity(exchange, routing_key, properties)
        for entry in self._unconfirmed.values():
            if entry.returned is None and entry.identity == identity:
                entry.returned = why
                return

    def confirmed(self, tag: int, multiple: bool, acked: bool) -> None:
        """An ack or nack: settles ``tag``, or with ``multiple`` every tag up to it."""
        for entry in self._settle(tag, multiple):
            if not acked:
                entry.confirm.set_exception(PublishFailed("nacked by the broker"))
            elif entry.returned is not None:
                entry.confirm.set_exception(PublishFailed(entry.returned, returned=True))
            else:
                entry.confirm.set_result(None)

    def failed(self, detail: str) -> None:
        """The channel went: no confirm will come for any of them."""
        pending, self._unconfirmed = list(self._unconfirmed.values()), OrderedDict()
        for entry in pending:
            entry.confirm.set_exception(PublishFailed(detail))

    def _settle(self, tag: int, multiple: bool) -> list[_Unconfirmed]:
        if not multiple:
            entry = self._unconfirmed.pop(tag, None)
            return [] if entry is None else [entry]
        settled = []
        while self._unconfirmed:
            oldest = next(iter(self._unconfirmed))
            if oldest > tag:
                break
            settled.append(self._unconfirmed.pop(oldest))
        return settled


class _ConfirmChannel:
    """A confirm-mode channel and its unconfirmed publishes. I/O thread only."""

    def __init__(self, io: ConnectionThread) -> None:
        assert io.connection is not None
        # Opened the blocking way (it waits for channel.open-ok), then used through the
        # asynchronous channel underneath, which never waits for a confirm.
        self._blocking = io.connection.channel()
        self._impl = self._blocking._impl
        self._confirms = Confirms()
        self._impl.add_on_return_callback(self._on_return)
        self._impl.add_on_close_callback(self._on_close)
        # No completion callback: nowait, so nothing to wait for; the broker handles the
        # channel's methods in order, so every publish after this one is confirmed.
        self._impl.confirm_delivery(self._on_confirm)

    @property
    def is_open(self) -> bool:
        return self._impl.is_open

    def publish(
        self, exchange: str, routing_key: str, properties: pika.BasicProperties, body: bytes, mandatory: bool = True
    ) -> "Future[None]":
        # Registered before the publish: its return and confirm look it up.
        tag, confirm = self._confirms.publishing(exchange, routing_key, properties)
        try:
            self._impl.basic_publish(exchange, routing_key, body, properties, mandatory=mandatory)
        except px.AMQPError as exc:
            self._confirms.not_sent(tag, PublishFailed(f"channel failed: {exc!r}"))
        return confirm

    def _on_return(self, _channel: Any, method: spec.Basic.Return, properties: pika.BasicProperties, _body: bytes) -> None:
        why = f"returned by the broker: {method.reply_code} {method.reply_text}"
        self._confirms.returned(method.exchange, method.routing_key, properties, why)

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        self._confirms.confirmed(method.delivery_tag, method.multiple, isinstance(method, spec.Basic.Ack))

    def _on_close(self, _channel: Any, reason: BaseException) -> None:
        if isinstance(reason, px.ChannelClosedByBroker):
            self._confirms.failed(f"channel closed by the broker: {reason.reply_code} {reason.reply_text}")
        else:
            self._confirms.failed(f"channel failed: {reason!r}")


class Publisher:
    """A confirm-mode channel of its own, reopened after the broker closes it.

    ``publish`` runs on the connection's I/O thread only and returns at once; the
    Future it returns is settled on the I/O thread, with None once the broker acked
    the message and did not return it, else with PublishFailed. Its done-callbacks
    run inside pika's frame handling: one that does more than wake a thread hands
    its work on with ``ConnectionThread.later``.
    """

    def __init__(self, io: ConnectionThread) -> None:
        self._io = io
        self._channel: Optional[_ConfirmChannel] = None

    def publish(
        self, exchange: str, routing_key: str, properties: pika.BasicProperties, body: bytes, mandatory: bool = True
    ) -> "Future[None]":
        """Mandatory unless told (RR-13); a reply to a direct reply-to address is not (RR-14)."""
        if self._channel is None or not self._channel.is_open:
            try:
                self._channel = _ConfirmChannel(self._io)
            except px.AMQPError as exc:
                self._channel = None
                failed: "Future[None]" = Future()
                failed.set_exception(PublishFailed(f"cannot open a channel: {exc!r}"))
                return failed
        return self._channel.publish(exchange, routing_key, properties, body, mandatory=mandatory)


def encodable_headers(headers: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """The headers pika can write back, for republishing a received message.

    pika decodes some field types into values it cannot encode again; those
    headers are dropped rather than losing the whole message.
    """
    kept: dict[str, Any] = {}
    for name, value in (headers or {}).items():
        try:
            amqp_data.encode_value([], value)
        except Exception:
            continue
        kept[name] = value
    return kept
