"""Pure wire logic of the reference binding: no broker needed."""

import pytest

from acemq import wire
from acemq.errors import ShortStringTooLong


@pytest.mark.parametrize(
    "value, text",
    [
        ("amq.gen-1", "amq.gen-1"),
        (b"amq.gen-1", "amq.gen-1"),
        (bytearray(b"amq.gen-1"), "amq.gen-1"),
        ("caf\u00e9", "caf\u00e9"),
        ("caf\u00e9".encode("utf-8"), "caf\u00e9"),
        ("", ""),
        (None, None),
        (42, None),
        ({"a": 1}, None),
    ],
)
def test_header_text_reads_long_strings_and_byte_arrays(value, text):
    assert wire.header_text(value) == text


def test_header_of_missing_headers_is_none():
    assert wire.header(None, wire.ERROR_HEADER) is None
    assert wire.header({}, wire.ERROR_HEADER) is None
    assert wire.header({wire.ERROR_HEADER: b"Boom: x"}, wire.ERROR_HEADER) == "Boom: x"


def _choose(headers, reply_to, **options):
    address = wire.choose_reply_address(headers, reply_to, **options)
    return None if address is None else (address.queue, address.source)


def test_header_is_read_before_native():
    assert _choose({"acemq-reply-to": "h"}, "n") == ("h", "header")


def test_native_is_the_fallback():
    assert _choose({}, "n") == ("n", "native")
    assert _choose(None, "n") == ("n", "native")


def test_header_as_byte_array_is_a_reply_address():
    assert _choose({"acemq-reply-to": b"h"}, None) == ("h", "header")


@pytest.mark.parametrize("headers, reply_to", [({"acemq-reply-to": ""}, "n"), ({"acemq-reply-to": b""}, "n")])
def test_empty_header_is_absent(headers, reply_to):
    assert _choose(headers, reply_to) == ("n", "native")


@pytest.mark.parametrize("headers, reply_to", [({}, None), ({}, ""), ({"acemq-reply-to": ""}, ""), (None, None)])
def test_no_reply_address(headers, reply_to):
    assert _choose(headers, reply_to) is None


def test_header_only_profile_ignores_native():
    assert _choose({}, "n", header_only=True) is None
    assert _choose({"acemq-reply-to": "h"}, "n", header_only=True) == ("h", "header")


def test_native_first_mutant_reads_the_wrong_way_round():
    assert _choose({"acemq-reply-to": "h"}, "n", native_first=True) == ("n", "native")
    assert _choose({"acemq-reply-to": "h"}, "", native_first=True) == ("h", "header")


class ScenarioFailure(Exception):
    pass


def test_failure_text_uses_the_unqualified_type_name():
    assert wire.failure_text(ScenarioFailure("no price")) == "ScenarioFailure: no price"
    assert wire.failure_text(ValueError("bad")) == "ValueError: bad"
    assert wire.failure_text(KeyError("sku")) == "KeyError: 'sku'"


def test_undeliverable_reason_prefix():
    assert wire.undeliverable_reason("returned").startswith("UndeliverableReply: ")


@pytest.mark.parametrize(
    "headers, attempt",
    [
        (None, 1),
        ({}, 1),
        ({"x-delivery-count": 0}, 1),
        ({"x-delivery-count": 2}, 3),
        ({"x-delivery-count": 2**40}, 2**40 + 1),
        ({"x-delivery-count": True}, 1),
        ({"x-delivery-count": "two"}, 1),
        ({"x-delivery-count": -1}, 1),
    ],
)
def test_attempt_number(headers, attempt):
    assert wire.attempt_number(headers) == attempt


def test_engine_headers_are_stripped_and_others_kept():
    shown = wire.strip_engine_headers({"x-acemq-trace": "t", "acemq-reply-to": "q", "x-custom": 1})
    assert shown == {"acemq-reply-to": "q", "x-custom": 1}
    assert wire.strip_engine_headers(None) == {}


def test_short_strings_up_to_255_bytes_pass():
    wire.check_short_string("message_id", "a" * 255)
    wire.check_short_string("message_id", None)


@pytest.mark.parametrize("value", ["a" * 256, "\u00e9" * 128])
def test_short_strings_over_255_bytes_are_refused(value):
    with pytest.raises(ShortStringTooLong) as caught:
        wire.check_short_string("correlation_id", value)
    assert caught.value.length == 256
    assert "correlation_id" in str(caught.value)


def test_json_bodies_round_trip():
    body = {"sku": "A-1", "qty": 3, "name": "caf\u00e9"}
    assert wire.decode_body(wire.encode_body(body)) == body


def test_empty_body_is_a_decode_error():
    with pytest.raises(ValueError):
        wire.decode_body(b"")


def test_message_ids_are_fresh():
    assert wire.new_message_id() != wire.new_message_id()


@pytest.mark.parametrize(
    "value, cut",
    [("a" * 300, "a" * 255), ("\u00e9" * 200, "\u00e9" * 127), ("short", "short"), (None, None)],
)
def test_truncates_short_strings_mutant_cuts_on_a_character_boundary(value, cut):
    assert wire.truncate_short_string(value) == cut


def test_strict_header_types_mutant_names_the_first_boolean_table_or_array():
    # As pika 1.2 decodes them: S, x, l, I, b, and d (read as an int) pass.
    tolerated = {"x-trace": "t-1", "x-blob": b"\xc3\xa9", "x-long": 9000000000, "x-int": -7, "x-ratio": 0}
    assert wire.first_strict_header(tolerated) is None
    assert wire.first_strict_header(None) is None
    assert wire.first_strict_header({**tolerated, "x-flag": False, "x-table": {"k": "v"}}) == "x-flag"
    assert wire.first_strict_header({"x-list": ["a", 2], "x-flag": True}) == "x-list"
    assert wire.first_strict_header({"x-table": {}}) == "x-table"
