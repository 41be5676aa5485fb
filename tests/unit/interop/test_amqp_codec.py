"""The suite's one AMQP codec on hand-built bytes: every type code kept with its value (WF-2's
evidence), nested tables and arrays, the content header, and what it writes read back."""
from __future__ import annotations

import datetime
import decimal
import math
import struct

import pytest

from acemq_interop.amqp.codec import (
    CODES, CodecError, Field, Typed, decode_content_header, decode_field_table, decode_table, decode_value,
    encode_content_header, encode_table, encode_value, header_value, plain, shown, type_codes,
)


def name(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw)]) + raw


def longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def entry(key: str, code: str, encoded: bytes) -> bytes:
    return name(key) + code.encode() + encoded


# Every code RabbitMQ speaks, hand-encoded, with the value it must decode to.
EVERY_CODE = {
    "t": (b"\x01", True),
    "b": (struct.pack(">b", -7), -7),
    "B": (b"\xf9", 249),
    "s": (struct.pack(">h", -300), -300),
    "U": (struct.pack(">h", -2), -2),
    "u": (struct.pack(">H", 65000), 65000),
    "I": (struct.pack(">i", -70000), -70000),
    "i": (struct.pack(">I", 4000000000), 4000000000),
    "l": (struct.pack(">q", -9000000000), -9000000000),
    "L": (struct.pack(">Q", 2 ** 63), 2 ** 63),
    "f": (struct.pack(">f", 0.5), 0.5),
    "d": (struct.pack(">d", 0.25), 0.25),
    "D": (b"\x02" + struct.pack(">i", 1234), (2, 1234)),
    "T": (struct.pack(">Q", 1700000000), 1700000000),
    "S": (longstr("été".encode()), "été".encode()),
    "x": (longstr(b"\x00\xff"), b"\x00\xff"),
    "V": (b"", None),
    "F": (longstr(entry("k", "b", struct.pack(">b", -1))), {"k": Field("b", -1)}),
    "A": (longstr(b"d" + struct.pack(">d", -0.5) + b"S" + longstr(b"a")), [Field("d", -0.5), Field("S", b"a")]),
}


def test_the_codes_are_rabbitmqs() -> None:
    assert CODES == set("tbBsUuIilLfdDSxATFV") == set(EVERY_CODE)


def test_every_type_code_is_kept_with_its_value() -> None:
    table = decode_table(b"".join(entry(code, code, encoded) for code, (encoded, _) in EVERY_CODE.items()))
    assert {k: v.code for k, v in table.items()} == {code: code for code in EVERY_CODE}
    assert {k: v.value for k, v in table.items()} == {code: value for code, (_, value) in EVERY_CODE.items()}
    assert table["t"].value is True
    assert plain(table["D"]) == 12.34 and plain(table["S"]) == "été" and plain(table["x"]) == "\x00\ufffd"


def test_a_signed_byte_and_a_double_are_what_was_written() -> None:
    """The bugs pika 1.2 has (and a transcript showed): `b` -7 read as 249, `d` 0.25 as 0."""
    table = decode_table(entry("x-b", "b", b"\xf9") + entry("x-d", "d", struct.pack(">d", 0.25)))
    assert table == {"x-b": Field("b", -7), "x-d": Field("d", 0.25)}
    assert shown(table["x-b"]) == {"type": "b", "value": -7}
    assert shown(table["x-d"]) == {"type": "d", "value": 0.25}


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
    assert shown(table["x-list"]) == {"type": "A", "value": [
        {"type": "S", "value": "a"}, {"type": "u", "value": 2}, {"type": "F", "value": {"deep": {"type": "i", "value": 3}}}]}


def test_an_unknown_code_or_truncated_data_is_an_error_not_a_guess() -> None:
    with pytest.raises(CodecError, match="unknown field type 'Z'"):
        decode_table(entry("z", "Z", b"\x00"))
    with pytest.raises(CodecError, match="truncated"):
        decode_table(entry("I", "I", b"\x00\x01"))
    with pytest.raises(CodecError, match="truncated"):  # a nested table's length beyond its parent's end
        decode_table(entry("F", "F", struct.pack(">I", 50) + b"\x00"))
    with pytest.raises(CodecError, match="truncated"):  # a value running past its array's end
        decode_table(entry("A", "A", longstr(b"I\x00\x00")) + b"\x00\x00")
    with pytest.raises(CodecError, match="truncated"):
        decode_field_table(b"\x00\x00\x00\x09abc")


@pytest.mark.parametrize("code", sorted(EVERY_CODE))
def test_every_code_written_reads_back_the_same(code: str) -> None:
    encoded, value = EVERY_CODE[code]
    assert encode_value(Field(code, value)) == code.encode() + encoded, "byte for byte what was hand-built"
    assert decode_value(encode_value(Field(code, value))) == (Field(code, value), 1 + len(encoded))


def test_a_decoded_table_written_again_is_the_same_bytes() -> None:
    content = b"".join(entry(code, code, encoded) for code, (encoded, _) in EVERY_CODE.items())
    nested = entry("deep", "F", longstr(content)) + entry("list", "A", longstr(b"F" + longstr(content) + b"V"))
    decoded = decode_table(nested)
    assert encode_table(decoded) == longstr(nested)
    assert decode_field_table(encode_table(decoded)) == (decoded, len(nested) + 4)


def test_plain_values_are_written_as_pika_writes_them() -> None:
    moment = datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    table = decode_table(encode_table({
        "str": "été", "bytes": b"\x00", "bool": False, "small": -5, "int32": 2 ** 31 - 1, "big": 2 ** 31, "least": -(2 ** 63),
        "float": 1.5, "dec": decimal.Decimal("-1.25"), "whole": decimal.Decimal("7"), "when": moment, "none": None,
        "table": {"k": 1}, "list": ["a", True], "tuple": (1,),
    })[4:])
    assert {k: v.code for k, v in table.items()} == {
        "str": "S", "bytes": "x", "bool": "t", "small": "I", "int32": "I", "big": "l", "least": "l", "float": "d",
        "dec": "D", "whole": "D", "when": "T", "none": "V", "table": "F", "list": "A", "tuple": "A"}
    assert table["dec"].value == (2, -125) and table["whole"].value == (0, 7) and table["when"].value == 1700000000
    assert table["table"].value == {"k": Field("I", 1)} and table["list"].value == [Field("S", b"a"), Field("t", True)]
    with pytest.raises(CodecError, match="no AMQP field type"):
        encode_value(object())
    with pytest.raises(CodecError):
        encode_value(2 ** 63)  # beyond a signed 64-bit integer: pika refuses it too


def test_a_scenarios_typed_values_are_written_with_their_type() -> None:
    headers = {k: header_value(v) for k, v in {
        "x-bytes": {"bytes": "hi"}, "x-byte": {"byte": -7}, "x-long": {"long": 5}, "x-int": {"int": "12"},
        "x-bool": {"bool": True}, "x-double": {"double": 0.25}, "x-plain": 5,
        "x-table": {"table": {"n": {"byte": 1}}}, "x-array": {"array": [{"long": 2}, "s"]},
    }.items()}
    assert headers["x-byte"] == Typed("b", -7)
    table = decode_table(encode_table(headers)[4:])
    assert {k: (v.code, plain(v)) for k, v in table.items()} == {
        "x-bytes": ("x", "hi"), "x-byte": ("b", -7), "x-long": ("l", 5), "x-int": ("I", 12), "x-bool": ("t", True),
        "x-double": ("d", 0.25), "x-plain": ("I", 5), "x-table": ("F", {"n": 1}), "x-array": ("A", [2, "s"])}
    assert table["x-table"].value["n"].code == "b" and [v.code for v in table["x-array"].value] == ["l", "S"]
    for typed in (Typed("b", 128), Typed("u", -1), Typed("I", 2 ** 31), Typed("i", "x"), Typed("Z", 1), Typed("S", 5)):
        with pytest.raises(CodecError):
            encode_value(typed)


def test_non_finite_and_odd_values_are_shown_as_json_can_hold_them() -> None:
    assert shown(Field("d", math.inf)) == {"type": "d", "value": "inf"}
    assert shown(Field("D", (3, -1500))) == {"type": "D", "value": "-1.500"}
    assert shown(Field("T", 1700000000)) == {"type": "T", "value": 1700000000}
    assert shown(Field("V", None)) == {"type": "V", "value": None}


def content_header(body_size: int, flags: int, properties: bytes) -> bytes:
    return struct.pack(">HHQH", 60, 0, body_size, flags) + properties


def test_content_header_properties_in_flag_order_with_typed_headers() -> None:
    headers = entry("acemq-error", "S", longstr(b"ScenarioFailure: no")) + entry("x-n", "I", struct.pack(">i", 5))
    flags = (1 << 15) | (1 << 13) | (1 << 12) | (1 << 10) | (1 << 9) | (1 << 7) | (1 << 6) | (1 << 5)
    props = (name("application/json") + longstr(headers) + b"\x02" + name("cid-1") + name("amq.gen-q")
             + name("mid-1") + struct.pack(">Q", 1700000000) + name("quote"))
    payload = content_header(42, flags, props)
    size, properties, typed = decode_content_header(payload)
    assert size == 42
    assert properties == {"content_type": "application/json", "delivery_mode": 2, "correlation_id": "cid-1",
                          "reply_to": "amq.gen-q", "message_id": "mid-1", "timestamp": 1700000000, "type": "quote"}
    assert {k: v.code for k, v in typed.items()} == {"acemq-error": "S", "x-n": "I"}
    assert encode_content_header(42, properties, typed) == payload, "written back byte for byte"


def test_every_property_written_reads_back_and_none_is_left_out() -> None:
    properties = {"content_type": "a", "content_encoding": "b", "delivery_mode": 2, "priority": 9, "correlation_id": "c",
                  "reply_to": "", "expiration": "60000", "message_id": "m", "timestamp": 5, "type": "t", "user_id": "u",
                  "app_id": "p", "cluster_id": "k"}
    assert decode_content_header(encode_content_header(7, properties, {"h": Typed("b", -7)})) == (
        7, properties, {"h": Field("b", -7)})
    assert decode_content_header(encode_content_header(0, {"reply_to": None, "message_id": "m"}, None)) == (
        0, {"message_id": "m"}, {})
    assert decode_content_header(encode_content_header(0, {}, {}))[2] == {}, "an empty table is written when asked"
    for wrong in ({"headers": {}}, {"colour": "red"}, {"message_id": 5}, {"priority": 300}):
        with pytest.raises(CodecError):
            encode_content_header(0, wrong)


def test_a_content_header_without_properties_has_no_headers() -> None:
    assert decode_content_header(content_header(0, 0, b"")) == (0, {}, {})
    with pytest.raises(CodecError, match="truncated"):
        decode_content_header(content_header(0, 1 << 8, b"\x05ab"))  # message_id of 5 bytes, 2 there
