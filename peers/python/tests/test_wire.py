"""Pure wire logic only pika's Python side has (the shared cases are in test_wire_vectors.py)."""

import pytest

from acemq import wire
from acemq.errors import ShortStringTooLong


@pytest.mark.parametrize("value", [bytearray(b"amq.gen-1"), memoryview(b"amq.gen-1")])
def test_header_text_reads_every_python_byte_type(value):
    assert wire.header_text(value) == "amq.gen-1"


def test_header_of_missing_headers_is_none():
    assert wire.header(None, wire.ERROR_HEADER) is None
    assert wire.header({wire.ERROR_HEADER: b"Boom: x"}, wire.ERROR_HEADER) == "Boom: x"


def test_reply_address_of_absent_headers():
    assert wire.choose_reply_address(None, "n") == wire.ReplyAddress("n", "native")
    assert wire.choose_reply_address(None, None) is None


class ScenarioFailure(Exception):
    pass


def test_failure_text_of_a_python_exception():
    assert wire.failure_text(ScenarioFailure("no price")) == "ScenarioFailure: no price"
    assert wire.failure_text(KeyError("sku")) == "KeyError: 'sku'"


def test_undeliverable_reason_prefix():
    assert wire.undeliverable_reason("returned").startswith("UndeliverableReply: ")


@pytest.mark.parametrize("headers, attempt", [(None, 1), ({"x-delivery-count": True}, 1), ({"x-delivery-count": 2**40}, 2**40 + 1)])
def test_attempt_number_python_values(headers, attempt):
    assert wire.attempt_number(headers) == attempt


def test_a_refused_short_string_says_which_and_how_long():
    with pytest.raises(ShortStringTooLong) as caught:
        wire.check_short_string("correlation_id", "\u00e9" * 128)
    assert caught.value.length == 256
    assert "correlation_id" in str(caught.value)
    wire.check_short_string("message_id", None)


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
def test_truncation_cuts_on_a_character_boundary(value, cut):
    assert wire.truncate_short_string(value) == cut


def test_strict_header_reader_names_the_first_boolean_table_or_array():
    # As pika 1.2 decodes them: S, x, l, I, b, and d (read as an int) pass.
    tolerated = {"x-trace": "t-1", "x-blob": b"\xc3\xa9", "x-long": 9000000000, "x-int": -7, "x-ratio": 0}
    assert wire.first_strict_header(tolerated) is None
    assert wire.first_strict_header(None) is None
    assert wire.first_strict_header({**tolerated, "x-flag": False, "x-table": {"k": "v"}}) == "x-flag"
    assert wire.first_strict_header({"x-list": ["a", 2], "x-flag": True}) == "x-list"
    assert wire.first_strict_header({"x-table": {}}) == "x-table"


def test_request_id_is_message_id_else_correlation_id():
    # RR-4.2, SG-3.1: a tutorial caller sends its own correlation_id and no message_id.
    assert wire.request_id("m-1", "c-1") == "m-1"
    assert wire.request_id(None, "1") == "1"
    assert wire.request_id("", "2") == "2"
    assert wire.request_id(None, None) is None


def test_direct_reply_to_addresses():
    # RR-14.5: the broker hands a responder amq.rabbitmq.reply-to.<token>.
    assert wire.is_direct_reply_to("amq.rabbitmq.reply-to.g1h2AA5y.H8JZ")
    assert not wire.is_direct_reply_to("amq.gen-abc")
    assert not wire.is_direct_reply_to("c0001.replies")
