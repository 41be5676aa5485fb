"""What acemq puts on the wire and how it reads it back: header names, header
decoding, the reply address, failure text, attempts and short strings.

Pure functions only: nothing here touches a connection.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from .errors import ShortStringTooLong

REPLY_TO_HEADER = "acemq-reply-to"
# RabbitMQ's direct reply-to: the broker gives a responder reply_to amq.rabbitmq.reply-to.<token>.
DIRECT_REPLY_TO_PREFIX = "amq.rabbitmq.reply-to."
ERROR_HEADER = "acemq-error"
DEAD_LETTER_REASON_HEADER = "acemq-dead-letter-reason"
RESPONSE_MESSAGE_ID_HEADER = "responseMessageId"
ENGINE_HEADER_PREFIX = "x-acemq-"
SPEC_HEADER_PREFIX = "acemq-"  # the spec's own headers (acemq-reply-to, acemq-error, ...)
DELIVERY_COUNT_HEADER = "x-delivery-count"
TYPE_HEADER = "type"  # only where a defective binding puts the type (the type_carrier policy)
MALFORMED_REQUEST = "MalformedRequest"
CONTENT_TYPE = "application/json"
UNDELIVERABLE_REPLY = "UndeliverableReply"
SHORT_STRING_MAX = 255

SOURCE_HEADER = "header"
SOURCE_NATIVE = "native"

DEFAULT_MAX_ATTEMPTS = 3  # RR-14
RETRY_REQUEUE = "requeue"
RETRY_DEAD_LETTER = "dead_letter"


def new_message_id() -> str:
    """A fresh request id (used as the AMQP ``message_id``)."""
    return uuid.uuid4().hex


def header_text(value: Any) -> Optional[str]:
    """A spec header's value as text (RR-2).

    Peers send these headers as long strings or byte arrays depending on their
    client library; both decode to the same text. Anything else is not a
    spec header value and reads as absent.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return None


def header(headers: Optional[Mapping[str, Any]], name: str) -> Optional[str]:
    """The text of one spec header, or None when absent (or not text)."""
    if not headers:
        return None
    return header_text(headers.get(name))


def non_empty(value: Optional[str]) -> Optional[str]:
    """Empty and absent mean the same (RR-3): amqp091-go cannot write ''."""
    return value if value else None


@dataclass(frozen=True)
class ReplyAddress:
    """Where a reply goes and where the responder found that out."""

    queue: str
    source: str  # SOURCE_HEADER or SOURCE_NATIVE


def choose_reply_address(
    headers: Optional[Mapping[str, Any]],
    reply_to: Optional[str],
    read_order: Sequence[str] = (SOURCE_HEADER, SOURCE_NATIVE),
    bytes_header: bool = True,
) -> Optional[ReplyAddress]:
    """The reply address of a request (RR-3), or None when it names none (RR-12).

    ``read_order`` lists the places to look, first to last: the header, then
    the native ``reply_to`` (the spec). A place left out is never read.
    ``bytes_header`` False takes a header written as a byte array as absent,
    the defect RR-2 forbids.
    """
    for source in read_order:
        if source == SOURCE_HEADER:
            raw = (headers or {}).get(REPLY_TO_HEADER)
            readable = bytes_header or not isinstance(raw, (bytes, bytearray, memoryview))
            queue = non_empty(header(headers, REPLY_TO_HEADER)) if readable else None
        else:
            queue = non_empty(header_text(reply_to))
        if queue is not None:
            return ReplyAddress(queue, source)
    return None


def failure_text(exc: BaseException) -> str:
    """``{ExceptionType}: {message}`` with the unqualified type name (RR-10)."""
    return failure_text_from(type(exc).__name__, str(exc))


def qualified_failure_text(exc: BaseException) -> str:
    """``{module.Type}: {message}``: the qualified type name RR-10.2 forbids (a defect's text).

    A class of the program run with ``python -m`` has the module ``__main__``;
    its name is the one the program was run by.
    """
    kind = type(exc)
    module = kind.__module__
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        module = spec.name if spec is not None else module
    return f"{module}.{kind.__qualname__}: {exc}"


def failure_text_from(type_name: str, message: str) -> str:
    """The failure text from a type name as any language reports it, and a message (RR-10.2).

    The name is cut after its last ``.``, ``::``, ``/`` or ``$`` (namespaces,
    modules, packages, nested classes) and loses a leading ``*`` or ``&``
    (a Go pointer, a Rust reference).
    """
    unqualified = re.split(r"\.|::|/|\$", type_name)[-1].lstrip("*&")
    return f"{unqualified}: {message}"


def retry_decision(attempt: int, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> str:
    """After a reply publish failed on ``attempt``: RETRY_REQUEUE, or RETRY_DEAD_LETTER on the last (RR-14)."""
    return RETRY_REQUEUE if attempt < max_attempts else RETRY_DEAD_LETTER


def undeliverable_reason(detail: str) -> str:
    """The dead-letter reason of a reply that could not be delivered (RR-14)."""
    return f"{UNDELIVERABLE_REPLY}: {detail}"


def attempt_number(headers: Optional[Mapping[str, Any]], base: int = 1) -> int:
    """``x-delivery-count + 1``; 1 when the header is absent or not a count (RR-14).

    The count may arrive as any integer field type (pika reads ``l`` as
    unsigned, amqplib writes ``b``): pika gives each as an int. A string, a
    boolean or a negative number is no count. ``base`` is what a count of 0 (or
    none) numbers: 1 in the spec.
    """
    raw = (headers or {}).get(DELIVERY_COUNT_HEADER)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        return base
    return raw + base


def strip_engine_headers(headers: Optional[Mapping[str, Any]], prefix: str = ENGINE_HEADER_PREFIX) -> dict[str, Any]:
    """Every header except the engine's ``x-acemq-*`` namespace (RR-5).

    ``prefix`` is the namespace removed; only a defect removes more (``x-``).
    """
    return {
        name: value
        for name, value in (headers or {}).items()
        if not name.startswith(prefix)
    }


def check_short_string(name: str, value: Optional[str]) -> None:
    """Refuse, never truncate, a short-string property over 255 bytes (RR-18)."""
    if value is None:
        return
    length = len(value.encode("utf-8"))
    if length > SHORT_STRING_MAX:
        raise ShortStringTooLong(name, length)


def truncate_short_string(value: Optional[str]) -> Optional[str]:
    """Cut a short string to 255 bytes: the defect RR-18 forbids, for the ``truncate`` policy.

    The cut falls on a UTF-8 character boundary, as amqp091-go's does not, so
    the value still encodes.
    """
    if value is None:
        return None
    return value.encode("utf-8")[:SHORT_STRING_MAX].decode("utf-8", errors="ignore")


def first_strict_header(headers: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The name of the first header a strict reader refuses (the ``strict`` header policy, WF-1).

    A strict reader refuses booleans, floating-point numbers, tables and arrays. pika
    1.2 decodes doubles and floats (``d``, ``f``) as ints, so a float header
    cannot be told from an integer one here: only booleans (bool), tables
    (dict) and arrays (list) are detected.
    """
    for name, value in (headers or {}).items():
        if isinstance(value, (bool, dict, list)):
            return name
    return None


def encode_body(value: Any) -> bytes:
    """A JSON body as UTF-8 (RR-19)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def malformed_request_text(error: ValueError) -> str:
    """The failure text of a request whose body is not JSON: ``MalformedRequest: {decoder's message}``."""
    return f"{MALFORMED_REQUEST}: {error}"


def decode_body(body: bytes) -> Any:
    """Decode a JSON body; raises ValueError (with the decoder's message) when it is not."""
    return json.loads(body.decode("utf-8"))


def is_direct_reply_to(address: str) -> bool:
    """An address of RabbitMQ's direct reply-to (RR-14): a reply to it is at most once."""
    return address.startswith(DIRECT_REPLY_TO_PREFIX)


def request_id(message_id: Optional[str], correlation_id: Optional[str]) -> Optional[str]:
    """The request's id (RR-4, SG-3): its message_id, or its correlation_id when it has none."""
    return message_id if message_id else correlation_id
