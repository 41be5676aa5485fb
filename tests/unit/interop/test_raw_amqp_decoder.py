"""The raw AMQP client's decoder on hand-built bytes: every type code kept (WF-2's evidence)."""
from __future__ import annotations

import struct

import pytest

from acemq_interop.amqp.raw_client import (
    Field, RawAmqpError, decode_content_header, decode_table, method_frame, plain, type_codes,
)


def name(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw)]) + raw


def longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def entry(key: str, code: str, encoded: bytes) -> bytes:
    return name(key) + code.encode() + encoded


def test_every_scalar_type_code_is_kept_with_its_value() -> None:
    data = b"".join([
        entry("t", "t", b"\x01"),
        entry("b", "b", struct.pack(">b", -7)),
        entry("B", "B", b"\xf9"),
        entry("s", "s", struct.pack(">h", -300)),
        entry("U", "U", struct.pack(">h", -2)),
        entry("u", "u", struct.pack(">H", 65000)),
        entry("I", "I", struct.pack(">i", -70000)),
        entry("i", "i", struct.pack(">I", 4000000000)),
        entry("l", "l", struct.pack(">q", -9000000000)),
        entry("L", "L", struct.pack(">Q", 2 ** 63)),
        entry("f", "f", struct.pack(">f", 0.5)),
        entry("d", "d", struct.pack(">d", 0.25)),
        entry("D", "D", b"\x02" + struct.pack(">i", 1234)),
        entry("T", "T", struct.pack(">Q", 1700000000)),
        entry("S", "S", longstr("été".encode())),
        entry("x", "x", longstr(b"\x00\xff")),
        entry("V", "V", b""),
    ])
    table = decode_table(data)
    assert {k: v.code for k, v in table.items()} == {k: k for k in "tbBsUuIilLfdDTSxV"}
    assert table["t"].value is True
    assert table["b"].value == -7 and table["B"].value == 249
    assert table["s"].value == -300 and table["U"].value == -2 and table["u"].value == 65000
    assert table["I"].value == -70000 and table["i"].value == 4000000000
    assert table["l"].value == -9000000000 and table["L"].value == 2 ** 63
    assert table["f"].value == 0.5 and table["d"].value == 0.25
    assert table["D"].value == (2, 1234) and plain(table["D"]) == 12.34
    assert table["S"].value == "été".encode() and plain(table["S"]) == "été"
    assert table["x"].value == b"\x00\xff"
    assert table["V"].value is None


def test_nested_tables_and_arrays_keep_the_codes_of_their_values() -> None:
    inner = entry("n", "l", struct.pack(">q", 1)) + entry("k", "S", longstr(b"v"))
    array = b"S" + longstr(b"a") + b"u" + struct.pack(">H", 2) + b"F" + longstr(entry("deep", "i", struct.pack(">I", 3)))
    table = decode_table(entry("x-table", "F", longstr(inner)) + entry("x-list", "A", longstr(array)))
    assert table["x-table"] == Field("F", {"n": Field("l", 1), "k": Field("S", b"v")})
    assert [v.code for v in table["x-list"].value] == ["S", "u", "F"]
    assert plain(table["x-list"]) == ["a", 2, {"deep": 3}]
    assert type_codes(table) == {
        "A": ["x-list"], "F": ["x-list.2", "x-table"], "S": ["x-list.0", "x-table.k"],
        "i": ["x-list.2.deep"], "l": ["x-table.n"], "u": ["x-list.1"],
    }


def test_an_unknown_code_or_truncated_data_is_an_error_not_a_guess() -> None:
    with pytest.raises(RawAmqpError, match="unknown field type 'Z'"):
        decode_table(entry("z", "Z", b"\x00"))
    with pytest.raises(RawAmqpError, match="truncated"):
        decode_table(entry("I", "I", b"\x00\x01"))


def content_header(body_size: int, flags: int, properties: bytes) -> bytes:
    return struct.pack(">HHQH", 60, 0, body_size, flags) + properties


def test_content_header_properties_in_flag_order_with_typed_headers() -> None:
    headers = entry("acemq-error", "S", longstr(b"ScenarioFailure: no")) + entry("x-n", "I", struct.pack(">i", 5))
    flags = (1 << 15) | (1 << 13) | (1 << 12) | (1 << 10) | (1 << 9) | (1 << 7) | (1 << 6) | (1 << 5)
    props = (name("application/json") + longstr(headers) + b"\x02" + name("cid-1") + name("amq.gen-q")
             + name("mid-1") + struct.pack(">Q", 1700000000) + name("quote"))
    size, properties, typed = decode_content_header(content_header(42, flags, props))
    assert size == 42
    assert properties == {"content_type": "application/json", "delivery_mode": 2, "correlation_id": "cid-1",
                          "reply_to": "amq.gen-q", "message_id": "mid-1", "timestamp": 1700000000, "type": "quote"}
    assert {k: v.code for k, v in typed.items()} == {"acemq-error": "S", "x-n": "I"}


def test_a_content_header_without_properties_has_no_headers() -> None:
    assert decode_content_header(content_header(0, 0, b"")) == (0, {}, {})


def test_method_frames_are_framed_as_0_9_1_says() -> None:
    frame = method_frame(1, (60, 80), struct.pack(">QB", 7, 0))
    assert frame[:7] == struct.pack(">BHI", 1, 1, 4 + 9)
    assert frame[7:11] == struct.pack(">HH", 60, 80)
    assert frame[-1] == 0xCE
