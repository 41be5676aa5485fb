"""The suite's one AMQP 0-9-1 codec: field tables and the basic content header, typed.

Every field value keeps its wire type code both ways. Decoding gives a `Field(code, value)`
for each value, nested ones included, so a reader tells a header written as `I` from one
written as `i`, or `S` from `x` (pika decodes the codes away, and 1.2 even reads `b` as
unsigned and doubles as integers). Encoding writes a `Field` or a `Typed` value with exactly
its code, and a plain Python value the way pika would (text `S`, bytes `x`, bool `t`, int
`I` or `l`...), so the probe can write what a scenario describes, a defective binding's
types included.

Type codes are RabbitMQ's (its errata to 0-9-1, what every client here speaks):

    t bool          b int8          B uint8         s, U int16      u uint16
    I int32         i uint32        l int64         L uint64        f float32
    d float64       D decimal       S long string   x byte array    A array
    T timestamp     F table         V void (no value)

Decoded values: `bytes` for `S` and `x` (`plain` makes text of them), `bool` for `t`, `int`
for the integers and `T` (seconds since the epoch), `float` for `f` and `d`, `(scale,
unscaled)` for `D`, a dict of Fields for `F`, a list of Fields for `A`, None for `V`.

Pure functions over bytes: the raw client (raw_client.py) frames what they make, and the
probe (probe.py) and the transcript (transcript.py) use them through it.
"""
from __future__ import annotations

import calendar
import datetime
import decimal
import math
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


class CodecError(ValueError):
    """Bytes this codec cannot read (truncated, an unknown type code), or a value it cannot write."""


@dataclass(slots=True)
class Field:
    """A field value and its wire type code (`S`, `x`, `l`, ...); see the module for `value`.

    Not frozen: the tracer makes one for every value of every firehose message, and a frozen
    dataclass is twice as slow to make. Nothing here changes one once made."""

    code: str
    value: Any


# -- a scenario's typed header values ------------------------------------------------


@dataclass(frozen=True)
class Typed:
    """A header value with an explicit AMQP field type (`x`, `b`, `l`, `I`, `t`, `d`; the
    raw client's tests also write `B`, `u` and `i`, which WF-2 forbids a scenario to)."""

    kind: str
    value: Any


TYPE_WORDS = {"bytes": "x", "byte": "b", "long": "l", "int": "I", "bool": "t", "double": "d"}


def header_value(spec: Any) -> Any:
    """A scenario's header value: a plain value, or `{bytes: ...}`, `{long: 5}`, `{table: {...}}`...

    A header value is plain (text, an integer, a boolean, null, a list, a table) or typed
    with one of TYPE_WORDS, which choose its AMQP field type exactly, so a scenario can write
    what a defective binding would (a byte array, a `b`-typed number)."""
    if isinstance(spec, dict) and len(spec) == 1:
        (word, value), = spec.items()
        if word in TYPE_WORDS:
            return Typed(TYPE_WORDS[word], value)
        if word == "table":
            return {k: header_value(v) for k, v in value.items()}
        if word == "array":
            return [header_value(v) for v in value]
    return spec


# -- decoding ---------------------------------------------------------------------------

# Fixed-size values: code -> struct (big-endian).
FIXED = {code: struct.Struct(fmt) for code, fmt in {
    "t": ">B", "b": ">b", "B": ">B", "s": ">h", "U": ">h", "u": ">H", "I": ">i", "i": ">I",
    "l": ">q", "L": ">Q", "f": ">f", "d": ">d", "T": ">Q"}.items()}
CODES = frozenset(FIXED) | {"D", "S", "x", "A", "F", "V"}

_U8, _U16, _U32, _U64 = struct.Struct(">B"), struct.Struct(">H"), struct.Struct(">I"), struct.Struct(">Q")
_DECIMAL = struct.Struct(">Bi")


def _truncated(wanted: int, offset: int, size: int) -> CodecError:
    return CodecError(f"truncated AMQP data: wanted {wanted} bytes at offset {offset} of {size}")


def _unpack(fmt: struct.Struct, data: bytes, offset: int, end: int) -> Any:
    if offset + fmt.size > end:
        raise _truncated(fmt.size, offset, end)
    return fmt.unpack_from(data, offset)[0]


def _shortstr(data: bytes, offset: int, end: int) -> tuple[str, int]:
    if offset >= end:
        raise _truncated(1, offset, end)
    start = offset + 1
    stop = start + data[offset]
    if stop > end:
        raise _truncated(stop - start, start, end)
    return data[start:stop].decode("utf-8", errors="replace"), stop


def _sized(data: bytes, offset: int, end: int) -> tuple[int, int]:
    """The (start, stop) of a 4-byte-length-prefixed run at `offset`, within `end`."""
    start = offset + 4
    if start > end:
        raise _truncated(4, offset, end)
    stop = start + _U32.unpack_from(data, offset)[0]
    if stop > end:
        raise _truncated(stop - start, start, end)
    return start, stop


# The decoder is the tracer's hot path (every value of every firehose message): plain
# functions over (data, offset, end), every bound checked against the enclosing value's end.
def _value(data: bytes, offset: int, end: int) -> tuple[Field, int]:
    if offset >= end:
        raise _truncated(1, offset, end)
    code = chr(data[offset])
    offset += 1
    fixed = FIXED.get(code)
    if fixed is not None:
        stop = offset + fixed.size
        if stop > end:
            raise _truncated(fixed.size, offset, end)
        value = fixed.unpack_from(data, offset)[0]
        return Field(code, bool(value) if code == "t" else value), stop
    if code == "S" or code == "x":
        start, stop = _sized(data, offset, end)
        return Field(code, data[start:stop]), stop
    if code == "F":
        start, stop = _sized(data, offset, end)
        return Field(code, _table(data, start, stop)), stop
    if code == "A":
        start, stop = _sized(data, offset, end)
        items = []
        at = start
        while at < stop:
            item, at = _value(data, at, stop)
            items.append(item)
        return Field(code, items), stop
    if code == "D":
        if offset + _DECIMAL.size > end:
            raise _truncated(_DECIMAL.size, offset, end)
        return Field(code, _DECIMAL.unpack_from(data, offset)), offset + _DECIMAL.size
    if code == "V":
        return Field(code, None), offset
    raise CodecError(f"unknown field type {code!r} at offset {offset - 1}")


def _table(data: bytes, offset: int, end: int) -> dict[str, Field]:
    table: dict[str, Field] = {}
    while offset < end:
        start = offset + 1
        stop = start + data[offset]
        if stop > end:
            raise _truncated(stop - start, start, end)
        table[data[start:stop].decode("utf-8", errors="replace")], offset = _value(data, stop, end)
    return table


def decode_table(data: bytes) -> dict[str, Field]:
    """A field table's content (without its 4-byte length), every value typed."""
    data = bytes(data)
    return _table(data, 0, len(data))


def decode_field_table(data: bytes, offset: int = 0) -> tuple[dict[str, Field], int]:
    """A field table with its 4-byte length at `offset`: (the table, the offset after it)."""
    data = bytes(data)
    start, stop = _sized(data, offset, len(data))
    return _table(data, start, stop), stop


def decode_value(data: bytes, offset: int = 0) -> tuple[Field, int]:
    """One field value (its type code first) at `offset`: (the Field, the offset after it)."""
    data = bytes(data)
    return _value(data, offset, len(data))


# Basic's property flags, highest bit first (0-9-1, class basic).
PROPERTIES = (("content_type", "shortstr"), ("content_encoding", "shortstr"), ("headers", "table"),
              ("delivery_mode", "octet"), ("priority", "octet"), ("correlation_id", "shortstr"),
              ("reply_to", "shortstr"), ("expiration", "shortstr"), ("message_id", "shortstr"),
              ("timestamp", "longlong"), ("type", "shortstr"), ("user_id", "shortstr"),
              ("app_id", "shortstr"), ("cluster_id", "shortstr"))
_PROPERTY_KINDS = dict(PROPERTIES)
BASIC_CLASS = 60


def decode_content_header(payload: bytes) -> tuple[int, dict[str, Any], dict[str, Field]]:
    """A content header frame's payload: (body size, properties, typed headers).

    `properties` holds every property present but `headers` (shortstr ones as text, octets
    and the timestamp as int); the headers table is returned apart, every value typed."""
    payload = bytes(payload)
    end = len(payload)
    if end < 12:
        raise _truncated(12, 0, end)
    body_size = _U64.unpack_from(payload, 4)[0]  # after class id and weight
    offset = 12
    flags: list[int] = []
    while True:  # bit 0 of each 16-bit word says another word follows
        word = _unpack(_U16, payload, offset, end)
        offset += 2
        flags.append(word)
        if not word & 1:
            break
    properties: dict[str, Any] = {}
    headers: dict[str, Field] = {}
    for index, (name, kind) in enumerate(PROPERTIES):
        word, bit = divmod(index, 15)
        if word >= len(flags) or not flags[word] & (1 << (15 - bit)):
            continue
        if kind == "shortstr":
            properties[name], offset = _shortstr(payload, offset, end)
        elif kind == "octet":
            properties[name] = _unpack(_U8, payload, offset, end)
            offset += 1
        elif kind == "longlong":
            properties[name] = _unpack(_U64, payload, offset, end)
            offset += 8
        else:
            start, offset = _sized(payload, offset, end)
            headers = _table(payload, start, offset)
    return body_size, properties, headers


# -- encoding ---------------------------------------------------------------------------


def shortstr(text: str) -> bytes:
    """A short string: one length byte, then at most 255 bytes of UTF-8."""
    if not isinstance(text, str):
        raise CodecError(f"a short string must be text, not {type(text).__name__} ({text!r})")
    raw = text.encode("utf-8")
    if len(raw) > 255:
        raise CodecError(f"short string over 255 bytes: {text[:40]!r}...")
    return _U8.pack(len(raw)) + raw


def longstr(raw: bytes) -> bytes:
    """A long string or byte array: a 4-byte length, then the bytes."""
    return _U32.pack(len(raw)) + raw


def _text_or_bytes(value: Any, code: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise CodecError(f"AMQP type {code!r} takes text or bytes, not {type(value).__name__} ({value!r})")


def _decimal(value: Any) -> tuple[int, int]:
    if isinstance(value, tuple) and len(value) == 2:
        return int(value[0]), int(value[1])
    number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    exponent = number.as_tuple().exponent
    if not isinstance(exponent, int):
        raise CodecError(f"AMQP type 'D' cannot hold {value!r}")
    scale = -exponent if exponent < 0 else 0
    return scale, int(number.scaleb(scale))


def _typed(code: str, value: Any) -> bytes:
    """`value` written with type `code`, the code first."""
    tag = code.encode("latin-1")
    try:
        if code == "t":
            return tag + (b"\x01" if (value if isinstance(value, bool) else int(value)) else b"\x00")
        if code == "T" and isinstance(value, datetime.datetime):
            return tag + _U64.pack(calendar.timegm(value.utctimetuple()))
        fixed = FIXED.get(code)
        if fixed is not None:
            return tag + fixed.pack(float(value) if code in ("f", "d") else int(value))
        if code in ("S", "x"):
            return tag + longstr(_text_or_bytes(value, code))
        if code == "F":
            if not isinstance(value, Mapping):
                raise CodecError(f"AMQP type 'F' takes a table, not {type(value).__name__}")
            return tag + encode_table(value)
        if code == "A":
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
                raise CodecError(f"AMQP type 'A' takes a list, not {type(value).__name__}")
            return tag + longstr(b"".join(encode_value(v) for v in value))
        if code == "D":
            return tag + _DECIMAL.pack(*_decimal(value))
        if code == "V":
            return tag
    except (struct.error, TypeError, ValueError, OverflowError, decimal.InvalidOperation) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"{value!r} cannot be written as AMQP type {code!r}: {exc}") from None
    raise CodecError(f"no AMQP field type {code!r} (RabbitMQ's: {' '.join(sorted(CODES))})")


def _int32(value: int) -> bool:
    return -(2 ** 31) <= value < 2 ** 31


def encode_value(value: Any) -> bytes:
    """One field value, its type code first: a Field or Typed value with its own code, a plain
    value as pika writes it (str `S`, bytes `x`, bool `t`, int `I` when it fits 32 bits else
    `l`, Decimal `D`, datetime `T`, dict `F`, list `A`, None `V`; a float as `d`)."""
    if isinstance(value, Field):
        return _typed(value.code, value.value)
    if isinstance(value, Typed):
        return _typed(value.kind, value.value)
    if isinstance(value, str):
        return _typed("S", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _typed("x", value)
    if isinstance(value, bool):
        return _typed("t", value)
    if isinstance(value, int):
        return _typed("I" if _int32(value) else "l", value)
    if isinstance(value, float):
        return _typed("d", value)
    if isinstance(value, decimal.Decimal):
        return _typed("D", value)
    if isinstance(value, datetime.datetime):
        return _typed("T", value)
    if isinstance(value, Mapping):
        return _typed("F", value)
    if isinstance(value, (list, tuple)):
        return _typed("A", value)
    if value is None:
        return b"V"
    raise CodecError(f"no AMQP field type for a {type(value).__name__} ({value!r})")


def encode_table(table: Mapping[str, Any]) -> bytes:
    """A field table with its 4-byte length; values as `encode_value` writes them."""
    return longstr(b"".join(shortstr(str(name)) + encode_value(value) for name, value in table.items()))


def encode_content_header(body_size: int, properties: Mapping[str, Any], headers: Mapping[str, Any] | None = None) -> bytes:
    """A basic content header frame's payload: the properties given (None ones left out),
    and `headers` as the headers table when it is not None (an empty table is written)."""
    unknown = sorted(set(properties) - set(_PROPERTY_KINDS) | ({"headers"} & set(properties)))
    if unknown:
        raise CodecError(f"not a basic property (headers go apart): {', '.join(unknown)}")
    flags = 0
    parts: list[bytes] = []
    for index, (name, kind) in enumerate(PROPERTIES):
        value = headers if name == "headers" else properties.get(name)
        if value is None:
            continue
        flags |= 1 << (15 - index)
        try:
            if kind == "shortstr":
                parts.append(shortstr(value))
            elif kind == "octet":
                parts.append(_U8.pack(value))
            elif kind == "longlong":
                parts.append(_U64.pack(value))
            else:
                parts.append(encode_table(value))
        except (struct.error, TypeError) as exc:
            raise CodecError(f"property {name} cannot be {value!r}: {exc}") from None
    return struct.pack(">HHQH", BASIC_CLASS, 0, body_size, flags) + b"".join(parts)


# -- reading what was decoded ------------------------------------------------------------


def plain(value: Field) -> Any:
    """A typed value as JSON-able data without its codes (strings decoded as UTF-8, a decimal
    as a float)."""
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


def shown(value: Field) -> Any:
    """A typed value as JSON that keeps every code: `{"type": "S", "value": "..."}`, nested
    values alike; a decimal as its exact text, a non-finite float as text."""
    code, inner = value.code, value.value
    if code == "F":
        return {"type": code, "value": {k: shown(v) for k, v in inner.items()}}
    if code == "A":
        return {"type": code, "value": [shown(v) for v in inner]}
    if isinstance(inner, (bytes, bytearray)):
        return {"type": code, "value": bytes(inner).decode("utf-8", errors="replace")}
    if code == "D" and isinstance(inner, tuple):
        scale, unscaled = inner
        return {"type": code, "value": str(decimal.Decimal(unscaled).scaleb(-scale))}
    if isinstance(inner, float) and not math.isfinite(inner):
        return {"type": code, "value": str(inner)}
    if isinstance(inner, (str, int, float, bool)) or inner is None:
        return {"type": code, "value": inner}
    return {"type": code, "value": str(inner)}


def type_codes(headers: Mapping[str, Field]) -> dict[str, list[str]]:
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
