"""The shared wire vectors (catalogue/wire-vectors.json), run through the binding's pure functions.

Every binding runs the same cases; this file only converts the probe's typed-header
notation into what pika hands the binding when it decodes a header table.
"""

import json
import os
from pathlib import Path

import pytest

from acemq import wire
from acemq.errors import ShortStringTooLong


def _vectors_file() -> Path:
    explicit = os.environ.get("ACEMQ_WIRE_VECTORS")
    if explicit:
        return Path(explicit)
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / "catalogue" / "wire-vectors.json").is_file():
            return folder / "catalogue" / "wire-vectors.json"
    raise FileNotFoundError(f"no catalogue/wire-vectors.json above {here}; set ACEMQ_WIRE_VECTORS")


VECTORS = json.loads(_vectors_file().read_text(encoding="utf-8"))


def value(notation):
    """A header value in the probe's notation, as pika 1.2 decodes it.

    pika gives every AMQP integer type (l, I, b) as int, a double as a number,
    a byte array (x) as bytes, a table as dict and an array as list.
    """
    if isinstance(notation, str):
        return notation
    if "repeat" in notation:
        return notation["repeat"] * notation["times"]
    (kind, inner), = notation.items()
    if kind == "bytes":
        return inner.encode("utf-8")
    if kind in ("long", "int", "byte"):
        return int(inner)
    if kind == "bool":
        return bool(inner)
    if kind == "double":
        return float(inner)
    if kind == "table":
        return {k: value(v) for k, v in inner.items()}
    if kind == "array":
        return [value(v) for v in inner]
    raise ValueError(f"unknown notation {notation!r}")


def headers(case):
    return {name: value(v) for name, v in case.get("headers", {}).items()}


def cases(group):
    return pytest.mark.parametrize("case", VECTORS[group]["cases"], ids=[c["name"] for c in VECTORS[group]["cases"]])


@cases("header_string")
def test_header_string(case):
    raw = value(case["value"]) if "value" in case else None
    assert wire.header_text(raw) == case["expect"], case["name"]


@cases("reply_address")
def test_reply_address(case):
    options = {"read_order": tuple(case["read_order"])} if "read_order" in case else {}
    reply_to = value(case["reply_to"]) if "reply_to" in case else None
    found = wire.choose_reply_address(headers(case), reply_to, **options)
    got = None if found is None else {"address": found.queue, "source": found.source}
    assert got == case["expect"], case["name"]


@cases("strip_engine_headers")
def test_strip_engine_headers(case):
    assert sorted(wire.strip_engine_headers(headers(case))) == sorted(case["kept"]), case["name"]


@cases("failure_text")
def test_failure_text(case):
    assert wire.failure_text_from(case["type"], case["message"]) == case["expect"], case["name"]


@cases("delivery_attempt")
def test_delivery_attempt(case):
    assert wire.attempt_number(headers(case)) == case["expect"], case["name"]


@cases("retry_decision")
def test_retry_decision(case):
    options = {"max_attempts": case["max_attempts"]} if "max_attempts" in case else {}
    assert wire.retry_decision(case["attempt"], **options) == case["expect"], case["name"]


@cases("short_string")
def test_short_string(case):
    try:
        wire.check_short_string("message_id", value(case["value"]))
        got = "accepted"
    except ShortStringTooLong:
        got = "refused"
    assert got == case["expect"], case["name"]
