"""The probe: the harness's own AMQP client.

It publishes exactly the properties, headers and header value types a scenario describes
(a header as a byte array, an empty `reply_to`, a `b`-typed number...) and records exactly
what arrives, header types included, so one binding can be checked against the spec rather
than against another binding.

Two connections, both the probe's: pika's for declares, binds, counts and gets, and the raw
client's (raw_client.py, opened at the first publish) for every publish, whose properties
and headers the suite's codec (codec.py) writes with the types the scenario chose. Each
connection's own address is kept (`connections`): the transcript names the probe's
publishes and deliveries by it, never by what a message carries.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pika
import pika.exceptions
from pika.adapters.utils.connection_workflow import AMQPConnectorException

from . import raw_client as raw_amqp
from ..core.errors import BrokerError, ConnectionLost
from .codec import header_value, plain, type_codes
from .tls import connect_error, pika_parameters

POLL_S = 0.02
DIRECT_REPLY_TO = "amq.rabbitmq.reply-to"  # RabbitMQ's pseudo-queue: a reply goes straight to the consuming channel
CONNECT_BOUND_S = 10.0  # the raw publisher's connect and handshake (pika's socket timeout)


def pika_local_address(connection: Any) -> str | None:
    """The own address (`IP:PORT`) of a pika BlockingConnection's socket, or None when pika
    does not show it (pika 1.x keeps it on the transport of the connection it wraps)."""
    try:
        sock = connection._impl._transport._sock
        return raw_amqp.address_text(sock.getsockname())
    except (AttributeError, OSError):
        return None


def value_type(value: Any) -> str:
    """The field type a header arrived as, in words pika lets us tell apart."""
    if isinstance(value, str):
        return "longstr"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def record(method: Any, properties: pika.BasicProperties, body: bytes) -> dict[str, Any]:
    """What arrived, as the data scenarios assert on."""
    headers = properties.headers or {}
    try:
        decoded: Any = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        decoded = None
    return {
        "properties": {
            "message_id": properties.message_id,
            "correlation_id": properties.correlation_id,
            "reply_to": properties.reply_to,
            "content_type": properties.content_type,
            "type": properties.type,
        },
        "headers": {k: _plain(v) for k, v in headers.items()},
        "header_types": {k: value_type(v) for k, v in headers.items()},
        "body": decoded,
        "body_text": body.decode("utf-8", errors="replace"),
        "body_length": len(body),
        "redelivered": bool(getattr(method, "redelivered", False)),
        # Where it was published: a reply goes to the default exchange ("") with the reply address as routing key (RR-4.1).
        "exchange": getattr(method, "exchange", None),
        "routing_key": getattr(method, "routing_key", None),
    }


_CODE_WORDS = {"S": "longstr", "x": "bytes", "t": "bool", "F": "table", "A": "array", "d": "float", "f": "float",
               "V": "void", "T": "timestamp", "D": "decimal"}


def raw_record(message: raw_amqp.Message) -> dict[str, Any]:
    """What arrived, read by the raw client: `record`'s fields, plus every header value's
    wire type code (`wire_types`: header -> code; `wire_types_by_code`: code -> the dotted
    paths of every value with it, nested ones included)."""
    body = message.body
    try:
        decoded: Any = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        decoded = None
    props = message.properties
    return {
        "properties": {k: props.get(k) for k in ("message_id", "correlation_id", "reply_to", "content_type", "type")},
        "headers": {k: plain(v) for k, v in message.headers.items()},
        "header_types": {k: _CODE_WORDS.get(v.code, "integer") for k, v in message.headers.items()},
        "wire_types": {k: v.code for k, v in message.headers.items()},
        "wire_types_by_code": type_codes(message.headers),
        "body": decoded,
        "body_text": body.decode("utf-8", errors="replace"),
        "body_length": len(body),
        "redelivered": message.redelivered,
    }


def cause(exc: BaseException) -> str:
    """The broker's reply code and text of a closed connection or channel, else pika's words
    (some of its exceptions print as an empty string: their argument is another exception)."""
    if isinstance(exc, (pika.exceptions.ConnectionClosed, pika.exceptions.ChannelClosed)):
        return f"{exc.reply_code} {exc.reply_text}"
    parts = [str(a) or repr(a) for a in exc.args]
    return "; ".join(p for p in parts if p) or type(exc).__name__


class Probe:
    """The probe's connections, used by one cell's thread only (over TLS with `ca_file`).

    Losing one (the broker force-closing it, the broker gone, a publish blocked longer than
    the URL's `blocked_connection_timeout`) raises ConnectionLost with the broker's reason,
    and every later call raises the same: the cell is an ERROR, not a FAIL. `blocked_why`
    says why the broker blocked a publish (its resource alarm), for that message.
    """

    def __init__(self, amqp_url: str, ca_file: str | None = None, blocked_why: Callable[[], str | None] | None = None,
                 label: str = ""):
        # Its connections' client-provided name names the cell (`label`, its namespace), so a
        # connection the management UI or the soak shows says whose it is.
        self.name = f"acemq-interop probe {label}".rstrip()
        params = pika_parameters(amqp_url, ca_file, self.name)
        self._url, self._ca_file, self._blocked_why = amqp_url, ca_file, blocked_why
        self._blocked_s: float | None = params.blocked_connection_timeout
        self._lost: str | None = None
        self._publisher: raw_amqp.RawConnection | None = None
        self._direct: dict[int, tuple[Any, list[dict[str, Any]]]] = {}  # direct reply-to callers' channels
        self.connections: list[str] = []  # the own address of every connection the probe opened
        connection = None
        try:
            connection = self._connection = pika.BlockingConnection(params)
            self._note(pika_local_address(self._connection))
            self._channel = self._connection.channel()
        except (pika.exceptions.AMQPError, AMQPConnectorException, OSError) as exc:
            if connection is not None:  # connected, but no channel: the connection is not left open
                try:
                    connection.close()
                except (pika.exceptions.AMQPError, OSError):
                    pass
            # pika raises a TLS verification error as it is, and nests other causes in an
            # AMQPConnectionError whose own text is empty.
            raise BrokerError(f"probe cannot connect to {params.host}:{params.port}: {connect_error(exc)}") from None

    def _note(self, address: str | None) -> None:
        if address and address not in self.connections:
            self.connections.append(address)

    def _blocked(self, blocked_s: float | None) -> str:
        why = self._blocked_why() if self._blocked_why is not None else None
        bound = f" for {blocked_s:g}s" if blocked_s is not None else ""
        return f"probe connection lost: the broker blocked its publishes{bound}" + (f" ({why})" if why else "")

    @contextmanager
    def _guard(self) -> Iterator[None]:
        if self._lost is not None:
            raise ConnectionLost(self._lost)
        try:
            yield
        except pika.exceptions.ConnectionBlockedTimeout:
            self._lost = self._blocked(self._blocked_s)
        except pika.exceptions.AMQPConnectionError as exc:
            self._lost = f"probe connection lost: {cause(exc)}"
        except pika.exceptions.ChannelClosedByBroker as exc:
            self._lost = f"probe channel closed by the broker: {cause(exc)}"
        except pika.exceptions.AMQPChannelError as exc:
            self._lost = f"probe channel failed: {type(exc).__name__}: {cause(exc)}"
        except raw_amqp.Blocked as exc:
            self._lost = self._blocked(exc.blocked_s)
        except raw_amqp.BrokerClosed as exc:
            what = "probe channel closed by the broker" if exc.channel else "probe connection lost"
            self._lost = f"{what}: {exc.code} {exc.text}"
        except raw_amqp.RawAmqpError as exc:
            self._lost = f"probe connection lost: {exc}"
        if self._lost is not None:
            self._drop_publisher()
            raise ConnectionLost(self._lost) from None

    def fault(self) -> str | None:
        """Why the probe's connection is gone (looking at the socket now, without waiting), or None."""
        if self._lost is None:
            try:
                with self._guard():
                    self._connection.process_data_events(time_limit=0)
                    if self._publisher is not None:
                        self._publisher.poll()
            except ConnectionLost:
                pass
        return self._lost

    def _drop_publisher(self) -> None:
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            if self._lost is None:
                publisher.close()
            else:
                publisher.abort()  # a blocked or broken connection: no close handshake to wait for

    def close(self) -> None:
        self._drop_publisher()
        try:
            self._connection.close()
        except (pika.exceptions.AMQPError, OSError):
            pass

    def declare_queue(self, name: str, kind: str = "quorum", exclusive: bool = False) -> str:
        with self._guard():
            if kind == "quorum":
                self._channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum"})
            else:
                result = self._channel.queue_declare(
                    name, durable=False, exclusive=exclusive, auto_delete=exclusive, arguments={"x-queue-type": "classic"}
                )
                name = result.method.queue
        return name

    def delete_queue(self, name: str) -> None:
        with self._guard():
            self._channel.queue_delete(name)

    def declare_exchange(self, name: str, kind: str) -> None:
        with self._guard():
            self._channel.exchange_declare(name, exchange_type=kind, durable=False, auto_delete=False)

    def depth(self, name: str) -> tuple[int, int] | None:
        """(messages ready, consumers) of a queue, from a passive queue.declare: the broker's
        own count at this instant (the management API's is sampled every few seconds). None
        when the queue does not exist."""
        try:
            ok = self._channel.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != 404:
                raise
            self._channel = self._connection.channel()  # a 404 closes the channel
            return None
        return ok.method.message_count, ok.method.consumer_count

    def bind(self, queue: str, exchange: str, routing_key: str) -> None:
        with self._guard():
            self._channel.queue_bind(queue, exchange, routing_key=routing_key)

    def publish(
        self,
        exchange: str,
        routing_key: str,
        body: bytes,
        properties: dict[str, Any],
        headers: dict[str, Any],
        mandatory: bool = True,
    ) -> bool:
        """Publish with confirms; False when the broker returned it (unroutable). Header values
        are a scenario's (codec.header_value: typed ones written with their type)."""
        typed = {k: header_value(v) for k, v in headers.items()} or None
        with self._guard():
            publisher = self._publisher or self._open_publisher()
            return publisher.publish(exchange, routing_key, body, properties, typed, mandatory=mandatory)

    def connect_publisher(self) -> None:
        """Open the publishing connection now, not at the first publish: a step about to start
        a bounded window (a held queue) must not spend it on a connection's handshake."""
        with self._guard():
            if self._publisher is None:
                self._open_publisher()

    def _open_publisher(self) -> raw_amqp.RawConnection:
        publisher = raw_amqp.RawConnection(self._url, bound_s=CONNECT_BOUND_S, connection_name=f"{self.name} (publisher)",
                                           ca_file=self._ca_file, blocked_s=self._blocked_s)
        try:
            publisher.open()
        except raw_amqp.RawAmqpError as exc:
            raise BrokerError(f"probe cannot connect its publisher: {connect_error(exc)}") from None
        self._note(publisher.local_address)
        self._publisher = publisher
        return publisher

    # -- a direct reply-to caller (RabbitMQ's amq.rabbitmq.reply-to) ---------------------

    def direct_request(self, routing_key: str, body: bytes, properties: dict[str, Any], headers: dict[str, Any],
                       gone: bool = False) -> int:
        """Publish as a direct reply-to caller does (the tutorial's, the Java RpcClient's,
        NestJS's): a channel of its own consumes `amq.rabbitmq.reply-to` with no-ack, then
        publishes on that same channel with `reply_to: amq.rabbitmq.reply-to` (the broker
        rewrites it to `amq.rabbitmq.reply-to.<token>` for the responder), not mandatory, not
        confirmed. `gone`: the channel is closed at once after the publish, so the caller is
        gone before any reply. Returns the channel's number, for `direct_replies`."""
        typed = {k: header_value(v) for k, v in headers.items()} or None
        with self._guard():
            channel = self._connection.channel()
            arrived: list[dict[str, Any]] = []
            channel.basic_consume(DIRECT_REPLY_TO, lambda _ch, method, props, data: arrived.append(record(method, props, data)),
                                  auto_ack=True)
            props = pika.BasicProperties(headers=typed, **{**properties, "reply_to": DIRECT_REPLY_TO})
            channel.basic_publish("", routing_key, body, props, mandatory=False)
            if gone:
                channel.close()
            self._direct[channel.channel_number] = (channel, arrived)
            return channel.channel_number

    def direct_replies(self, number: int, bound_s: float) -> list[dict[str, Any]]:
        """Every reply that reached a direct reply-to caller's channel by the end of `bound_s`
        (the whole bound is waited: a second reply is what is looked for); none once it is gone."""
        channel, arrived = self._direct[number]
        deadline = time.monotonic() + bound_s
        with self._guard():
            while channel.is_open:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._connection.process_data_events(time_limit=min(left, 0.05))
        return list(arrived)

    def get(self, queue: str, bound_s: float) -> dict[str, Any] | None:
        """The next message on `queue` (acknowledged), or None when none came within the bound."""
        deadline = time.monotonic() + bound_s
        with self._guard():
            while True:
                method, properties, body = self._channel.basic_get(queue, auto_ack=True)
                if method is not None:
                    return record(method, properties, body)
                if time.monotonic() >= deadline:
                    return None
                self._connection.sleep(POLL_S)
