"""Counters, and the policy types the binding resolves once per requester or responder."""

import threading
from dataclasses import fields

import pytest

from acemq import Requester, Responder
from acemq._policy import RequesterPolicy, ResponderPolicy
from acemq.counters import Counter


def test_counter_starts_at_zero_and_counts():
    counter = Counter()
    assert counter.value == 0
    counter.increment()
    counter.increment()
    counter.decrement()
    assert counter.value == 1


def test_counter_is_exact_under_threads():
    counter = Counter()
    threads = [threading.Thread(target=lambda: [counter.increment() for _ in range(1000)]) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.value == 8000


def test_a_service_gets_the_spec_policy():
    assert Requester("amqp://unused/")._policy == RequesterPolicy()
    assert Responder("amqp://unused/", "q", lambda request: None)._policy == ResponderPolicy()


def test_the_public_api_takes_no_policy():
    with pytest.raises(TypeError):
        Requester("amqp://unused/", policy=RequesterPolicy())  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "make, knob, value",
    [
        (RequesterPolicy, "match_replies_by", "newest_waiter"),
        (RequesterPolicy, "write_header_address", "yes"),
        (ResponderPolicy, "dlq_queue_type", "stream"),
        (ResponderPolicy, "read_order", ["header", "header"]),
        (ResponderPolicy, "read_order", ["property"]),
        (RequesterPolicy, "default_timeout_ms", "10s"),
        (RequesterPolicy, "default_timeout_ms", True),
        (RequesterPolicy, "pending_at_close", "abandon"),
        (RequesterPolicy, "type_carrier", "body"),
        (ResponderPolicy, "attempt_base", 0.5),
        (ResponderPolicy, "malformed_request", "ignore"),
    ],
)
def test_a_value_a_knob_does_not_take_is_refused(make, knob, value):
    with pytest.raises(ValueError, match=knob):
        make(**{knob: value})


def test_read_order_from_a_list_is_a_tuple():
    assert ResponderPolicy(read_order=["native"]).read_order == ("native",)


def test_policies_are_small_value_types():
    assert RequesterPolicy() == RequesterPolicy() and hash(ResponderPolicy()) == hash(ResponderPolicy())
    assert len(fields(RequesterPolicy)) == 40 and len(fields(ResponderPolicy)) == 32
