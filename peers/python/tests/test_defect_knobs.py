"""Policy knobs of the catalogue's mutants (reply addresses, counters, failure replies,
queues), each at its default and at its defect, driven without a broker (the helpers of test_reply_routing and test_responder_policies)."""

import json
import threading
import time
from types import SimpleNamespace

import pika
import pytest

from acemq import wire
from acemq.errors import ReplyDecodeError, RequestTimedOut, RequestTimeoutError, ResponderFailed
from acemq.requester import Requester, _Outgoing
from test_reply_routing import _gathering, _publishing, _reply, _requester, _waiting
from test_responder_policies import _delivery, _responder, _settling


# -- requester ---------------------------------------------------------------


@pytest.mark.parametrize("native, reply_to", [("reply_queue", "amq.gen-x"), ("stale", "amq.gen-x.stale"), ("empty", "")])
def test_the_native_address_names_the_reply_queue_unless_stale_or_empty(native, reply_to):
    requester, _ = _requester(native_address=native)
    published = []
    requester._publisher.publish = lambda exchange, key, properties, body: published.append(properties)
    requester._publish_request(_Outgoing("", "pricing", b"{}", "m-1", "m-1", "amq.gen-x"))
    assert published[0].reply_to == reply_to
    assert published[0].headers[wire.REPLY_TO_HEADER] == "amq.gen-x"


def test_pika_writes_an_empty_reply_to_as_present_and_empty():
    requester, _ = _requester(native_address="empty")
    published = []
    requester._publisher.publish = lambda exchange, key, properties, body: published.append(properties)
    requester._publish_request(_Outgoing("", "pricing", b"{}", "m-1", "m-1", "amq.gen-x"))
    decoded = pika.BasicProperties()
    decoded.decode(b"".join(published[0].encode()))
    assert decoded.reply_to == ""


@pytest.mark.parametrize("count, counted", [(True, 1), (False, 0)])
def test_an_unmatched_call_reply_is_told_and_counted_unless_the_defect(count, counted):
    requester, observer = _requester(count_unmatched=count)
    requester._sent_requests["m-gone"] = None
    _reply(requester, "m-gone", responseMessageId="m-gone")
    assert observer.unmatched_ids == ["m-gone"] and requester.unmatched.value == counted


def test_the_call_counter_knob_leaves_gather_replies_counted_and_the_other_way_round():
    requester, _ = _requester(count_unmatched=False)
    _gathering(requester, "g-1", "g-1", 1)
    requester._sent_gathers["g-1"] = None
    _reply(requester, "g-1", b"{}", responseMessageId="g-1")
    _reply(requester, "g-1", b"{}", responseMessageId="g-1")  # after the gather resolved
    assert requester.unmatched.value == 1
    requester, _ = _requester(count_gather_unmatched=False)
    _gathering(requester, "g-1", "g-1", 1)
    requester._sent_gathers["g-1"] = None
    _reply(requester, "g-1", b"{}", responseMessageId="g-1")
    _reply(requester, "g-1", b"{}", responseMessageId="g-1")
    _reply(requester, "stray", b"{}", responseMessageId="no-gather")  # a stray, from a gatherer
    assert requester.unmatched.value == 0
    requester._sent_requests["m-1"] = None
    _reply(requester, "m-1", responseMessageId="m-1")
    assert requester.unmatched.value == 1


@pytest.mark.parametrize("unmatched, handed", [("drop", False), ("oldest_waiter", True)])
def test_a_reply_for_no_pending_call_goes_to_the_oldest_waiter_only_by_the_defect(unmatched, handed):
    requester, _ = _requester(unmatched_reply=unmatched)
    oldest, newer = _waiting(requester, "m-1", "m-2")
    _reply(requester, "m-gone", b'{"late":true}')
    _reply(requester, "m-2", b'{"own":true}')
    assert newer.result() == {"own": True}
    assert oldest.wait(0) is handed and requester.unmatched.value == (0 if handed else 1)
    if handed:
        assert oldest.result() == {"late": True}


def test_a_timeout_passed_off_as_a_null_reply_is_still_counted():
    requester, _ = _requester(timeout_outcome="null_reply")
    (call,) = _waiting(requester, "m-1")
    assert requester._wait(call, time.monotonic(), 0.0) is None
    assert requester.timed_out.value == 1


@pytest.mark.parametrize("unknown", ["ignore", "fail"])
def test_unknown_reply_headers_fail_the_call_only_by_the_defect(unknown):
    requester, _ = _requester(unknown_reply_headers=unknown)
    plain, failed, extra, traced = _waiting(requester, "m-1", "m-2", "m-3", "m-4")
    _reply(requester, "m-1", b'{"n":1}', responseMessageId="m-1")
    _reply(requester, "m-2", b"", responseMessageId="m-2", **{"acemq-error": "ScenarioFailure: x"})
    # x- headers pass even the defect: brokers and clients add them (x-dotnet-pub-seq-no).
    _reply(requester, "m-3", b'{"n":3}', responseMessageId="m-3", **{"x-dotnet-pub-seq-no": 7})
    _reply(requester, "m-4", b'{"n":4}', responseMessageId="m-4", traceparent="00-ab-cd-01")
    assert plain.result() == {"n": 1} and extra.result() == {"n": 3}
    with pytest.raises(ResponderFailed):
        failed.result()
    if unknown == "ignore":
        assert traced.result() == {"n": 4}
    else:
        with pytest.raises(ReplyDecodeError, match="traceparent"):
            traced.result()


@pytest.mark.parametrize("exclusive", [True, False])
def test_the_reply_queue_is_exclusive_unless_the_defect(exclusive):
    requester, _ = _requester(exclusive_reply_queue=exclusive)
    declared = []

    class Consumer:
        def queue_declare(self, queue, **kwargs):
            declared.append(kwargs)
            return type("Ok", (), {"method": type("M", (), {"queue": "amq.gen-x"})})()

        def basic_consume(self, queue, callback, auto_ack):
            pass

    requester._consumer = Consumer()
    assert requester._declare_reply_queue() == "amq.gen-x"
    assert declared == [{"durable": False, "exclusive": exclusive, "auto_delete": True, "arguments": {"x-queue-type": "classic"}}]


@pytest.mark.parametrize("copies", [1, 2])
def test_publish_request_publishes_one_message_unless_the_defect(copies):
    requester, sent = _publishing(publish_copies=copies)
    pending = requester.begin_gather({"n": 1}, exchange="fanout", timeout=0)
    assert len(sent) == copies and {o.message_id for o in sent} == {pending.request_id}


@pytest.mark.parametrize("without_count, copies", [(1, 1), (0, 0)])
def test_send_request_multi_without_a_count_sends_one_copy_unless_the_defect(without_count, copies):
    requester, sent = _publishing(multi_copies_without_count=without_count)
    requester.begin_gather({"n": 1}, endpoint="pricing", timeout=0)
    assert len(sent) == copies
    requester.begin_gather({"n": 1}, endpoint="pricing", expected_reply_count=2, timeout=0)
    assert len(sent) == copies + 2


# RR-9.6: a request gives up at its timeout; "late" half its timeout after it.
@pytest.mark.parametrize("deadline, factor", [("timeout", 1.0), ("late", 1.5)])
def test_a_request_gives_up_at_its_timeout_unless_the_defect_waits_half_as_long_again(deadline, factor):
    requester, _ = _publishing(request_deadline=deadline)
    started = time.monotonic()
    with pytest.raises(RequestTimedOut):
        requester.send("", "pricing", {}, timeout=0.2).result()
    assert 0.2 * factor <= time.monotonic() - started < 0.2 * factor + 0.15
    assert requester.timed_out.value == 1  # still the timeout, still counted
    unanswered = requester.send("", "pricing", {})  # the default 30 s: 45 s under the defect
    assert unanswered._call.deadline - time.monotonic() == pytest.approx(30.0 * factor, abs=1.0)


def test_the_late_deadline_leaves_gathers_alone():
    requester, _ = _publishing(request_deadline="late")
    started = time.monotonic()
    assert requester.begin_gather({}, endpoint="pricing", timeout=0.2).result() == []
    assert time.monotonic() - started < 0.28


# SG-9.1: a gather ends at its timeout from the publish; "restart_per_reply" starts it again at every reply kept.
@pytest.mark.parametrize("deadline, restarts", [("fixed", False), ("restart_per_reply", True)])
@pytest.mark.parametrize("mode, count", [("endpoint", 2), ("endpoint", None), ("exchange", 2), ("exchange", None)])
def test_a_reply_restarts_a_gathers_timeout_only_by_the_defect(deadline, restarts, mode, count):
    requester, _ = _publishing(gather_deadline=deadline)
    pending = requester.begin_gather({}, **{mode: "pricing"}, expected_reply_count=count, timeout=10)
    gather = requester._gathers[pending.request_id]
    armed = gather._deadline
    time.sleep(0.02)
    _reply(requester, "c", b'{"n":1}', responseMessageId=pending.request_id)
    assert gather.replies == [{"n": 1}]
    assert (gather._deadline >= armed + 0.02) is restarts
    after_reply = gather._deadline
    time.sleep(0.02)
    _reply(requester, "c", b"", responseMessageId=pending.request_id, **{"acemq-error": "ScenarioFailure: x"})
    assert gather._deadline == after_reply  # a failure reply is not kept: it restarts nothing


@pytest.mark.parametrize("deadline, ends", [("fixed", 0.3), ("restart_per_reply", 0.5)])
def test_a_gather_given_a_reply_ends_late_only_by_the_defect(deadline, ends):
    requester, _ = _publishing(gather_deadline=deadline)
    seen = []
    started = time.monotonic()
    pending = requester.begin_gather({}, exchange="fanout", on_reply=seen.append, expected_reply_count=2, timeout=0.3)
    threading.Timer(0.2, _reply, args=(requester, "c", b'{"n":1}'), kwargs={"responseMessageId": pending.request_id}).start()
    with pytest.raises(RequestTimeoutError) as shortfall:
        pending.result()
    assert shortfall.value.partial_replies == seen == [{"n": 1}]
    assert ends <= time.monotonic() - started < ends + 0.15


def _failure(requester, gather_id):
    _reply(requester, "c-f", b"", responseMessageId=gather_id, **{"acemq-error": "ScenarioFailure: no"})


# SG-10: a failure reply for a pending gather is dropped and counted Unmatched, and the gather waits on.
@pytest.mark.parametrize("mode", ["endpoint", "exchange"])
def test_a_failure_reply_is_not_an_answer_to_a_pending_gather(mode):
    requester, sent = _publishing()
    observer = requester._observer
    seen = []
    pending = requester.begin_gather({}, **{mode: "pricing"}, on_reply=seen.append, expected_reply_count=1, timeout=5)
    _failure(requester, pending.request_id)
    assert not pending.done() and seen == []
    assert requester.unmatched.value == 1 and observer.unmatched_pairs == [("c-f", pending.request_id)]
    _reply(requester, "c", b'{"n":1}', responseMessageId=pending.request_id)
    assert pending.result() == seen == [{"n": 1}]


def test_a_failure_reply_is_a_null_reply_counting_toward_the_count_by_the_defect():
    requester, _ = _publishing(gather_failure_reply="keep")
    seen = []
    pending = requester.begin_gather({}, exchange="fanout", on_reply=seen.append, expected_reply_count=2, timeout=5)
    _reply(requester, "c", b'{"n":1}', responseMessageId=pending.request_id)
    _failure(requester, pending.request_id)
    assert pending.result() == seen == [{"n": 1}, None]
    assert requester.unmatched.value == 0 and requester._observer.unmatched_pairs == []
    _failure(requester, pending.request_id)  # after it resolved: a late reply like any other (SG-8)
    assert requester.unmatched.value == 1


def test_a_failure_reply_dropped_is_told_but_not_counted_by_the_defect():
    requester, _ = _publishing(count_gather_failures=False)
    pending = requester.begin_gather({}, endpoint="pricing", expected_reply_count=1, timeout=0.1)
    _failure(requester, pending.request_id)
    assert requester.unmatched.value == 0 and requester._observer.unmatched_pairs == [("c-f", pending.request_id)]
    with pytest.raises(RequestTimeoutError) as shortfall:
        pending.result()
    assert shortfall.value.partial_replies == []


def test_the_failure_and_stray_counters_are_independent():
    # SG-8.1's defect leaves a failure for a pending gather counted (SG-10.2) ...
    requester, _ = _publishing(count_gather_unmatched=False)
    pending = requester.begin_gather({}, endpoint="pricing", expected_reply_count=1, timeout=5)
    _failure(requester, pending.request_id)
    assert requester.unmatched.value == 1
    _reply(requester, "c", b"{}", responseMessageId=pending.request_id)
    _reply(requester, "c", b"{}", responseMessageId=pending.request_id)  # late: SG-8.1's defect
    assert pending.result() == [{}] and requester.unmatched.value == 1
    # ... and SG-10.2's leaves a late reply, failure or not, counted (SG-8.1).
    requester, _ = _publishing(count_gather_failures=False)
    pending = requester.begin_gather({}, endpoint="pricing", expected_reply_count=1, timeout=5)
    _reply(requester, "c", b"{}", responseMessageId=pending.request_id)
    _reply(requester, "c", b"{}", responseMessageId=pending.request_id)
    _failure(requester, pending.request_id)
    assert pending.result() == [{}] and requester.unmatched.value == 2


# -- responder ---------------------------------------------------------------


@pytest.mark.parametrize("bytes_header, queue", [(True, "amq.gen-h"), (False, "amq.gen-n")])
def test_a_bytes_header_address_is_absent_only_by_the_defect(bytes_header, queue):
    headers = {wire.REPLY_TO_HEADER: b"amq.gen-h"}
    assert wire.choose_reply_address(headers, "amq.gen-n", bytes_header=bytes_header).queue == queue
    assert wire.choose_reply_address({wire.REPLY_TO_HEADER: "amq.gen-h"}, None, bytes_header=False).queue == "amq.gen-h"
    assert wire.choose_reply_address(headers, None, bytes_header=False) is None


@pytest.mark.parametrize("content_type, expected", [("application/json", "application/json"), ("none", None)])
def test_replies_carry_the_json_content_type_unless_the_defect(content_type, expected):
    responder, _ = _responder(reply_content_type=content_type)
    assert responder._reply_properties(_delivery(), None).content_type == expected
    assert responder._reply_properties(_delivery(), "ScenarioFailure: x").content_type == expected


@pytest.mark.parametrize("prefix, shown", [("x-acemq-", ["x-custom", "y"]), ("x-", ["y"])])
def test_the_handler_sees_every_header_but_the_stripped_prefix(prefix, shown):
    responder, _ = _responder(strip_prefix=prefix)
    headers = {"x-acemq-trace": 1, "x-custom": 2, "y": 3}
    assert sorted(responder._shown_headers(headers)) == shown


def _published_bodies(responder):
    bodies = []

    def publish_then(routing_key, properties, body, on_confirmed, on_failed):
        bodies.append((routing_key, body))
        on_confirmed()

    responder._publish_then = publish_then
    return bodies


@pytest.mark.parametrize("failure_body, body", [("empty", b""), ("json", b'{"error":"ScenarioFailure: boom"}')])
def test_a_failure_reply_has_an_empty_body_unless_the_defect(failure_body, body):
    responder, _ = _responder(failure_body=failure_body)
    bodies = _published_bodies(responder)
    responder._fail(_delivery(), "ScenarioFailure: boom")
    assert bodies[0] == ("amq.gen-x", body)


@pytest.mark.parametrize("body, headers, text", [
    (b"not json", None, "MalformedRequest: "),
    (b"{}", {"x-flag": True}, "MalformedHeader: x-flag"),
])
def test_every_failure_reply_gets_the_json_body_under_the_defect(body, headers, text):
    # Every failure reply goes through _fail, whatever failed: the handler, the body or a header.
    responder, submitted = _responder(failure_body="json", header_types="strict")
    responder._handle(_delivery(body, headers=headers))
    ((settle, (delivery, failure)),) = submitted
    assert settle == "_fail" and failure.startswith(text)
    bodies = _published_bodies(responder)
    responder._fail(delivery, failure)
    assert json.loads(bodies[0][1]) == {"error": failure}


class ScenarioFailure(Exception):
    pass


def _boom(request):
    raise ScenarioFailure("boom")


@pytest.mark.parametrize("name, text", [("simple", "ScenarioFailure: boom"), ("qualified", f"{__name__}.ScenarioFailure: boom")])
def test_the_failure_names_the_unqualified_type_unless_the_defect(name, text):
    responder, submitted = _responder(handler=_boom, error_type_name=name)
    responder._handle(_delivery())
    assert submitted == [("_fail", (_delivery(), text))]


def test_a_malformed_request_keeps_its_text_under_the_qualified_defect():
    responder, submitted = _responder(error_type_name="qualified")
    responder._handle(_delivery(b"not json"))
    assert submitted[0][1][1].startswith("MalformedRequest: ")


@pytest.mark.parametrize("attempt, ends, dead", [(1, ("nack", 7, True), False), (3, ("ack", 7), True)])
def test_retrying_failures_requeues_until_the_last_attempt(attempt, ends, dead):
    responder, _ = _responder(retry_failures=True)
    published = _settling(responder, ["confirmed"])
    responder._fail(_delivery(attempt=attempt), "ScenarioFailure: boom")
    assert responder._channel.calls == [ends]
    assert (("q.dlq", "ScenarioFailure: boom") in published) is dead


def test_a_failure_is_dead_lettered_on_its_first_attempt_by_the_spec():
    responder, _ = _responder()
    published = _settling(responder, ["confirmed"])
    responder._fail(_delivery(attempt=1), "ScenarioFailure: boom")
    assert published[-1] == ("q.dlq", "ScenarioFailure: boom") and responder._channel.calls == [("ack", 7)]


@pytest.mark.parametrize("count, counted", [(True, 1), (False, 0)])
def test_an_unanswerable_request_is_acked_told_and_counted_unless_the_defect(count, counted):
    responder, _ = _responder(count_unanswerable=count)
    told = []
    responder._observer.unanswerable = told.append
    responder._on_request(None, type("M", (), {"delivery_tag": 9})(), pika.BasicProperties(message_id="m-9"), b"{}")
    assert responder._channel.calls == [("ack", 9)] and told == ["m-9"] and responder.unanswerable.value == counted


@pytest.mark.parametrize("last, ends, dead", [("dead_letter", ("ack", 7), True), ("ack", ("ack", 7), False)])
def test_the_last_undeliverable_attempt_is_dead_lettered_unless_the_defect(last, ends, dead):
    responder, _ = _responder(last_attempt=last)
    published = _settling(responder, ["returned"])
    dead_lettered = []
    responder._observer.dead_lettered = lambda message_id, reason: dead_lettered.append(reason)
    responder._answer(_delivery(attempt=3), b"{}")
    assert responder._channel.calls == [ends]
    assert bool(dead_lettered) is dead and any(key == "q.dlq" for key, _ in published) is dead


def test_the_last_attempt_knob_leaves_earlier_attempts_requeued():
    responder, _ = _responder(last_attempt="ack")
    _settling(responder, ["returned"])
    responder._answer(_delivery(attempt=1), b"{}")
    assert responder._channel.calls == [("nack", 7, True)]


# RR-5.2: the handler sees the spec's own headers; only x-acemq-* is the engine's.
@pytest.mark.parametrize("passed, shown", [
    (True, ["acemq-reply-to", "acemq-whatever", "responseMessageId", "x-custom"]),
    (False, ["responseMessageId", "x-custom"]),
])
def test_the_handler_sees_the_acemq_headers_unless_the_defect(passed, shown):
    seen = []
    responder, _ = _responder(handler=seen.append, pass_spec_headers=passed)
    headers = {"acemq-reply-to": "amq.gen-x", "acemq-whatever": 1, "responseMessageId": "m-0", "x-custom": 2, "x-acemq-trace": 3}
    responder._handle(_delivery(headers=headers))
    assert sorted(seen[0].headers) == shown


# RR-15.1: Answered counts a reply before it is published; the defect counts it on the confirm, at once.
@pytest.mark.parametrize("timing", ["before_publish", "after_confirm"])
def test_answered_counts_before_the_publish_unless_the_defect_waits_for_the_confirm(timing):
    responder, _ = _responder(answered_timing=timing)
    confirms = []
    responder._publish_then = lambda key, properties, body, on_confirmed, on_failed: confirms.append(on_confirmed)
    responder._answer(_delivery(), b"{}")
    assert responder.answered.value == (1 if timing == "before_publish" else 0)  # published, not confirmed
    confirms.pop()()
    assert responder.answered.value == 1 and responder._channel.calls == [("ack", 7)]  # no added delay


@pytest.mark.parametrize("timing, rollback", [("before_publish", True), ("before_publish", False), ("after_confirm", True)])
def test_a_returned_reply_leaves_answered_as_before_it_unless_no_rollback(timing, rollback):
    responder, _ = _responder(answered_timing=timing, rollback_answered=rollback)
    _settling(responder, ["returned"])
    responder._answer(_delivery(attempt=1), b"{}")
    assert responder.answered.value == (0 if rollback else 1)  # after_confirm never counted it


# -- stop settles what it answered -------------------------------------------


def _stoppable(responder):
    """A responder whose I/O thread work is run by the test, and whose stop closes nothing real."""
    work = []
    responder._io.submit = lambda fn, *args: work.append((fn, args))
    responder._io.call = lambda fn, *args, timeout=None: None  # the consumer's cancel
    closed = threading.Event()
    responder._io.close = closed.set
    return work, closed


def test_stop_waits_for_an_answered_request_to_be_acked_before_closing():
    responder, _ = _responder()
    work, closed = _stoppable(responder)
    confirms = []
    responder._publish_then = lambda key, properties, body, on_confirmed, on_failed: confirms.append(on_confirmed)
    responder._handle(_delivery())  # the handler returned: its reply is to be published
    fn, args = work.pop()
    fn(*args)  # published; the confirm is on its way
    stopper = threading.Thread(target=responder.stop)
    stopper.start()
    assert not closed.wait(0.2), "stop closed the connection before the answered request was acked"
    confirms.pop()()  # the confirm arrives: the request is acked
    stopper.join(5)
    assert closed.is_set() and responder._channel.calls == [("ack", 7)]


def test_stop_abandons_a_handler_that_returns_after_it():
    responder, _ = _responder()
    work, closed = _stoppable(responder)
    responder.stop()
    assert closed.is_set()
    responder._handle(_delivery())
    assert work == [] and responder._settling == set()
    responder._on_request(None, type("M", (), {"delivery_tag": 8})(), pika.BasicProperties(reply_to="amq.gen-x"), b"{}")
    assert responder._channel.calls == []  # not acked: the broker requeues it


# -- the request queue's declaration (RR-17) ---------------------------------


class _Declaring:
    """A channel recording its queue declares; a passive one finds the queue or closes (404)."""

    def __init__(self, log, exists):
        self._log, self._exists = log, exists

    def queue_declare(self, queue, passive=False, durable=False, arguments=None):
        self._log.append((queue, passive, durable, arguments))
        if passive and not self._exists:
            raise pika.exceptions.ChannelClosedByBroker(404, f"NOT_FOUND - no queue '{queue}'")

    def close(self):
        self._log.append("probe closed")


def _declaring(exists, **policy):
    responder, _ = _responder(**policy)
    log = []
    responder._channel = _Declaring(log, exists)
    responder._io.connection = SimpleNamespace(channel=lambda: _Declaring(log, exists))
    responder._declare_request_queue()
    return log


@pytest.mark.parametrize("exists", [True, False])
def test_the_request_queue_is_declared_quorum_whether_or_not_it_exists(exists):
    assert _declaring(exists) == [("q", False, True, {"x-queue-type": "quorum"})]


def test_the_defect_leaves_an_existing_request_queue_as_it_is():
    assert _declaring(True, request_queue="classic_if_missing") == [("q", True, False, None), "probe closed"]


def test_the_defect_declares_a_missing_request_queue_classic_on_the_consuming_channel():
    assert _declaring(False, request_queue="classic_if_missing") == [("q", True, False, None), ("q", False, True, None)]
