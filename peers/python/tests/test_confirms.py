"""Publisher confirms with many publishes outstanding (RR-13), driven without a broker.

The broker's frames are played to ``Confirms`` in the order a channel receives them:
a basic.return always comes before the ack of the publish it returns.
"""

import pika
import pytest

from acemq.publishing import Confirms, PublishFailed


def _props(message_id, correlation_id=None):
    return pika.BasicProperties(message_id=message_id, correlation_id=correlation_id or message_id)


def _outcome(confirm):
    error = confirm.exception(0)
    return "ok" if error is None else ("returned" if error.returned else error.detail)


def test_confirms_settle_by_delivery_tag_in_any_order():
    confirms = Confirms()
    tags = [confirms.publishing("", "q", _props(f"m-{n}")) for n in range(3)]
    assert [tag for tag, _ in tags] == [1, 2, 3]
    confirms.confirmed(2, multiple=False, acked=True)
    assert [confirm.done() for _, confirm in tags] == [False, True, False]
    confirms.confirmed(3, multiple=False, acked=False)
    confirms.confirmed(1, multiple=False, acked=True)
    assert [_outcome(confirm) for _, confirm in tags] == ["ok", "ok", "nacked by the broker"]
    assert len(confirms) == 0


def test_a_multiple_ack_settles_every_tag_up_to_its_own():
    confirms = Confirms()
    tags = [confirms.publishing("", "q", _props(f"m-{n}")) for n in range(4)]
    confirms.confirmed(3, multiple=True, acked=True)
    assert [confirm.done() for _, confirm in tags] == [True, True, True, False]
    confirms.confirmed(4, multiple=True, acked=False)
    assert _outcome(tags[3][1]) == "nacked by the broker"


def test_a_return_ends_exactly_the_publish_it_belongs_to():
    confirms = Confirms()
    routed = confirms.publishing("", "requests", _props("m-1"))[1]
    lost = confirms.publishing("", "nowhere", _props("m-2"))[1]
    later = confirms.publishing("", "requests", _props("m-3"))[1]
    confirms.returned("", "nowhere", _props("m-2"), "returned by the broker: 312 NO_ROUTE")
    confirms.confirmed(3, multiple=True, acked=True)  # the broker acks a returned publish too
    assert [_outcome(c) for c in (routed, lost, later)] == ["ok", "returned", "ok"]
    assert "312 NO_ROUTE" in lost.exception(0).detail


def test_a_return_is_matched_on_exchange_routing_key_and_both_ids():
    confirms = Confirms()
    same_ids_other_key = confirms.publishing("", "requests", _props("m-1", "c-1"))[1]
    other_correlation = confirms.publishing("", "nowhere", _props("m-1", "c-2"))[1]
    returned = confirms.publishing("", "nowhere", _props("m-1", "c-1"))[1]
    confirms.returned("", "nowhere", _props("m-1", "c-1"), "returned by the broker: 312 NO_ROUTE")
    confirms.confirmed(3, multiple=True, acked=True)
    assert [_outcome(c) for c in (same_ids_other_key, other_correlation, returned)] == ["ok", "ok", "returned"]


def test_identical_publishes_each_take_one_return():
    # The copies of a gather share their ids and route: each return marks the oldest unmarked one.
    confirms = Confirms()
    copies = [confirms.publishing("", "nowhere", _props("m-1"))[1] for _ in range(3)]
    confirms.returned("", "nowhere", _props("m-1"), "returned")
    confirms.returned("", "nowhere", _props("m-1"), "returned")
    confirms.confirmed(3, multiple=True, acked=True)
    assert [_outcome(c) for c in copies] == ["returned", "returned", "ok"]


def test_a_lost_channel_fails_every_unconfirmed_publish():
    confirms = Confirms()
    first = confirms.publishing("", "q", _props("m-1"))[1]
    second = confirms.publishing("", "q", _props("m-2"))[1]
    confirms.confirmed(1, multiple=False, acked=True)
    confirms.failed("channel closed by the broker: 404 NOT_FOUND")
    assert _outcome(first) == "ok"
    with pytest.raises(PublishFailed, match="404 NOT_FOUND"):
        second.result(0)
    assert len(confirms) == 0


def test_a_publish_that_never_left_gives_its_tag_back():
    confirms = Confirms()
    tag, confirm = confirms.publishing("", "q", _props("m-1"))
    confirms.not_sent(tag, PublishFailed("channel failed"))
    assert _outcome(confirm) == "channel failed"
    assert confirms.publishing("", "q", _props("m-2"))[0] == 1
