"""Mandatory, confirmed publishing (RR-13).

With ``confirm_delivery`` pika's BlockingChannel waits for the broker's ack
and raises UnroutableError when a ``basic.return`` came before it: for an
unroutable mandatory publish the broker returns the message and then acks
it, so the ack alone proves nothing.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pika
from pika import data as amqp_data
from pika import exceptions as px
from pika.adapters.blocking_connection import BlockingChannel

from .connection import ConnectionThread
from .errors import AcemqError


class PublishFailed(AcemqError):
    """The broker returned or nacked a publish, or the channel failed under it."""

    def __init__(self, detail: str, returned: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.returned = returned  # basic.return: routed nowhere (the broker did ack it)


class Publisher:
    """A confirm-mode channel of its own, reopened after the broker closes it.

    Use it on the connection's I/O thread only.
    """

    def __init__(self, io: ConnectionThread) -> None:
        self._io = io
        self._channel: Optional[BlockingChannel] = None

    def publish(self, exchange: str, routing_key: str, properties: pika.BasicProperties, body: bytes) -> None:
        if self._channel is None or not self._channel.is_open:
            self._channel = self._io.channel()
        try:
            self._channel.basic_publish(exchange, routing_key, body, properties, mandatory=True)
        except px.UnroutableError as exc:
            raise PublishFailed(_returned(exc), returned=True) from exc
        except px.NackError as exc:
            raise PublishFailed("nacked by the broker") from exc
        except px.ChannelClosedByBroker as exc:
            self._channel = None
            raise PublishFailed(f"channel closed by the broker: {exc.reply_code} {exc.reply_text}") from exc
        except px.AMQPChannelError as exc:
            self._channel = None
            raise PublishFailed(f"channel failed: {exc!r}") from exc


def _returned(exc: px.UnroutableError) -> str:
    if exc.messages:
        method = exc.messages[0].method
        return f"returned by the broker: {method.reply_code} {method.reply_text}"
    return "returned by the broker"


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
