"""The broker's transcript as ground truth: every message a peer published, judged against
the clauses one message can show, charged to its publisher; a consequence confirmed or
refuted. Pure: transcript records in, findings out (the broker suites run it for real)."""
from __future__ import annotations

from typing import Any

from acemq_interop.run.wire_checks import judge, message_breaks


def publish(n: int, who: str, routing_key: str, exchange: str = "", headers: dict[str, Any] | None = None,
            body_length: int = 2, **properties: Any) -> dict[str, Any]:
    return {"n": n, "event": "publish", "who": who, "exchange": exchange, "routing_keys": [routing_key],
            "properties": properties, "headers": headers or {}, "body_length": body_length}


S = lambda value: {"type": "S", "value": value}  # noqa: E731: a long string, as the firehose types it

GOOD_REQUEST = publish(1, "a (requester)", "c1.requests", reply_to="amq.gen-q", message_id="m-1", correlation_id="m-1",
                       headers={"acemq-reply-to": S("amq.gen-q")})
GOOD_REPLY = publish(2, "b (responder)", "amq.gen-q", content_type="application/json", correlation_id="m-1",
                     headers={"responseMessageId": S("m-1")})


def test_conformant_messages_break_nothing() -> None:
    assert message_breaks([GOOD_REQUEST, GOOD_REPLY], {"a", "b"}, set()) == []


def test_each_single_message_clause_is_named_and_charged_to_its_publisher() -> None:
    request = publish(1, "a (requester)", "c1.requests", reply_to="", message_id="m-1", headers={
        "acemq-reply-to": {"type": "x", "value": "amq.gen-q"}, "x-hops": {"type": "B", "value": 1}})
    reply = publish(2, "b (responder)", "amq.gen-q", correlation_id="m-2", headers={"acemq-error": S("E: m")}, body_length=9)
    found = {(w.clause, w.peer) for w in message_breaks([request, reply], {"a", "b"}, set())}
    assert found == {("RR-3.3", "a"), ("RR-2.1", "a"), ("WF-2.1", "a"),
                     ("RR-4.3", "b"), ("SG-3.1", "b"), ("RR-4.2", "b"), ("RR-10.1", "b")}


def test_a_request_without_message_id_is_its_requesters_break_and_its_reply_is_not_charged() -> None:
    """No message_id and no correlation_id: no reply can find its caller (RR-8.1, SG-1.1 for a
    gather's copy); the responder has nothing to echo, so its reply is not judged on
    responseMessageId or correlation."""
    request = dict(GOOD_REQUEST, properties={"reply_to": "amq.gen-q"})
    reply = dict(GOOD_REPLY, properties={"content_type": "application/json"}, headers={})
    assert [(w.clause, w.peer) for w in message_breaks([request, reply], {"a", "b"}, set(), {"a": "RR-8.1"})] == [("RR-8.1", "a")]
    assert [(w.clause, w.peer) for w in message_breaks([request, reply], {"a", "b"}, set(), {"a": "SG-1.1"})] == [("SG-1.1", "a")]
    assert message_breaks([request, reply], {"a", "b"}, set()) == [], "unknown whether a request or a copy: not judged"


def test_a_request_whose_correlation_id_is_not_its_message_id_breaks_rr_8_4_in_any_cell() -> None:
    """Judged on every request of a requester, not only in the probe's scenario: a pair cell of
    two acemq bindings passes without it (they match on message_id), yet no responder that is
    not acemq could answer such a request."""
    assert message_breaks([GOOD_REQUEST, GOOD_REPLY], {"a", "b"}, set(), {"a": "RR-8.1"}) == []
    for properties in ({"reply_to": "amq.gen-q", "message_id": "m-1"},
                       {"reply_to": "amq.gen-q", "message_id": "m-1", "correlation_id": "other"}):
        request = dict(GOOD_REQUEST, properties=properties)
        found = [(w.clause, w.peer, w.expected, w.observed) for w in message_breaks([request, GOOD_REPLY], {"a", "b"}, set(), {"a": "RR-8.1"})]
        assert found == [("RR-8.4", "a", "m-1", properties.get("correlation_id"))]
    gather_copy = dict(GOOD_REQUEST, properties={"reply_to": "amq.gen-q", "message_id": "m-1", "correlation_id": "c-1"})
    assert message_breaks([gather_copy, GOOD_REPLY], {"a", "b"}, set(), {"a": "SG-1.1"}) == [], \
        "a gather's copy carries the caller's correlationId (SG-1): not RR-8.4's"


def test_a_request_known_by_its_correlation_id_is_answered_under_it() -> None:
    """A tutorial caller's request: no message_id, its own correlation_id, which is then the
    request's id (RR-4.2, SG-3.1): a reply must carry it in both places."""
    request = dict(GOOD_REQUEST, properties={"reply_to": "amq.gen-q", "correlation_id": "1"})
    echoed = dict(GOOD_REPLY, properties={"content_type": "application/json", "correlation_id": "1"},
                  headers={"responseMessageId": S("1")})
    assert message_breaks([request, echoed], {"b"}, set()) == []
    lost = dict(GOOD_REPLY, properties={"content_type": "application/json"}, headers={})
    assert {(w.clause, w.peer) for w in message_breaks([request, lost], {"b"}, set())} == {("RR-4.2", "b"), ("SG-3.1", "b")}


def test_a_reply_is_told_by_where_it_goes_not_by_the_connection_that_sent_it() -> None:
    # One connection carrying a peer's requester and responder is named for one of them.
    reply_on_shared = dict(GOOD_REPLY, who="a (requester)")
    assert message_breaks([GOOD_REQUEST, reply_on_shared], {"a"}, set()) == []


def test_a_publisher_the_transcript_cannot_name_or_a_peer_not_judged_is_never_charged() -> None:
    anonymous = publish(1, "connection 1", "c1.requests")
    history = publish(2, "a@0.3.0 (requester)", "c1.requests", headers={"acemq-reply-to": S("q")})
    assert message_breaks([anonymous, history], {"a"}, set()) == []


def test_a_responder_consequence_is_confirmed_or_refuted_by_the_replies_on_the_wire() -> None:
    trace = [{"step": "requester.open", "answer": {"reply_queue": "amq.gen-q"}}]
    confirmed = judge("SG-3.1", [GOOD_REQUEST, dict(GOOD_REPLY, headers={})], trace)
    refuted = judge("SG-3.1", [GOOD_REQUEST, GOOD_REPLY], trace)
    assert confirmed is not None and confirmed.confirmed and confirmed.lines == (2,)
    assert refuted is not None and not refuted.confirmed and "#2" in refuted.text
    assert judge("SG-3.1", [GOOD_REQUEST], trace) is None, "no reply on the wire: nothing to say"


def test_a_reply_through_the_requests_fanout_is_the_responders_rr_4_1_not_the_gatherers_sg_2_2() -> None:
    from acemq_interop.run.wire_checks import extra_publishes_by_others

    copy = publish(1, "a (requester)", "", exchange="c1.quotes", reply_to="amq.gen-q", headers={"acemq-reply-to": S("amq.gen-q")})
    misrouted = publish(2, "b (responder)", "", exchange="c1.quotes", content_type="application/json",
                        headers={"responseMessageId": S("m-1")})
    found = [(w.clause, w.peer) for w in message_breaks([copy, misrouted], {"a", "b"}, set())]
    assert found == [("RR-4.1", "b")]
    refuted = extra_publishes_by_others([copy, misrouted], "a")
    assert refuted is not None and not refuted.confirmed and refuted.lines == (2,)
    twice = [copy, dict(copy, n=3)]
    assert extra_publishes_by_others(twice, "a") is None, "the gatherer's own second publish: SG-2.2 stands"


# -- issue 29/33: values, not presence; what was delivered and never answered; what went out late --

def deliver(n: int, who: str, queue: str, t: float = 0.0, **properties: Any) -> dict[str, Any]:
    return {"n": n, "t": t, "event": "deliver", "who": who, "queue": queue, "routing_keys": [queue],
            "properties": properties, "headers": {}}


def test_a_reply_echoing_the_wrong_id_in_response_message_id_is_its_responders_sg_3_1() -> None:
    """The value is compared with the request it answers, not only its presence."""
    wrong = dict(GOOD_REPLY, headers={"responseMessageId": S("c-own")})
    assert [(w.clause, w.peer, w.observed) for w in message_breaks([GOOD_REQUEST, wrong], {"a", "b"}, set())] == \
        [("SG-3.1", "b", "c-own")]
    finding = judge("SG-3.1", [GOOD_REQUEST, wrong], [{"step": "requester.open", "answer": {"reply_queue": "amq.gen-q"}}])
    assert finding is not None and finding.confirmed and finding.lines == (2,)
    right = judge("SG-3.1", [GOOD_REQUEST, GOOD_REPLY], [{"step": "requester.open", "answer": {"reply_queue": "amq.gen-q"}}])
    assert right is not None and not right.confirmed


def test_a_responders_answer_through_a_fanout_without_reply_headers_is_a_reply_not_a_request() -> None:
    """Told by its correlation_id echoing a request's message_id, from a responder's connection:
    RR-4.1 (not the default exchange), never judged as a request missing its addresses."""
    answer = publish(2, "b (responder)", "", exchange="c1.quotes", content_type="application/json", correlation_id="m-1")
    found = {(w.clause, w.peer) for w in message_breaks([GOOD_REQUEST, answer], {"a", "b"}, set(), {"b": "RR-8.1"})}
    assert ("RR-4.1", "b") in found
    assert not {c for c, _ in found} & {"RR-1.1", "RR-1.2", "RR-8.1"}, found


def test_a_probe_request_delivered_and_never_answered_is_found_only_with_both_addresses_named() -> None:
    from acemq_interop.run.wire_checks import unanswered_request

    both = publish(1, "probe", "c1.requests", reply_to="c1.inbox", message_id="m-1", headers={"acemq-reply-to": S("c1.inbox")})
    taken = deliver(2, "b (responder)", "c1.requests", message_id="m-1")
    assert unanswered_request([both, taken], "c1.inbox") == (both, taken, "b")
    answered_elsewhere = publish(3, "b (responder)", "", correlation_id="m-1")
    assert unanswered_request([both, taken, answered_elsewhere], "c1.inbox") is None, "it published something: not 'nothing'"
    redelivered = deliver(3, "b (responder)", "c1.requests", message_id="m-1")
    assert unanswered_request([both, taken, redelivered], "c1.inbox") is None, "a retry is another clause's business"
    header_only = publish(1, "probe", "c1.requests", message_id="m-1", headers={"acemq-reply-to": S("c1.inbox")})
    assert unanswered_request([header_only, taken], "c1.inbox") is None, "one address: which reading failed is the scenario's"


def test_publishes_routed_to_a_queue_are_counted_by_publisher_and_time() -> None:
    from acemq_interop.run.wire_checks import publishes_to

    early = dict(publish(1, "a (requester)", "c1.requests"), t=0.1, routed_queues=["c1.requests"])
    late = dict(publish(2, "a (requester)", "c1.requests"), t=9.0, routed_queues=["c1.requests"])
    lost = dict(publish(3, "a (requester)", "c1.other"), t=0.2, routed_queues=[])
    assert publishes_to([early, late, lost], "c1.requests", until=5.0) == {1: ("a", "requester")}


def test_a_calls_request_is_found_by_the_id_its_peer_reported_before_by_its_time() -> None:
    """A requester whose calls wait for one another publishes another call's request first."""
    from acemq_interop.run.wire_checks import first_reply_after

    other = dict(publish(1, "a (requester)", "c1.requests", reply_to="q", message_id="m-other"), t=5.0)
    mine = dict(publish(2, "a (requester)", "c1.requests", reply_to="q", message_id="m-mine"), t=5.1)
    reply = dict(publish(3, "probe", "q", correlation_id="m-other"), t=5.2)
    assert first_reply_after([other, mine, reply], "a", "", "c1.requests", 5.0, "m-mine") == (mine, None)
    assert first_reply_after([other, mine, reply], "a", "", "c1.requests", 5.0) == (other, reply)
    assert first_reply_after([other, mine, reply], "a", "", "c1.requests", 5.0, "m-unknown") == (other, reply)


def test_a_gathers_copy_published_twice_on_a_responders_connection_is_no_reply() -> None:
    """One connection may carry a peer's gatherer and responder: a copy published twice names
    its address and echoes its own message_id, so it is judged as a copy, never as a reply."""
    copy = publish(1, "a (requester)", "", exchange="c1.quotes", reply_to="amq.gen-q", message_id="m-1", correlation_id="m-1",
                   headers={"acemq-reply-to": S("amq.gen-q")})
    again = dict(copy, n=2, who="a (responder)")
    assert message_breaks([copy, again], {"a"}, set(), {"a": "SG-1.1"}) == []


def test_replies_to_direct_reply_to_are_grouped_by_responder_and_request() -> None:
    """RR-14.5: a reply to amq.rabbitmq.reply-to.<token> is sent once; three to one request is
    a responder that took the broker's return for a failure."""
    from acemq_interop.run.wire_checks import direct_replies, unroutable_replies

    token = "amq.rabbitmq.reply-to.g1h2AA.xyz"
    replies = [dict(publish(n, "b (responder)", token, correlation_id="1"), routed_queues=[]) for n in (2, 4, 6)]
    once = dict(publish(8, "c (responder)", token, correlation_id="2"), routed_queues=[])
    request = publish(1, "connection 1", "c1.requests", reply_to="amq.rabbitmq.reply-to", correlation_id="1")
    assert direct_replies([request, *replies, once]) == {"b": {"1": [2, 4, 6]}, "c": {"2": [8]}}
    assert unroutable_replies([request, *replies], set()) is None, "direct reply-to is routed to no queue by design"
    nowhere = dict(publish(3, "b (responder)", "amq.gen-gone", correlation_id="1"), routed_queues=[])
    named = publish(1, "a (requester)", "c1.requests", reply_to="amq.gen-gone", message_id="1")
    assert unroutable_replies([named, nowhere], set()) == ("amq.gen-gone", [3])
    assert unroutable_replies([named, nowhere], {"amq.gen-gone"}) is None, "a queue it declared that went away is RR-14's"
