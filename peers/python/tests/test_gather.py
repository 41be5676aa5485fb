"""The gather state machine (SG-5..SG-8)."""

import threading
import time

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


def test_a_reply_past_the_deadline_is_refused_before_anyone_wakes_to_end_it():
    gather = Gather("m-1", "c-1", expected_reply_count=2)
    gather.arm(0)  # its deadline has passed; nobody waits on it yet
    assert not gather.accepting()
    assert not gather.add("late")
    assert gather.replies == [] and gather.state is GatherState.REJECTED and gather.expired


def test_concurrent_replies_never_overfill_a_gather():
    # Whether a reply is still taken is decided together with taking it (SG-8.1).
    gather = Gather("m-1", "c-1", expected_reply_count=5)
    taken = []
    start = threading.Barrier(20)

    def add(n):
        start.wait()
        if gather.add(n):
            taken.append(n)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 5 and sorted(gather.wait(0)) == sorted(taken)


def test_a_restarting_deadline_moves_to_a_full_timeout_after_each_reply():
    # 300 ms of room on each side: with 30 ms (a 100 ms timeout, the reply at 70 ms) the reply
    # landed after the deadline in an image build on a loaded machine (load average over 14).
    started = time.monotonic()
    gather = Gather("m-1", "c-1", restarts_per_reply=True)
    gather.arm(0.6)
    threading.Timer(0.3, gather.add, args=("a",)).start()
    assert gather.wait() == ["a"]
    assert time.monotonic() - started >= 0.9 - 0.01
