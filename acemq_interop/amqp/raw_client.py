"""A small AMQP 0-9-1 client that keeps every header value's wire type code.

Why it exists: pika decodes a field table into Python values and the type code goes with
it (`b`, `B`, `U`, `u`, `I`, `i` all come back as `int`; pika 1.2 even reads `l` as
unsigned and doubles as integers), so the probe cannot tell whether a binding wrote a
header as `I` or as `i`. WF-2 forbids `B`, `u` and `i`; seeing that needs the bytes. This
client does only what that needs: connect (PLAIN), open a channel, `basic.get` one message
and `basic.ack` it, and decode the content header with every table value typed.

The decoder is pure (`decode_table`, `decode_properties`) so it is unit-tested on
hand-built bytes; `RawConnection` is the socket around it.

Type codes are RabbitMQ's (its errata to 0-9-1, what every client here speaks): `t` bool,
`b` int8, `B` uint8, `s` and `U` int16, `u` uint16, `I` int32, `i` uint32, `l` int64,
`L` uint64, `f` float, `d` double, `D` decimal, `S` long string, `x` byte array, `A`
array, `T` timestamp, `F` table, `V` void.
"""
from __future__ import annotations

import socket
import ssl
import struct
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

FRAME_METHOD, FRAME_HEADER, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
FRAME_END = 0xCE
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_MAX = 131072

CONNECTION_START, CONNECTION_START_OK = (10, 10), (10, 11)
CONNECTION_TUNE, CONNECTION_TUNE_OK = (10, 30), (10, 31)
CONNECTION_OPEN, CONNECTION_OPEN_OK = (10, 40), (10, 41)
CONNECTION_CLOSE, CONNECTION_CLOSE_OK = (10, 50), (10, 51)
CHANNEL_OPEN, CHANNEL_OPEN_OK = (20, 10), (20, 11)
CHANNEL_CLOSE, CHANNEL_CLOSE_OK = (20, 40), (20, 41)
BASIC_GET, BASIC_GET_OK, BASIC_GET_EMPTY, BASIC_ACK = (60, 70), (60, 71), (60, 72), (60, 80)

# Fixed-size field values: code -> struct format (big-endian).
_FIXED = {"t": ">B", "b": ">b", "B": ">B", "s": ">h", "U": ">h", "u": ">H", "I": ">i", "i": ">I",
          "l": ">q", "L": ">Q", "f": ">f", "d": ">d", "T": ">Q"}


class RawAmqpError(Exception):
    """The broker refused something, closed the connection, or sent what this client cannot read."""


@dataclass(frozen=True)
class Field:
    """A decoded field value and its wire type code (`S`, `x`, `l`, ...).

    `value` is plain for scalars (`bytes` for `S` and `x`), a dict of Fields for `F`, a list
    of Fields for `A`, `(scale, unscaled)` for `D`, None for `V`.
    """

    code: str
    value: Any


@dataclass
class Message:
    """One message taken with basic.get: its properties (headers typed), body and delivery."""

    properties: dict[str, Any]
    headers: dict[str, Field]
    body: bytes
    delivery_tag: int = 0
    redelivered: bool = False
    exchange: str = ""
    routing_key: str = ""
    message_count: int = 0


# -- decoding (pure) --------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, offset: int = 0):
        self.data, self.offset = data, offset

    def take(self, n: int) -> bytes:
        if self.offset + n > len(self.data):
            raise RawAmqpError(f"truncated AMQP data: wanted {n} bytes at offset {self.offset} of {len(self.data)}")
        chunk = self.data[self.offset:self.offset + n]
        self.offset += n
        return chunk

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def shortstr(self) -> str:
        return self.take(self.unpack(">B")).decode("utf-8", errors="replace")

    def longstr(self) -> bytes:
        return self.take(self.unpack(">I"))


def _value(reader: _Reader) -> Field:
    code = reader.take(1).decode("latin-1")
    if code in _FIXED:
        value = reader.unpack(_FIXED[code])
        return Field(code, bool(value) if code == "t" else value)
    if code in ("S", "x"):
        return Field(code, reader.longstr())
    if code == "D":
        scale = reader.unpack(">B")
        return Field(code, (scale, reader.unpack(">i")))
    if code == "F":
        return Field(code, _table(_Reader(reader.longstr())))
    if code == "A":
        inner = _Reader(reader.longstr())
        items = []
        while inner.offset < len(inner.data):
            items.append(_value(inner))
        return Field(code, items)
    if code == "V":
        return Field(code, None)
    raise RawAmqpError(f"unknown field type {code!r} at offset {reader.offset - 1}")


def _table(reader: _Reader) -> dict[str, Field]:
    table: dict[str, Field] = {}
    while reader.offset < len(reader.data):
        name = reader.shortstr()
        table[name] = _value(reader)
    return table


def decode_table(data: bytes) -> dict[str, Field]:
    """A field table's content (without its 4-byte length), every value typed."""
    return _table(_Reader(data))


# Basic's property flags, highest bit first (0-9-1, class basic).
_PROPERTIES = [("content_type", "shortstr"), ("content_encoding", "shortstr"), ("headers", "table"),
               ("delivery_mode", "octet"), ("priority", "octet"), ("correlation_id", "shortstr"),
               ("reply_to", "shortstr"), ("expiration", "shortstr"), ("message_id", "shortstr"),
               ("timestamp", "longlong"), ("type", "shortstr"), ("user_id", "shortstr"),
               ("app_id", "shortstr"), ("cluster_id", "shortstr")]


def decode_content_header(payload: bytes) -> tuple[int, dict[str, Any], dict[str, Field]]:
    """A content header frame's payload: (body size, properties, typed headers)."""
    reader = _Reader(payload)
    reader.unpack(">H")  # class id
    reader.unpack(">H")  # weight
    body_size = reader.unpack(">Q")
    flags: list[int] = []
    while True:  # bit 0 of each 16-bit word says another word follows
        word = reader.unpack(">H")
        flags.append(word)
        if not word & 1:
            break
    properties: dict[str, Any] = {}
    headers: dict[str, Field] = {}
    for index, (name, kind) in enumerate(_PROPERTIES):
        word, bit = divmod(index, 15)
        if word >= len(flags) or not flags[word] & (1 << (15 - bit)):
            continue
        if kind == "shortstr":
            properties[name] = reader.shortstr()
        elif kind == "octet":
            properties[name] = reader.unpack(">B")
        elif kind == "longlong":
            properties[name] = reader.unpack(">Q")
        else:
            headers = decode_table(reader.longstr())
    return body_size, properties, headers


def type_codes(headers: dict[str, Field]) -> dict[str, list[str]]:
    """Code -> the dotted paths of every value with it, nested tables and arrays included.

    `{"S": ["acemq-error"], "l": ["x-table.n"], "A": ["x-list"], ...}`: a scenario asserts a
    code is absent, and a FAIL shows which header carried it.
    """
    found: dict[str, list[str]] = {}

    def walk(path: str, value: Field) -> None:
        found.setdefault(value.code, []).append(path)
        if value.code == "F":
            for key, inner in value.value.items():
                walk(f"{path}.{key}", inner)
        elif value.code == "A":
            for i, inner in enumerate(value.value):
                walk(f"{path}.{i}", inner)

    for name, value in headers.items():
        walk(name, value)
    return {code: sorted(paths) for code, paths in sorted(found.items())}


def plain(value: Field) -> Any:
    """A typed value as JSON-able data without its codes (strings decoded as UTF-8)."""
    if value.code in ("S", "x"):
        return value.value.decode("utf-8", errors="replace")
    if value.code == "F":
        return {k: plain(v) for k, v in value.value.items()}
    if value.code == "A":
        return [plain(v) for v in value.value]
    if value.code == "D":
        scale, unscaled = value.value
        return unscaled / (10 ** scale)
    return value.value


# -- encoding (only what the client sends) ------------------------------------------------


def _shortstr(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 255:
        raise RawAmqpError(f"short string over 255 bytes: {text[:40]!r}...")
    return struct.pack(">B", len(raw)) + raw


def _longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def _string_table(values: dict[str, str]) -> bytes:
    body = b"".join(_shortstr(k) + b"S" + _longstr(v.encode("utf-8")) for k, v in values.items())
    return _longstr(body)


def method_frame(channel: int, method: tuple[int, int], arguments: bytes = b"") -> bytes:
    payload = struct.pack(">HH", *method) + arguments
    return struct.pack(">BHI", FRAME_METHOD, channel, len(payload)) + payload + bytes([FRAME_END])


# -- the connection -------------------------------------------------------------------------


@dataclass
class _Frame:
    type: int
    channel: int
    payload: bytes

    @property
    def method(self) -> tuple[int, int]:
        return struct.unpack(">HH", self.payload[:4]) if self.type == FRAME_METHOD else (0, 0)


class RawConnection:
    """One connection with channel 1 open; blocking, for one thread. Use as a context manager."""

    def __init__(self, url: str, bound_s: float = 10.0, connection_name: str = "acemq-interop raw probe",
                 ca_file: str | None = None):
        # ca_file: on amqps, the only CA the broker's certificate may chain to (a run's own, --tls)
        self.url, self.bound_s, self.connection_name, self.ca_file = url, bound_s, connection_name, ca_file
        self._sock: Any = None
        self._buffer = b""
        self._frame_max = FRAME_MAX

    def __enter__(self) -> "RawConnection":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def open(self) -> None:
        try:
            self._open()
        except OSError as exc:  # refused, reset (RabbitMQ drops a failed login), timed out
            self.close()
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
            sock = ssl.create_default_context(cafile=self.ca_file).wrap_socket(sock, server_hostname=host)
        self._sock = sock
        sock.sendall(PROTOCOL_HEADER)
        self._expect(0, CONNECTION_START)
        client_properties = _string_table({"product": "acemq-interop", "connection_name": self.connection_name})
        response = f"\0{user}\0{password}".encode("utf-8")
        self._send(method_frame(0, CONNECTION_START_OK, client_properties + _shortstr("PLAIN") + _longstr(response)
                                + _shortstr("en_US")))
        tune = self._expect(0, CONNECTION_TUNE)
        channel_max, frame_max, _heartbeat = struct.unpack(">HIH", tune.payload[4:12])
        self._frame_max = min(frame_max or FRAME_MAX, FRAME_MAX)
        # Heartbeat 0: the connection lives for one step, well under any heartbeat interval.
        self._send(method_frame(0, CONNECTION_TUNE_OK, struct.pack(">HIH", channel_max, self._frame_max, 0)))
        self._send(method_frame(0, CONNECTION_OPEN, _shortstr(vhost) + _shortstr("") + b"\x00"))
        self._expect(0, CONNECTION_OPEN_OK)
        self._send(method_frame(1, CHANNEL_OPEN, _shortstr("")))
        self._expect(1, CHANNEL_OPEN_OK)

    def close(self) -> None:
        if self._sock is None:
            return
        try:
            self._send(method_frame(0, CONNECTION_CLOSE, struct.pack(">H", 200) + _shortstr("bye") + struct.pack(">HH", 0, 0)))
            self._expect(0, CONNECTION_CLOSE_OK)
        except (OSError, RawAmqpError):
            pass  # closing anyway
        finally:
            if self._sock is not None:
                self._sock.close()
            self._sock = None

    def get(self, queue: str, ack: bool = True) -> Message | None:
        """basic.get one message (None when the queue is empty), acked after it is read."""
        self._send(method_frame(1, BASIC_GET, struct.pack(">H", 0) + _shortstr(queue) + b"\x00"))
        frame = self._read_method(1)
        if frame.method == BASIC_GET_EMPTY:
            return None
        if frame.method != BASIC_GET_OK:
            raise RawAmqpError(f"basic.get on {queue}: unexpected method {frame.method}")
        reader = _Reader(frame.payload, 4)
        tag = reader.unpack(">Q")
        redelivered = bool(reader.unpack(">B") & 1)
        exchange, routing_key = reader.shortstr(), reader.shortstr()
        message_count = reader.unpack(">I")
        header = self._read_frame()
        if header.type != FRAME_HEADER:
            raise RawAmqpError(f"expected a content header after basic.get-ok, got frame type {header.type}")
        size, properties, headers = decode_content_header(header.payload)
        body = b""
        while len(body) < size:
            chunk = self._read_frame()
            if chunk.type != FRAME_BODY:
                raise RawAmqpError(f"expected a body frame, got frame type {chunk.type}")
            body += chunk.payload
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

    # -- frames --

    def _send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def _recv_exact(self, n: int) -> bytes:
        while len(self._buffer) < n:
            chunk = self._sock.recv(max(65536, n - len(self._buffer)))
            if not chunk:
                raise RawAmqpError("the broker closed the connection")
            self._buffer += chunk
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def _read_frame(self) -> _Frame:
        while True:
            kind, channel, size = struct.unpack(">BHI", self._recv_exact(7))
            payload = self._recv_exact(size)
            if self._recv_exact(1)[0] != FRAME_END:
                raise RawAmqpError("bad frame end: the stream is out of step")
            if kind == FRAME_HEARTBEAT:
                continue
            return _Frame(kind, channel, payload)

    def _read_method(self, channel: int) -> _Frame:
        frame = self._read_frame()
        if frame.type == FRAME_METHOD and frame.method in (CONNECTION_CLOSE, CHANNEL_CLOSE):
            reader = _Reader(frame.payload, 4)
            code, text = reader.unpack(">H"), reader.shortstr()
            raise RawAmqpError(f"the broker closed the {'connection' if frame.channel == 0 else 'channel'}: {code} {text}")
        if frame.type != FRAME_METHOD or frame.channel != channel:
            raise RawAmqpError(f"expected a method on channel {channel}, got frame type {frame.type} on {frame.channel}")
        return frame

    def _expect(self, channel: int, method: tuple[int, int]) -> _Frame:
        frame = self._read_method(channel)
        if frame.method != method:
            raise RawAmqpError(f"expected method {method}, got {frame.method}")
        return frame
