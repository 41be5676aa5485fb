"""The gather state machine (SG-5..SG-8)."""

import threading

import pytest

from acemq.errors import RequestTimeoutError
from acemq.gather import Gather, GatherState


def test_resolves_as_soon_as_the_count_is_reached():
    gather = Gather("m-1", "c-1", expected_reply_count=2)
    assert gather.add("a")
    assert gather.state is GatherState.COLLECTING
    assert gather.add("b")
    assert gather.state is GatherState.RESOLVED
    assert gather.wait(10) == ["a", "b"]


def test_shortfall_rejects_with_partial_replies_in_arrival_order():
    gather = Gather("m-1", "c-1", expected_reply_count=3)
    gather.add("first")
    gather.add("second")
    with pytest.raises(RequestTimeoutError) as caught:
        gather.wait(0)
    assert caught.value.partial_replies == ["first", "second"]
    assert gather.state is GatherState.REJECTED


def test_without_a_count_resolves_at_the_timeout_with_what_arrived():
    gather = Gather("m-1", "c-1")
    gather.add("a")
    assert gather.state is GatherState.COLLECTING  # never early without a count
    assert gather.wait(0) == ["a"]


def test_without_a_count_and_no_replies_resolves_empty():
    assert Gather("m-1", "c-1").wait(0) == []


def test_replies_after_the_end_are_refused():
    gather = Gather("m-1", "c-1", expected_reply_count=1)
    gather.add("a")
    assert not gather.add("late")
    assert gather.replies == ["a"]
    expired = Gather("m-2", "c-2")
    expired.wait(0)
    assert not expired.add("late")


def test_count_reached_before_the_deadline_is_not_undone_by_expiry():
    gather = Gather("m-1", "c-1", expected_reply_count=1)
    gather.add("a")
    assert gather.expire() is GatherState.RESOLVED


def test_on_reply_is_called_once_per_reply_in_order():
    seen = []
    gather = Gather("m-1", "c-1", expected_reply_count=2, on_reply=seen.append)
    gather.add(1)
    gather.add(2)
    gather.add(3)
    assert seen == [1, 2]


def test_a_shortfall_can_resolve_instead():
    gather = Gather("m-1", "c-1", expected_reply_count=3, rejects_shortfall=False)
    gather.add("a")
    assert gather.wait(0) == ["a"]


def test_cancel_rejects_a_collecting_gather():
    gather = Gather("m-1", "c-1", expected_reply_count=2)
    gather.cancel()
    assert gather.state is GatherState.REJECTED
    assert not gather.add("a")


def test_wait_returns_early_when_another_thread_completes_it():
    gather = Gather("m-1", "c-1", expected_reply_count=1)
    threading.Timer(0.05, gather.add, args=("a",)).start()
    assert gather.wait(10) == ["a"]


def test_expected_count_must_be_positive():
    with pytest.raises(ValueError):
        Gather("m-1", "c-1", expected_reply_count=0)


def test_without_early_resolution_a_reached_count_waits_for_the_deadline():
    gather = Gather("m-1", "c-1", expected_reply_count=2, resolves_early=False)
    gather.add("a")
    gather.add("b")
    assert gather.state is GatherState.COLLECTING
    assert not gather.add("extra")  # full: counted Unmatched as after a resolution
    assert gather.wait(0) == ["a", "b"]
    assert gather.state is GatherState.RESOLVED
