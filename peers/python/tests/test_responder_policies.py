"""What a responder does with one delivery, per policy, driven without a broker.

A Responder that was never started has no connection: its I/O-thread work is
recorded instead of run, and a publish is settled by the test (confirmed, or
returned as the broker would).
"""

from types import SimpleNamespace

import pika
import pytest

from acemq import wire
from acemq._policy import ResponderPolicy
from acemq.publishing import PublishFailed
from acemq.responder import Responder, _Delivery, _Tag


class Channel:
    """What the responder asks of its consumer channel, in order."""

    def __init__(self):
        self.calls = []
        self.is_open = True

    def basic_ack(self, tag):
        self.calls.append(("ack", tag))

    def basic_nack(self, tag, requeue):
        self.calls.append(("nack", tag, requeue))


def _responder(handler=lambda request: {"ok": True}, **policy):
    responder = Responder("amqp://unused/", "q", handler)
    responder._policy = ResponderPolicy(**policy)
    responder.max_attempts = responder._resolve_max_attempts()
    responder._channel = Channel()
    _channels.append(responder._channel)
    submitted = []
    responder._io.submit = lambda fn, *args: submitted.append((fn.__name__, args))
    return responder, submitted


_channels = []  # the consumer channel of the last responder made: a delivery came on it


def _delivery(body=b'{"n":1}', attempt=1, headers=None):
    properties = pika.BasicProperties(message_id="m-1", headers=headers)
    return _Delivery(_Tag(_channels[-1], 7), properties, body, wire.ReplyAddress("amq.gen-x", "header"), attempt)


def test_the_default_attempts_are_the_policys_unless_the_owner_gives_them():
    assert _responder()[0].max_attempts == 3
    assert _responder(default_max_attempts=5)[0].max_attempts == 5
    owned = Responder("amqp://unused/", "q", lambda r: None, max_attempts=2)
    owned._policy = ResponderPolicy(default_max_attempts=5)
    assert owned._resolve_max_attempts() == 2


@pytest.mark.parametrize("headers, base, attempt", [(None, 1, 1), ({"x-delivery-count": 0}, 1, 1), ({"x-delivery-count": 2}, 1, 3),
                                                    (None, 0, 0), ({"x-delivery-count": 0}, 0, 0), ({"x-delivery-count": 2}, 0, 2)])
def test_the_attempt_number_counts_from_the_base(headers, base, attempt):
    assert wire.attempt_number(headers, base) == attempt


def test_a_body_that_is_not_json_fails_without_running_the_handler():
    ran = []
    responder, submitted = _responder(handler=ran.append)
    responder._handle(_delivery(b"not json"))
    assert ran == []
    assert submitted == [("_fail", (_delivery(b"not json"), "MalformedRequest: Expecting value: line 1 column 1 (char 0)"))]


def test_a_body_that_is_not_json_can_be_dropped():
    responder, submitted = _responder(malformed_request="drop")
    responder._handle(_delivery(b"not json"))
    assert [name for name, _ in submitted] == ["_ack_silently"]
    responder._ack_silently(_delivery(b"not json"))
    assert responder._channel.calls == [("ack", 7)]


def _settling(responder, returned_kinds):
    """Settle publishes in order: each reply publish as listed ('returned' or 'confirmed'); dead-letters confirmed."""
    published = []

    def publish_then(routing_key, properties, body, on_confirmed, on_failed):
        published.append((routing_key, (properties.headers or {}).get(wire.DEAD_LETTER_REASON_HEADER)))
        if routing_key != responder.dead_letter_queue and returned_kinds.pop(0) == "returned":
            on_failed(PublishFailed("returned by the broker: 312 NO_ROUTE", returned=True))
        else:
            on_confirmed()

    responder._publish_then = publish_then
    return published


@pytest.mark.parametrize("attempt, ends", [(1, ("nack", 7, True)), (3, ("ack", 7))])
def test_a_returned_failure_reply_goes_round_the_retry_policy(attempt, ends):
    responder, _ = _responder()
    published = _settling(responder, ["returned"])
    responder._fail(_delivery(attempt=attempt), "ScenarioFailure: boom")
    assert responder._channel.calls == [ends]
    if attempt == 3:
        assert published[-1] == ("q.dlq", "UndeliverableReply: returned by the broker: 312 NO_ROUTE")
    else:
        assert published == [("amq.gen-x", None)]
    assert responder.answered.value == 0


def test_an_unchecked_failure_reply_is_dead_lettered_with_the_failure_even_when_returned():
    responder, _ = _responder(failure_reply_delivery="unchecked")
    published = _settling(responder, ["returned"])
    responder._fail(_delivery(attempt=1), "ScenarioFailure: boom")
    assert published[-1] == ("q.dlq", "ScenarioFailure: boom")
    assert responder._channel.calls == [("ack", 7)]


@pytest.mark.parametrize("created, answered", [("before_subscribe", 3), ("after_first_delivery", 2)])
def test_counters_created_after_the_first_delivery_never_count_it(created, answered):
    responder, _ = _responder(counters_created=created)
    handled = []
    responder._workers.submit = lambda fn, delivery: handled.append(delivery)
    for tag in (1, 2, 3):
        properties = pika.BasicProperties(message_id=f"m-{tag}", reply_to="amq.gen-x")
        responder._on_request(None, SimpleNamespace(delivery_tag=tag), properties, b"{}")
    _settling(responder, ["confirmed"] * 3)
    for delivery in handled:
        responder._answer(delivery, b"{}")
    assert responder.answered.value == answered
