"""A small AMQP 0-9-1 client that keeps every header value's wire type code.

Why it exists: pika decodes a field table into Python values and the type code goes with
it (`b`, `B`, `U`, `u`, `I`, `i` all come back as `int`; pika 1.2 even reads `b` and `l` as
unsigned and doubles as integers), and it picks the type of every value it writes itself.
WF-2 forbids `B`, `u` and `i`; seeing that needs the bytes, and so does writing a header as
a scenario describes it. This client does only what the suite needs, with the suite's one
codec (codec.py) for every table and content header, in and out:

- connect (PLAIN, TLS with the run's CA), one channel;
- `get`: basic.get one message and ack it (the probe's `wire_types` reads);
- `publish`: basic.publish on a confirm-mode channel, mandatory, waiting for the broker's
  ack and noticing a basic.return (the probe's publishes, typed headers included); a
  publish the broker blocks (a resource alarm) ends after `blocked_s`;
- `declare_queue`, `bind`, `consume` and `deliveries`: the transcript's firehose consumer.

`local_address` is the connection's own end as the broker names it (`IP:PORT`, the part
before ` -> ` of the firehose's `connection` header): what tells the probe's connections
from the peers' in a transcript. Blocking, for one thread.
"""
from __future__ import annotations

import ipaddress
import socket
import ssl
import struct
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from .codec import (
    CodecError, Field, decode_content_header, decode_table, encode_content_header, encode_table, longstr, plain,
    shortstr, type_codes,
)

# What a reader of this client's messages needs, from the codec.
__all__ = ["RawConnection", "Message", "RawAmqpError", "BrokerClosed", "Blocked", "Field", "CodecError",
           "decode_content_header", "decode_table", "plain", "type_codes", "method_frame", "address_text", "client_end"]

FRAME_METHOD, FRAME_HEADER, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
FRAME_END = 0xCE
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_MAX = 131072
CONFIRM_BOUND_S = 30.0  # a publish's confirm, when the broker has not blocked the connection

CONNECTION_START, CONNECTION_START_OK = (10, 10), (10, 11)
CONNECTION_TUNE, CONNECTION_TUNE_OK = (10, 30), (10, 31)
CONNECTION_OPEN, CONNECTION_OPEN_OK = (10, 40), (10, 41)
CONNECTION_CLOSE, CONNECTION_CLOSE_OK = (10, 50), (10, 51)
CONNECTION_BLOCKED, CONNECTION_UNBLOCKED = (10, 60), (10, 61)
CHANNEL_OPEN, CHANNEL_OPEN_OK = (20, 10), (20, 11)
CHANNEL_CLOSE, CHANNEL_CLOSE_OK = (20, 40), (20, 41)
QUEUE_DECLARE, QUEUE_DECLARE_OK = (50, 10), (50, 11)
QUEUE_BIND, QUEUE_BIND_OK = (50, 20), (50, 21)
BASIC_CONSUME, BASIC_CONSUME_OK = (60, 20), (60, 21)
BASIC_PUBLISH, BASIC_RETURN, BASIC_DELIVER = (60, 40), (60, 50), (60, 60)
BASIC_GET, BASIC_GET_OK, BASIC_GET_EMPTY, BASIC_ACK = (60, 70), (60, 71), (60, 72), (60, 80)
BASIC_NACK = (60, 120)
CONFIRM_SELECT, CONFIRM_SELECT_OK = (85, 10), (85, 11)

_FRAME_HEAD = struct.Struct(">BHI")
_METHOD_ID = struct.Struct(">HH")


class RawAmqpError(Exception):
    """The broker refused something, closed the connection, or sent what this client cannot read."""


class BrokerClosed(RawAmqpError):
    """The broker closed the channel (`channel` True) or the connection, with its reply code and text."""

    def __init__(self, code: int, text: str, channel: bool):
        super().__init__(f"the broker closed the {'channel' if channel else 'connection'}: {code} {text}")
        self.code, self.text, self.channel = code, text, channel


class Blocked(RawAmqpError):
    """The broker blocked the connection's publishes (connection.blocked) for longer than allowed."""

    def __init__(self, blocked_s: float):
        super().__init__(f"the broker blocked its publishes for {blocked_s:g}s")
        self.blocked_s = blocked_s


@dataclass
class Message:
    """One message taken with basic.get or delivered to a consumer: its properties (headers
    apart, typed), body and delivery."""

    properties: dict[str, Any]
    headers: dict[str, Field]
    body: bytes
    delivery_tag: int = 0
    redelivered: bool = False
    exchange: str = ""
    routing_key: str = ""
    message_count: int = 0


def frame(kind: int, channel: int, payload: bytes) -> bytes:
    return _FRAME_HEAD.pack(kind, channel, len(payload)) + payload + b"\xce"


def method_frame(channel: int, method: tuple[int, int], arguments: bytes = b"") -> bytes:
    return frame(FRAME_METHOD, channel, _METHOD_ID.pack(*method) + arguments)


def _reader(payload: bytes) -> "_Args":
    return _Args(payload, 4)


class _Args:
    """A method's arguments, read in order."""

    def __init__(self, data: bytes, offset: int = 0):
        self.data, self.offset = data, offset

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.offset + size > len(self.data):
            raise RawAmqpError(f"truncated AMQP method: wanted {size} bytes at offset {self.offset} of {len(self.data)}")
        value = struct.unpack_from(fmt, self.data, self.offset)[0]
        self.offset += size
        return value

    def shortstr(self) -> str:
        length = self.unpack(">B")
        raw = self.data[self.offset:self.offset + length]
        self.offset += length
        return raw.decode("utf-8", errors="replace")


def address_text(sockname: Any) -> str | None:
    """A socket's own address (`getsockname()`) as RabbitMQ writes a connection's client end:
    `127.0.0.1:5678`, `[::1]:5678` (an IPv4-mapped IPv6 address as IPv4)."""
    try:
        host, port = sockname[0], int(sockname[1])
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except (TypeError, ValueError, IndexError):
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def client_end(connection: str) -> str | None:
    """The client end of a broker's connection name (`CLIENT_IP:PORT -> SERVER_IP:PORT`),
    normalised as `address_text` writes it; None when the name is not an address pair."""
    client = connection.split(" -> ", 1)[0].strip()
    host, sep, port = client.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return address_text((host.strip("[]"), port))


class RawConnection:
    """One connection with channel 1 open; blocking, for one thread. Use as a context manager.

    `bound_s` bounds the connect and handshake and every wait for a synchronous reply;
    `confirm_bound_s` a publish's confirm; `blocked_s` (None: no bound of its own) how long a
    publish may stay blocked by the broker before `Blocked` is raised; `heartbeat_s` the
    heartbeat asked for (0: none; a long-lived connection sends its own in `deliveries`)."""

    def __init__(self, url: str, bound_s: float = 10.0, connection_name: str = "acemq-interop raw probe",
                 ca_file: str | None = None, heartbeat_s: int = 0, blocked_s: float | None = None,
                 confirm_bound_s: float = CONFIRM_BOUND_S):
        # ca_file: on amqps, the only CA the broker's certificate may chain to (a run's own, --tls)
        self.url, self.bound_s, self.connection_name, self.ca_file = url, bound_s, connection_name, ca_file
        self.heartbeat_s, self.blocked_s, self.confirm_bound_s = heartbeat_s, blocked_s, confirm_bound_s
        self.local_address: str | None = None
        self._sock: Any = None
        self._buffer = bytearray()
        self._pos = 0
        self._frame_max = FRAME_MAX
        self._heartbeat = 0
        self._sent_at = 0.0
        self._confirming = False
        self._next_tag = 1
        self._blocked_at: float | None = None
        self._deliveries: list[Message] = []

    def __enter__(self) -> "RawConnection":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._sock is not None

    def open(self) -> None:
        try:
            self._open()
        except (OSError, RawAmqpError, CodecError) as exc:  # refused, reset (RabbitMQ drops a failed login), timed out
            self.abort()
            if isinstance(exc, RawAmqpError):
                raise
            raise RawAmqpError(f"AMQP connection to {urllib.parse.urlsplit(self.url).hostname} failed: {exc}") from exc

    def _open(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("amqp", "amqps"):
            raise RawAmqpError(f"not an AMQP URL: {parts.scheme}://...; give amqp://USER:PASS@HOST:PORT/VHOST")
        host = parts.hostname or "localhost"
        port = parts.port or (5671 if parts.scheme == "amqps" else 5672)
        user = urllib.parse.unquote(parts.username or "guest")
        password = urllib.parse.unquote(parts.password or "guest")
        vhost = urllib.parse.unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
        sock = socket.create_connection((host, port), timeout=self.bound_s)
        if parts.scheme == "amqps":
            from .tls import client_context

            context = client_context(self.ca_file) if self.ca_file else ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=host)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self.local_address = address_text(sock.getsockname())
        deadline = time.monotonic() + self.bound_s
        self._send(PROTOCOL_HEADER)
        self._wait_for(CONNECTION_START, deadline)
        client_properties = encode_table({
            "product": "acemq-interop", "connection_name": self.connection_name,
            "capabilities": {"publisher_confirms": True, "basic.nack": True, "connection.blocked": True,
                             "consumer_cancel_notify": True, "authentication_failure_close": True}})
        response = f"\0{user}\0{password}".encode("utf-8")
        self._send(method_frame(0, CONNECTION_START_OK, client_properties + shortstr("PLAIN") + longstr(response)
                                + shortstr("en_US")))
        tune = self._wait_for(CONNECTION_TUNE, deadline)
        channel_max, frame_max, heartbeat = struct.unpack(">HIH", tune.payload[4:12])
        self._frame_max = min(frame_max or FRAME_MAX, FRAME_MAX)
        self._heartbeat = min(heartbeat, self.heartbeat_s) if heartbeat and self.heartbeat_s else self.heartbeat_s
        self._send(method_frame(0, CONNECTION_TUNE_OK, struct.pack(">HIH", channel_max, self._frame_max, self._heartbeat)))
        self._send(method_frame(0, CONNECTION_OPEN, shortstr(vhost) + shortstr("") + b"\x00"))
        self._wait_for(CONNECTION_OPEN_OK, deadline)
        self._send(method_frame(1, CHANNEL_OPEN, shortstr("")))
        self._wait_for(CHANNEL_OPEN_OK, deadline)

    def close(self) -> None:
        """connection.close, waiting (within `bound_s`) for the broker's close-ok."""
        if self._sock is None:
            return
        try:
            self._send(method_frame(0, CONNECTION_CLOSE, struct.pack(">H", 200) + shortstr("bye") + struct.pack(">HH", 0, 0)))
            deadline = time.monotonic() + min(self.bound_s, 5.0)
            while True:  # deliveries and confirms may come first
                got = self._read_frame(deadline)
                if got is None or (got.type == FRAME_METHOD and got.method in (CONNECTION_CLOSE_OK, CONNECTION_CLOSE)):
                    break
        except (OSError, RawAmqpError):
            pass  # closing anyway
        finally:
            self.abort()

    def abort(self) -> None:
        """Drop the socket without a word (the broker is not listening, or it is gone)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def poll(self) -> None:
        """Read what the broker sent meanwhile, without waiting: BrokerClosed (or RawAmqpError
        for a connection gone) when it closed the channel or the connection."""
        while True:
            got = self._next(time.monotonic())
            if got is None:
                return
            if got.type == FRAME_METHOD and got.method == BASIC_DELIVER:
                self._deliveries.append(self._delivery(got, time.monotonic() + self.bound_s))

    # -- basic.get (the probe's typed reads) --

    def get(self, queue: str, ack: bool = True) -> Message | None:
        """basic.get one message (None when the queue is empty), acked after it is read."""
        deadline = time.monotonic() + self.bound_s
        self._send(method_frame(1, BASIC_GET, struct.pack(">H", 0) + shortstr(queue) + b"\x00"))
        got = self._wait_for((BASIC_GET_OK, BASIC_GET_EMPTY), deadline)
        if got.method == BASIC_GET_EMPTY:
            return None
        args = _reader(got.payload)
        tag = args.unpack(">Q")
        redelivered = bool(args.unpack(">B") & 1)
        exchange, routing_key = args.shortstr(), args.shortstr()
        message_count = args.unpack(">I")
        properties, headers, body = self._content(deadline)
        if ack:
            self._send(method_frame(1, BASIC_ACK, struct.pack(">QB", tag, 0)))
        return Message(properties, headers, body, tag, redelivered, exchange, routing_key, message_count)

    def get_within(self, queue: str, bound_s: float, poll_s: float = 0.02) -> Message | None:
        """The next message on `queue`, polling up to `bound_s`; None when none came."""
        deadline = time.monotonic() + bound_s
        while True:
            message = self.get(queue)
            if message is not None or time.monotonic() >= deadline:
                return message
            time.sleep(poll_s)  # a poll interval of basic.get, not a wait for an outcome

    # -- basic.publish with confirms (the probe's publishes) --

    def publish(self, exchange: str, routing_key: str, body: bytes, properties: Mapping[str, Any] | None = None,
                headers: Mapping[str, Any] | None = None, mandatory: bool = True) -> bool:
        """Publish and wait for the broker's confirm; False when it returned the message
        (mandatory and unroutable). Every property and header value is encoded (codec.py)
        before anything is sent: a value the codec cannot write raises CodecError and the
        connection stays usable."""
        header = encode_content_header(len(body), properties or {}, headers)
        if len(header) + 8 > self._frame_max:
            raise CodecError(f"the content header ({len(header)} bytes) is over the frame size {self._frame_max}")
        if not self._confirming:
            self._send(method_frame(1, CONFIRM_SELECT, b"\x00"))
            self._wait_for(CONFIRM_SELECT_OK, time.monotonic() + self.bound_s)
            self._confirming = True
        chunk = self._frame_max - 8
        data = [method_frame(1, BASIC_PUBLISH, struct.pack(">H", 0) + shortstr(exchange) + shortstr(routing_key)
                             + (b"\x01" if mandatory else b"\x00")), frame(FRAME_HEADER, 1, header)]
        data += [frame(FRAME_BODY, 1, body[i:i + chunk]) for i in range(0, len(body), chunk)]
        self._send(b"".join(data))
        tag, self._next_tag = self._next_tag, self._next_tag + 1
        returned = False
        deadline = time.monotonic() + self.confirm_bound_s
        while True:
            got = self._next(self._publish_deadline(deadline), flow=True)
            if got is None:
                if self._blocked_at is not None and self.blocked_s is not None:
                    raise Blocked(self.blocked_s)
                raise RawAmqpError(f"no confirm of a publish within {self.confirm_bound_s:g}s")
            if got.method in (CONNECTION_BLOCKED, CONNECTION_UNBLOCKED):
                continue  # the deadline is another now
            if got.method == BASIC_RETURN:
                self._content(deadline)  # the returned message, read off the stream
                returned = True
            elif got.method in (BASIC_ACK, BASIC_NACK):
                args = _reader(got.payload)
                acked, multiple = args.unpack(">Q"), args.unpack(">B") & 1
                if acked == tag or (multiple and acked >= tag):
                    if got.method == BASIC_NACK:
                        raise RawAmqpError(f"the broker refused (nacked) the publish to {exchange!r} / {routing_key!r}")
                    return not returned
            elif got.method == BASIC_DELIVER:
                self._deliveries.append(self._delivery(got, deadline))
            else:
                raise RawAmqpError(f"unexpected frame while waiting for a confirm: type {got.type}, method {got.method}")

    def _publish_deadline(self, deadline: float) -> float:
        if self._blocked_at is not None and self.blocked_s is not None:
            return self._blocked_at + self.blocked_s
        return deadline

    # -- a consumer (the transcript's firehose) --

    def declare_queue(self, name: str = "", durable: bool = False, exclusive: bool = False, auto_delete: bool = False,
                      arguments: Mapping[str, Any] | None = None) -> str:
        """queue.declare; the queue's name (the server's, for `name` "")."""
        bits = (2 if durable else 0) | (4 if exclusive else 0) | (8 if auto_delete else 0)
        self._send(method_frame(1, QUEUE_DECLARE, struct.pack(">H", 0) + shortstr(name) + bytes([bits])
                                + encode_table(arguments or {})))
        ok = self._wait_for(QUEUE_DECLARE_OK, time.monotonic() + self.bound_s)
        return _reader(ok.payload).shortstr()

    def bind(self, queue: str, exchange: str, routing_key: str) -> None:
        self._send(method_frame(1, QUEUE_BIND, struct.pack(">H", 0) + shortstr(queue) + shortstr(exchange)
                                + shortstr(routing_key) + b"\x00" + encode_table({})))
        self._wait_for(QUEUE_BIND_OK, time.monotonic() + self.bound_s)

    def consume(self, queue: str, no_ack: bool = True, exclusive: bool = False) -> str:
        """basic.consume; its consumer tag. Deliveries are read with `deliveries`."""
        bits = (2 if no_ack else 0) | (4 if exclusive else 0)
        self._send(method_frame(1, BASIC_CONSUME, struct.pack(">H", 0) + shortstr(queue) + shortstr("") + bytes([bits])
                                + encode_table({})))
        ok = self._wait_for(BASIC_CONSUME_OK, time.monotonic() + self.bound_s)
        return _reader(ok.payload).shortstr()

    def deliveries(self, wait_s: float) -> Iterator[Message]:
        """Every delivery to this connection's consumer that arrives within `wait_s` (those
        read meanwhile first). Sends the connection's heartbeats."""
        deadline = time.monotonic() + wait_s
        while self._deliveries:
            yield self._deliveries.pop(0)
        while True:
            self._beat()
            got = self._next(min(deadline, self._next_beat()))
            if got is None:
                if time.monotonic() >= deadline:
                    return
                continue
            if got.method != BASIC_DELIVER:
                raise RawAmqpError(f"unexpected frame while consuming: type {got.type}, method {got.method}")
            yield self._delivery(got, time.monotonic() + self.bound_s)

    def _delivery(self, got: "_Frame", deadline: float) -> Message:
        args = _reader(got.payload)
        args.shortstr()  # consumer tag
        tag = args.unpack(">Q")
        redelivered = bool(args.unpack(">B") & 1)
        exchange, routing_key = args.shortstr(), args.shortstr()
        properties, headers, body = self._content(deadline)
        return Message(properties, headers, body, tag, redelivered, exchange, routing_key)

    def _next_beat(self) -> float:
        return self._sent_at + self._heartbeat / 2 if self._heartbeat else float("inf")

    def _beat(self) -> None:
        if self._heartbeat and time.monotonic() >= self._next_beat():
            self._send(frame(FRAME_HEARTBEAT, 0, b""))

    # -- frames --

    def _send(self, data: bytes) -> None:
        if self._sock is None:
            raise RawAmqpError("the connection is closed")
        try:
            self._sock.settimeout(self.bound_s)
            self._sock.sendall(data)
        except OSError as exc:
            self.abort()
            raise RawAmqpError(f"the connection failed: {exc}") from exc
        self._sent_at = time.monotonic()

    def _fill(self, n: int, deadline: float) -> bool:
        """At least `n` unread bytes in the buffer, reading until `deadline` (once more without
        waiting when it has passed); False when they did not come."""
        last = False
        while len(self._buffer) - self._pos < n:
            if self._sock is None:
                raise RawAmqpError("the connection is closed")
            if last:
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                remaining, last = 0.0, True  # a timeout of 0: what is at hand, without waiting
            try:
                self._sock.settimeout(remaining)
                chunk = self._sock.recv(max(65536, n))
            except (socket.timeout, BlockingIOError, ssl.SSLWantReadError):
                continue  # the deadline is looked at again above
            except OSError as exc:
                self.abort()
                raise RawAmqpError(f"the connection failed: {exc}") from exc
            if not chunk:
                self.abort()
                raise RawAmqpError("the broker closed the connection")
            if self._pos:
                del self._buffer[:self._pos]
                self._pos = 0
            self._buffer += chunk
        return True

    def _read_frame(self, deadline: float) -> "_Frame | None":
        """The next frame (heartbeats skipped), or None when none came whole by `deadline`."""
        while True:
            if not self._fill(7, deadline):
                return None
            kind, channel, size = _FRAME_HEAD.unpack_from(self._buffer, self._pos)
            if not self._fill(7 + size + 1, deadline):
                return None
            start = self._pos + 7
            payload = bytes(self._buffer[start:start + size])
            end = self._buffer[start + size]
            self._pos = start + size + 1
            if end != FRAME_END:
                self.abort()
                raise RawAmqpError("bad frame end: the stream is out of step")
            if kind != FRAME_HEARTBEAT:
                return _Frame(kind, channel, payload)

    def _next(self, deadline: float, flow: bool = False) -> "_Frame | None":
        """The next frame but heartbeats, or None when none came whole by `deadline`.
        connection.blocked and unblocked are noted, and skipped unless `flow` asks for them;
        connection.close and channel.close are answered and raised (BrokerClosed)."""
        while True:
            got = self._read_frame(deadline)
            if got is None or got.type != FRAME_METHOD:
                return got
            method = got.method
            if method in (CONNECTION_BLOCKED, CONNECTION_UNBLOCKED):
                if method == CONNECTION_UNBLOCKED:
                    self._blocked_at = None
                elif self._blocked_at is None:
                    self._blocked_at = time.monotonic()
                if flow:
                    return got
            elif method in (CONNECTION_CLOSE, CHANNEL_CLOSE):
                args = _reader(got.payload)
                code, text = args.unpack(">H"), args.shortstr()
                channel = method == CHANNEL_CLOSE
                try:
                    self._send(method_frame(got.channel, CHANNEL_CLOSE_OK if channel else CONNECTION_CLOSE_OK))
                except RawAmqpError:
                    pass
                if not channel:
                    self.abort()
                raise BrokerClosed(code, text, channel)
            else:
                return got

    def _content(self, deadline: float) -> tuple[dict[str, Any], dict[str, Field], bytes]:
        """A content header and its body frames: (properties, typed headers, body)."""
        header = self._next(deadline)
        if header is None:
            raise RawAmqpError("no content header within the bound")
        if header.type != FRAME_HEADER:
            raise RawAmqpError(f"expected a content header, got frame type {header.type}")
        try:
            size, properties, headers = decode_content_header(header.payload)
        except CodecError as exc:
            self._skip_body(header.payload, deadline)
            raise RawAmqpError(f"a content header this client cannot read: {exc}") from None
        parts: list[bytes] = []
        have = 0
        while have < size:
            chunk = self._next(deadline)
            if chunk is None:
                raise RawAmqpError("a message body did not arrive whole within the bound")
            if chunk.type != FRAME_BODY:
                raise RawAmqpError(f"expected a body frame, got frame type {chunk.type}")
            parts.append(chunk.payload)
            have += len(chunk.payload)
        return properties, headers, b"".join(parts)

    def _skip_body(self, header: bytes, deadline: float) -> None:
        """Read off the body frames of a message whose header could not be decoded (the
        stream stays in step)."""
        if len(header) < 12:
            return
        size, have = struct.unpack_from(">Q", header, 4)[0], 0
        while have < size:
            chunk = self._read_frame(deadline)
            if chunk is None or chunk.type != FRAME_BODY:
                return
            have += len(chunk.payload)

    def _wait_for(self, methods: "tuple[int, int] | tuple[tuple[int, int], ...]", deadline: float) -> "_Frame":
        """The next method frame, which must be one of `methods` (a delivery to this
        connection's consumer coming first is kept for `deliveries`)."""
        wanted = (methods,) if isinstance(methods[0], int) else methods
        while True:
            got = self._next(deadline)
            if got is None:
                raise RawAmqpError(f"no answer from the broker within {self.bound_s:g}s (waiting for {wanted[0]})")
            if got.type == FRAME_METHOD and got.method in wanted:
                return got
            if got.type == FRAME_METHOD and got.method == BASIC_DELIVER:
                self._deliveries.append(self._delivery(got, deadline))
                continue
            raise RawAmqpError(f"expected method {wanted[0]}, got frame type {got.type}, method {got.method}")


@dataclass
class _Frame:
    type: int
    channel: int
    payload: bytes

    @property
    def method(self) -> tuple[int, int]:
        return _METHOD_ID.unpack_from(self.payload) if self.type == FRAME_METHOD and len(self.payload) >= 4 else (0, 0)
