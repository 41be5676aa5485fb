"""Private: the knobs a requester or responder resolves once, when it is opened.

Not part of acemq's API. A service never sets these: ``Requester.open`` and
``Responder.start`` always use the defaults, which are the wire spec. Only the
conformance adapter reaches other values, through ``acemq._conformance``, to
replay older releases and to prove the suite catches deliberate defects.

Each field is one knob of the catalogue's ``policies`` (catalogue/catalogue.yaml),
spelled the same, with the same values (strings where the catalogue has a
choice) and the catalogue's default.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

# The allowed values of every knob that is a choice, checked when a policy is made:
# a misspelt value would otherwise behave as the default without a word.
_CHOICES: dict[str, tuple[str, ...]] = {
    "match_replies_by": ("correlation_id", "oldest_waiter"),
    "long_short_string": ("refuse", "truncate"),
    "undecodable_reply": ("decode_error", "drop"),
    "gather_copy_ids": ("shared", "distinct"),
    "multi_copies": ("expected_count", "one"),
    "gather_demux_by": ("response_message_id", "correlation_id"),
    "gather_shortfall": ("reject", "resolve"),
    "gather_missing_count": ("budget", "one", "copies"),
    "gather_stray_reply": ("unmatched", "oldest_gather"),
    "reply_correlation_from": ("request_id", "message_id", "correlation_id"),
    "handler_failure": ("error_reply", "retry"),
    "unanswerable": ("accept", "dead_letter"),
    "undeliverable_reply": ("requeue", "ack"),
    "answered_timing": ("before_publish", "after_confirm"),
    "counters_created": ("before_subscribe", "after_first_delivery"),
    "dlq_queue_type": ("quorum", "classic"),
    "header_types": ("lenient", "strict"),
    "gather_default_correlation": ("request_message_id", "none"),
    "pending_at_close": ("end_closed", "wait"),
    "type_carrier": ("property", "header"),
    "failure_reply_delivery": ("checked", "unchecked"),
    "malformed_request": ("fail_reply", "drop", "reply_only"),
    "dead_letter_copy": ("full", "id_and_headers"),
    "native_address": ("reply_queue", "stale", "empty"),
    "unmatched_reply": ("drop", "oldest_waiter"),
    "timeout_outcome": ("timeout", "null_reply"),
    "unknown_reply_headers": ("ignore", "fail"),
    "publish_copies": (1, 2),
    "multi_copies_without_count": (1, 0),
    "bytes_address": ("accept", "ignore"),
    "reply_content_type": ("application/json", "none"),
    "strip_prefix": ("x-acemq-", "x-"),
    "failure_body": ("empty", "json"),
    "error_type_name": ("simple", "qualified"),
    "last_attempt": ("dead_letter", "ack"),
    "request_queue": ("quorum", "classic_if_missing"),
    "request_deadline": ("timeout", "late"),
    "gather_deadline": ("fixed", "restart_per_reply"),
    "gather_failure_reply": ("drop", "keep"),
    "request_correlation_id": ("message_id", "none"),
    "direct_reply_to": ("at_most_once", "checked"),
    "on_connection_lost": ("end_lost", "wait"),
    "ack_timing": ("after_handling", "on_delivery"),
}
READ_FROM = ("header", "native")


def _check(policy: object) -> None:
    for field in fields(policy):  # type: ignore[arg-type]
        value = getattr(policy, field.name)
        allowed = _CHOICES.get(field.name)
        if allowed is not None and value not in allowed:
            raise ValueError(f"{field.name} is {value!r}; it takes one of {', '.join(allowed)}")
        if field.type == "bool" and not isinstance(value, bool):
            raise ValueError(f"{field.name} is {value!r}; it takes true or false")
        if field.type == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{field.name} is {value!r}; it takes a whole number")


@dataclass(frozen=True)
class RequesterPolicy:
    """How a requester (and its gathers) writes requests and routes replies."""

    write_header_address: bool = True  # RR-1
    write_native_address: bool = True  # RR-1
    header_address_as_bytes: bool = False  # RR-2
    reply_queue_per_request: bool = False  # RR-6
    explicit_reply_queue_type: bool = True  # RR-7
    match_replies_by: Literal["correlation_id", "oldest_waiter"] = "correlation_id"  # RR-8
    count_timeouts: bool = True  # RR-9
    read_error_header: bool = True  # RR-10
    honour_returns: bool = True  # RR-13
    long_short_string: Literal["refuse", "truncate"] = "refuse"  # RR-18
    undecodable_reply: Literal["decode_error", "drop"] = "decode_error"  # RR-19
    gather_copy_ids: Literal["shared", "distinct"] = "shared"  # SG-1
    multi_copies: Literal["expected_count", "one"] = "expected_count"  # SG-2
    gather_demux_by: Literal["response_message_id", "correlation_id"] = "response_message_id"  # SG-4
    gather_resolves_early: bool = True  # SG-5
    gather_shortfall: Literal["reject", "resolve"] = "reject"  # SG-6
    gather_missing_count: Literal["budget", "one", "copies"] = "budget"  # SG-7
    gather_stray_reply: Literal["unmatched", "oldest_gather"] = "unmatched"  # SG-8
    default_timeout_ms: int = 30000  # RR-9: a call given no timeout
    # SG-1: what a gather given no correlation_id sends as its copies' correlation_id.
    gather_default_correlation: Literal["request_message_id", "none"] = "request_message_id"
    count_gather_timeouts: bool = False  # RR-9: TimedOut counts requests only, never a gather
    # What a call pending at close does: end at once as closed, or wait out its timeout.
    pending_at_close: Literal["end_closed", "wait"] = "end_closed"
    honour_gather_returns: bool = True  # RR-13 for gathers: a returned copy refuses the gather
    type_carrier: Literal["property", "header"] = "property"  # where a call's type travels
    native_address: Literal["reply_queue", "stale", "empty"] = "reply_queue"  # RR-1, RR-3: what reply_to names
    count_unmatched: bool = True  # RR-8: a reply for no pending call counts in Unmatched
    unmatched_reply: Literal["drop", "oldest_waiter"] = "drop"  # RR-8: a reply for no pending call
    timeout_outcome: Literal["timeout", "null_reply"] = "timeout"  # RR-9: a call not answered in time
    unknown_reply_headers: Literal["ignore", "fail"] = "ignore"  # RR-5: headers a reply may carry
    exclusive_reply_queue: bool = True  # RR-7
    count_gather_unmatched: bool = True  # SG-8: a reply for no pending gather counts in Unmatched
    publish_copies: int = 1  # SG-2: messages publishRequest publishes to its exchange
    multi_copies_without_count: int = 1  # SG-2: copies sendRequestMulti sends given no count
    # RR-9: a request not answered gives up at its timeout ("late": half its timeout after it).
    request_deadline: Literal["timeout", "late"] = "timeout"
    # SG-9: a gather's timeout runs from its publish ("restart_per_reply": again from every reply it keeps).
    gather_deadline: Literal["fixed", "restart_per_reply"] = "fixed"
    # SG-10: a failure reply for a pending gather is dropped and counted Unmatched ("keep": a null reply).
    gather_failure_reply: Literal["drop", "keep"] = "drop"
    count_gather_failures: bool = True  # SG-10: such a dropped failure reply counts in Unmatched
    # RR-8: a request's correlation_id is its message_id, so a responder that echoes correlation_id answers it.
    request_correlation_id: Literal["message_id", "none"] = "message_id"
    # RR-20.1: a call pending when the connection is lost ends at once ("wait": waits out its timeout).
    on_connection_lost: Literal["end_lost", "wait"] = "end_lost"
    recover_connection: bool = True  # RR-20.3: reconnect and consume a new reply queue

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True)
class ResponderPolicy:
    """How a responder reads requests, replies, counts and dead-letters."""

    read_order: tuple[str, ...] = READ_FROM  # RR-3: where the reply address is read, in order
    # RR-4: the request's id (its message_id, else its correlation_id: a tutorial caller's).
    reply_correlation_from: Literal["request_id", "message_id", "correlation_id"] = "request_id"
    strip_engine_headers: bool = True  # RR-5
    pass_spec_headers: bool = True  # RR-5: the handler sees acemq-reply-to and every other acemq-*
    handler_failure: Literal["error_reply", "retry"] = "error_reply"  # RR-10
    dead_letter_failures: bool = True  # RR-11
    count_failures_answered: bool = False  # RR-11
    unanswerable: Literal["accept", "dead_letter"] = "accept"  # RR-12
    undeliverable_reply: Literal["requeue", "ack"] = "requeue"  # RR-14
    answered_timing: Literal["before_publish", "after_confirm"] = "before_publish"  # RR-15
    rollback_answered: bool = True  # RR-15
    counters_created: Literal["before_subscribe", "after_first_delivery"] = "before_subscribe"  # RR-16
    dlq_queue_type: Literal["quorum", "classic"] = "quorum"  # RR-17
    response_message_id: bool = True  # SG-3
    header_types: Literal["lenient", "strict"] = "lenient"  # WF-1
    default_max_attempts: int = 3  # RR-14: a responder given no max_attempts
    attempt_base: int = 1  # RR-14: the attempt number is x-delivery-count + this
    # RR-14 for failure replies: a returned failure reply goes round the retry policy.
    failure_reply_delivery: Literal["checked", "unchecked"] = "checked"
    # A request body that is not JSON: a MalformedRequest failure reply then the RR-11
    # dead-letter, dropped, or the failure reply alone (RR-19 forbids the last two).
    malformed_request: Literal["fail_reply", "drop", "reply_only"] = "fail_reply"
    # RR-11: the dead-letter copy keeps the request's properties, or (forbidden) only its
    # body, message_id and headers.
    dead_letter_copy: Literal["full", "id_and_headers"] = "full"
    bytes_address: Literal["accept", "ignore"] = "accept"  # RR-2: an acemq-reply-to written as bytes
    reply_content_type: Literal["application/json", "none"] = "application/json"  # RR-4
    strip_prefix: Literal["x-acemq-", "x-"] = "x-acemq-"  # RR-5: the headers kept from the handler
    failure_body: Literal["empty", "json"] = "empty"  # RR-10: the body of a failure reply
    error_type_name: Literal["simple", "qualified"] = "simple"  # RR-10: the ExceptionType's spelling
    retry_failures: bool = False  # RR-11: a failed request goes round the retry policy
    count_unanswerable: bool = True  # RR-12
    last_attempt: Literal["dead_letter", "ack"] = "dead_letter"  # RR-14: the last undeliverable attempt
    # RR-14: a reply to amq.rabbitmq.reply-to.*: at most once (no mandatory, never retried).
    direct_reply_to: Literal["at_most_once", "checked"] = "at_most_once"
    # RR-17: declare the request queue quorum, or leave an existing one as it is and make a missing one classic.
    request_queue: Literal["quorum", "classic_if_missing"] = "quorum"
    recover_connection: bool = True  # RR-20.2: reconnect, declare again and consume again
    # RR-20.4: ack a request after its handler and reply ("on_delivery": as soon as it is delivered).
    ack_timing: Literal["after_handling", "on_delivery"] = "after_handling"

    def __post_init__(self) -> None:
        # A list from a data file is taken as the tuple it means (the policy stays hashable).
        object.__setattr__(self, "read_order", tuple(self.read_order))
        if not set(self.read_order) <= set(READ_FROM) or len(set(self.read_order)) != len(self.read_order):
            raise ValueError(f"read_order is {list(self.read_order)!r}; it lists header and/or native, once each")
        _check(self)
