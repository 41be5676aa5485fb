"""How a requester routes the replies it receives, driven without a broker.

A Requester that was never opened has no connection; its reply callback is
fed pika properties directly, as pika's I/O thread would.
"""

import time
from concurrent.futures import Future

import pika
import pytest

from acemq.errors import (
    ReplyDecodeError,
    RequestRefused,
    RequesterClosed,
    RequestTimedOut,
    RequestTimeoutError,
    ResponderFailed,
    ShortStringTooLong,
)
from acemq._policy import RequesterPolicy
from acemq.gather import Gather
from acemq.hooks import RequesterObserver
from acemq.publishing import PublishFailed
from acemq.requester import Requester, _Call, _Outgoing


class Recorder(RequesterObserver):
    def __init__(self):
        self.unmatched_ids = []
        self.unmatched_pairs = []

    def unmatched(self, correlation_id, response_message_id=None):
        self.unmatched_ids.append(correlation_id)
        self.unmatched_pairs.append((correlation_id, response_message_id))


def _requester(**policy):
    """A requester with the spec's policy, or with the given knobs set otherwise."""
    observer = Recorder()
    requester = Requester("amqp://unused/", observer=observer)
    requester._policy = RequesterPolicy(**policy)
    return requester, observer


def _reply(requester, correlation_id, body=b'{"ok":true}', **headers):
    properties = pika.BasicProperties(correlation_id=correlation_id, headers=headers or None)
    requester._on_reply(None, None, properties, body)


def _waiting(requester, *ids):
    calls = [_Call(i) for i in ids]
    for call in calls:
        requester._calls[call.request_id] = call
    return calls


def test_reply_goes_to_the_caller_with_its_correlation_id():
    requester, _ = _requester()
    first, second = _waiting(requester, "m-1", "m-2")
    _reply(requester, "m-2", b'{"n":2}')
    assert second.wait(0) and second.result() == {"n": 2}
    assert not first.wait(0)


def test_reply_nobody_waits_for_is_unmatched():
    requester, observer = _requester()
    _waiting(requester, "m-1")
    _reply(requester, "m-gone")
    assert requester.unmatched.value == 1
    assert observer.unmatched_ids == ["m-gone"]
    assert "m-1" in requester._calls


def test_matching_by_oldest_waiter_hands_it_to_the_oldest_caller():
    requester, _ = _requester(match_replies_by="oldest_waiter")
    oldest, _newer = _waiting(requester, "m-1", "m-2")
    _reply(requester, "m-gone", b'{"late":true}')
    assert oldest.result() == {"late": True}
    assert requester.unmatched.value == 0


@pytest.mark.parametrize("failure", ["ScenarioFailure: no price", b"ScenarioFailure: no price"])
def test_error_header_fails_the_call_at_once(failure):
    requester, _ = _requester()
    (call,) = _waiting(requester, "m-1")
    _reply(requester, "m-1", b"", **{"acemq-error": failure})
    with pytest.raises(ResponderFailed) as caught:
        call.result()
    assert caught.value.failure == "ScenarioFailure: no price"


def test_not_reading_the_error_header_decodes_the_empty_body():
    requester, _ = _requester(read_error_header=False)
    (call,) = _waiting(requester, "m-1")
    _reply(requester, "m-1", b"", **{"acemq-error": "ScenarioFailure: x"})
    with pytest.raises(ReplyDecodeError):
        call.result()


def test_undecodable_body_is_a_decode_error():
    requester, _ = _requester()
    (call,) = _waiting(requester, "m-1")
    _reply(requester, "m-1", b"not json")
    with pytest.raises(ReplyDecodeError):
        call.result()


def _gathering(requester, request_id, correlation_id, count=None):
    gather = Gather(request_id, correlation_id, count)
    requester._gathers[request_id] = gather
    return gather


def test_gather_replies_are_demultiplexed_by_response_message_id_only():
    requester, _ = _requester()
    gather = _gathering(requester, "g-1", "c-1", 2)
    _reply(requester, "c-1", b'{"r":1}', responseMessageId="g-1")
    _reply(requester, "anything", b'{"r":2}', responseMessageId=b"g-1")
    assert gather.wait(0) == [{"r": 1}, {"r": 2}]


def test_gather_demux_by_correlation_id_ignores_response_message_id():
    requester, _ = _requester(gather_demux_by="correlation_id")
    gather = _gathering(requester, "g-1", "c-1", 1)
    _reply(requester, "c-1", b'{"r":1}', responseMessageId="g-1")
    assert requester.unmatched.value == 1
    _reply(requester, "g-1", b'{"r":2}')
    assert gather.wait(0) == [{"r": 2}]


def test_failure_replies_stay_out_of_a_gather():
    requester, _ = _requester()
    gather = _gathering(requester, "g-1", "c-1", 1)
    _reply(requester, "g-1", b"", responseMessageId="g-1", **{"acemq-error": "ScenarioFailure: x"})
    assert requester.unmatched.value == 1
    with pytest.raises(RequestTimeoutError) as caught:
        gather.wait(0)
    assert caught.value.partial_replies == []


def test_reply_after_a_gather_ended_is_unmatched():
    requester, _ = _requester()
    gather = _gathering(requester, "g-1", "c-1", 1)
    _reply(requester, "g-1", b"{}", responseMessageId="g-1")
    _reply(requester, "g-1", b"{}", responseMessageId="g-1")
    assert gather.wait(0) == [{}]
    assert requester.unmatched.value == 1


def test_stray_gather_reply_to_the_oldest_gather():
    requester, _ = _requester(gather_stray_reply="oldest_gather")
    oldest = _gathering(requester, "g-1", "c-1", 2)
    _gathering(requester, "g-2", "c-2", 2)
    _reply(requester, "c-1", b'{"r":0}', responseMessageId="another-gather")
    assert requester.unmatched.value == 0
    assert oldest.replies == [{"r": 0}]


def test_stray_gather_reply_is_unmatched():
    requester, _ = _requester()
    gather = _gathering(requester, "g-1", "c-1", 2)
    _reply(requester, "c-1", b'{"r":0}', responseMessageId="another-gather")
    assert requester.unmatched.value == 1
    assert gather.replies == []


def test_dropping_undecodable_replies_leaves_the_call_waiting():
    requester, observer = _requester(undecodable_reply="drop")
    (call,) = _waiting(requester, "m-1")
    _reply(requester, "m-1", b"not json")
    assert not call.wait(0)
    assert requester.unmatched.value == 1 and observer.unmatched_ids == ["m-1"]
    with pytest.raises(RequestTimedOut):
        requester._wait(call, time.monotonic(), 0.0)
    assert requester.timed_out.value == 1


@pytest.mark.parametrize("count_timeouts, counted", [(True, 1), (False, 0)])
def test_timeouts_are_counted(count_timeouts, counted):
    requester, _ = _requester(count_timeouts=count_timeouts)
    (call,) = _waiting(requester, "m-1")
    with pytest.raises(RequestTimedOut):
        requester._wait(call, time.monotonic(), 0.0)
    assert requester.timed_out.value == counted
    assert "m-1" not in requester._calls


def _publishing(**policy):
    """A requester whose publishes are recorded instead of sent."""
    requester, _ = _requester(**policy)
    sent = []

    def call(fn, outgoing):
        sent.append(outgoing)
        confirm = Future()  # what the I/O thread hands back: the publish's confirm, here acked
        confirm.set_result(None)
        return confirm

    requester._io.call = call
    return requester, sent


@pytest.mark.parametrize(
    "multi_copies, count, copies",
    [("expected_count", 3, 3), ("expected_count", None, 1), ("one", 3, 1)],
)
def test_send_request_multi_publishes_a_copy_per_expected_reply(multi_copies, count, copies):
    requester, sent = _publishing(multi_copies=multi_copies)
    pending = requester.begin_gather({"n": 1}, endpoint="pricing", expected_reply_count=count, correlation_id="c-1")
    assert len(sent) == copies
    assert {(o.message_id, o.correlation_id) for o in sent} == {(pending.request_id, "c-1")}


def test_distinct_copy_ids_give_each_copy_its_own_id():
    requester, sent = _publishing(gather_copy_ids="distinct")
    pending = requester.begin_gather({"n": 1}, endpoint="pricing", expected_reply_count=3)
    ids = [o.message_id for o in sent]
    assert len(set(ids)) == 3 and ids[0] == pending.request_id
    assert list(requester._gathers) == [pending.request_id]


@pytest.mark.parametrize("missing_count, expected", [("budget", None), ("one", 1)])
def test_a_missing_count_stays_missing(missing_count, expected):
    requester, _ = _publishing(gather_missing_count=missing_count)
    pending = requester.begin_gather({"n": 1}, endpoint="pricing")
    assert requester._gathers[pending.request_id].expected_reply_count == expected


def test_long_correlation_id_is_refused_unless_the_policy_truncates_it():
    requester, sent = _publishing()
    with pytest.raises(ShortStringTooLong):
        requester.begin_gather({}, endpoint="pricing", expected_reply_count=1, correlation_id="c" * 300)
    assert sent == []
    requester, sent = _publishing(long_short_string="truncate")
    requester.begin_gather({}, endpoint="pricing", expected_reply_count=1, correlation_id="c" * 300)
    assert sent[0].correlation_id == "c" * 255


# -- issue 12: the spec's defaults and decisions, knob by knob -----------------------------


def test_the_default_timeout_is_the_policys_unless_the_owner_gives_one():
    requester, _ = _requester()
    assert requester.default_timeout == 30.0
    requester._policy = RequesterPolicy(default_timeout_ms=10000)
    assert requester._resolve_default_timeout() == 10.0
    owned = Requester("amqp://unused/", default_timeout=5)
    owned._policy = RequesterPolicy(default_timeout_ms=10000)
    assert owned._resolve_default_timeout() == 5.0


@pytest.mark.parametrize("default_correlation, expected", [("request_message_id", "id"), ("none", None)])
def test_a_gather_given_no_correlation_id(default_correlation, expected):
    requester, sent = _publishing(gather_default_correlation=default_correlation)
    pending = requester.begin_gather({"correlationId": "in-body"}, endpoint="pricing", expected_reply_count=2)
    want = pending.request_id if expected == "id" else None
    assert [o.correlation_id for o in sent] == [want, want]


@pytest.mark.parametrize("count_gather_timeouts, counted", [(False, 0), (True, 2)])
def test_gathers_ending_at_their_timeout_count_in_timed_out_only_by_the_defect(count_gather_timeouts, counted):
    requester, _ = _publishing(count_gather_timeouts=count_gather_timeouts)
    with pytest.raises(RequestTimeoutError):
        requester.begin_gather({}, endpoint="pricing", expected_reply_count=2, timeout=0).result()
    assert requester.begin_gather({}, endpoint="pricing", timeout=0).result() == []
    early = requester.begin_gather({}, endpoint="pricing", expected_reply_count=1, timeout=5)
    _reply(requester, "x", b'{"n":1}', responseMessageId=early.request_id)
    assert early.result() == [{"n": 1}]
    assert requester.timed_out.value == counted


def _closable(**policy):
    requester, sent = _publishing(**policy)
    requester._io.close = lambda: None  # never opened: nothing to close
    return requester, sent


def test_close_ends_pending_calls_and_gathers_at_once_uncounted():
    requester, _ = _closable()
    (call,) = _waiting(requester, "m-1")
    gather = requester.begin_gather({}, endpoint="pricing", expected_reply_count=2, timeout=30)
    requester.close()
    assert call.done and gather.done()
    with pytest.raises(RequesterClosed):
        requester._wait(call, time.monotonic() + 30, 30)
    with pytest.raises(RequesterClosed):
        gather.result()
    assert requester.timed_out.value == 0


def test_close_can_leave_pending_calls_to_wait_out_their_timeout():
    requester, _ = _closable(pending_at_close="wait")
    (call,) = _waiting(requester, "m-1")
    gather = requester.begin_gather({}, endpoint="pricing", expected_reply_count=2, timeout=0)
    requester.close()
    assert not call.done
    with pytest.raises(RequestTimedOut):
        requester._wait(call, time.monotonic(), 0.0)
    with pytest.raises(RequestTimeoutError):
        gather.result()


def _returning(**policy):
    """A requester whose every publish the broker returns (then acks)."""
    requester, _ = _requester(**policy)

    def call(fn, outgoing):
        confirm = Future()
        confirm.set_exception(PublishFailed("returned by the broker: 312 NO_ROUTE", returned=True))
        return confirm

    requester._io.call = call
    return requester


def test_a_returned_gather_copy_refuses_the_gather_whatever_requests_do():
    for policy in ({}, {"honour_returns": False}):
        with pytest.raises(RequestRefused, match="312 NO_ROUTE"):
            _returning(**policy).begin_gather({}, endpoint="nowhere", expected_reply_count=2)
    assert _returning(honour_gather_returns=False).begin_gather({}, exchange="fanout", timeout=0).result() == []
    with pytest.raises(RequestRefused):
        _returning(honour_gather_returns=False).send("", "nowhere", {})


@pytest.mark.parametrize("carrier", ["property", "header"])
def test_the_type_travels_as_the_type_property(carrier):
    requester, _ = _requester(type_carrier=carrier)
    requester._reply_queue = "amq.gen-x"
    published = []
    requester._publisher.publish = lambda exchange, key, properties, body: published.append(properties)
    for message_type in ("quote.requested", None):
        requester._publish_request(_Outgoing("", "pricing", b"{}", "m-1", "m-1", "amq.gen-x", message_type))
    typed, untyped = published
    assert untyped.type is None and "type" not in untyped.headers
    if carrier == "property":
        assert typed.type == "quote.requested" and "type" not in typed.headers
    else:
        assert typed.type is None and typed.headers["type"] == "quote.requested"


def test_unmatched_names_both_ids():
    requester, observer = _requester()
    _reply(requester, "c-1", responseMessageId="g-gone")
    _reply(requester, None, responseMessageId="g-2")
    _reply(requester, "c-3")
    assert observer.unmatched_pairs == [("c-1", "g-gone"), (None, "g-2"), ("c-3", None)]


# -- a reply racing the end of its call or gather -------------------------------------------


def test_a_gather_reply_past_the_deadline_is_unmatched_while_the_gather_is_still_pending():
    requester, observer = _requester()
    gather = _gathering(requester, "g-1", "c-1", 2)
    gather.arm(0)  # ended by its deadline, not yet removed by its waiter
    _reply(requester, "c-1", b'{"r":1}', responseMessageId="g-1")
    assert "g-1" in requester._gathers and gather.replies == []
    assert requester.unmatched.value == 1 and observer.unmatched_pairs == [("c-1", "g-1")]


def test_a_gather_reply_past_its_count_is_unmatched_while_the_gather_is_still_pending():
    requester, observer = _requester()
    gather = _gathering(requester, "g-1", "c-1", 1)
    _reply(requester, "c-1", b'{"r":1}', responseMessageId="g-1")
    _reply(requester, "c-2", b'{"r":2}', responseMessageId="g-1")  # before its waiter removed it
    assert "g-1" in requester._gathers and gather.wait(0) == [{"r": 1}]
    assert requester.unmatched.value == 1 and observer.unmatched_pairs == [("c-2", "g-1")]


def test_a_request_reply_past_the_deadline_is_unmatched_and_the_call_still_times_out():
    requester, observer = _requester()
    (call,) = _waiting(requester, "m-1")
    requester._sent_requests["m-1"] = None
    call.deadline = time.monotonic() - 0.001  # timed out; its waiter has not woken yet
    _reply(requester, "m-1", b'{"late":true}')
    assert not call.done and requester.unmatched.value == 1 and observer.unmatched_ids == ["m-1"]
    with pytest.raises(RequestTimedOut):
        requester._wait(call, call.deadline, 0.0)
    assert requester.timed_out.value == 1
