"""RR-20 without a broker: what a lost connection ends, how the binding comes back, and what
the adapter makes of it (protocol 5). The wire behaviour (the broker closing a real
connection) is the harness's scenarios rr-requester-*/rr-responder-* with drop_connection."""

import io
import json
import threading
import time
from concurrent.futures import Future

import pika
import pytest

from acemq import connection as conn
from acemq.errors import ConnectionLost
from acemq.gather import Gather
from acemq.hooks import RequesterObserver, ResponderObserver
from acemq.requester import Requester, _Call
from acemq_peer import Output, Peer
from test_peer_adapter import _answer, _Failing, _GATHER, _peer_with, _REQUEST
from test_responder_policies import _delivery, _responder, _settling

FORCED = "320 CONNECTION_FORCED - Closed via management plugin"


# -- the connection: name, nodes, backoff --------------------------------------------------


def test_the_backoff_starts_within_a_second_and_never_waits_more_than_five():
    delays = conn.retry_delays()
    first = [next(delays) for _ in range(8)]
    assert first[0] <= 1.0 and max(first) == 5.0 and first == sorted(first)


def test_a_connection_carries_its_name_as_the_client_property_and_keeps_the_url():
    params = conn.connection_parameters("amqp://u:p@host:5673/v", "acemq-interop run c0001.q")
    assert params.client_properties == {"connection_name": "acemq-interop run c0001.q"}
    assert (params.host, params.port, params.virtual_host) == ("host", 5673, "v")
    assert conn.connection_parameters("amqp://host/").client_properties in (None, {})


def test_one_broker_is_a_list_of_one_and_an_empty_list_is_refused():
    assert conn.broker_list("amqp://a/") == ["amqp://a/"]
    assert conn.broker_list(["amqp://a/", "amqp://b/"]) == ["amqp://a/", "amqp://b/"]
    with pytest.raises(ValueError):
        conn.broker_list([])


class _Connection:
    def close(self):
        pass


def test_recovery_tries_the_nodes_round_robin_from_the_one_after_the_lost_node(monkeypatch):
    monkeypatch.setattr(conn, "retry_delays", lambda: iter([0.0] * 10))
    io_thread = conn.ConnectionThread(["amqp://a/", "amqp://b/", "amqp://c/"], "t")
    io_thread._node = 2  # the lost connection was on c
    tried, set_ups = [], []

    def open_node(index):
        tried.append(index)
        if index == 0:
            raise conn.ConnectionFailed("a is down")
        return _Connection()

    def set_up():
        set_ups.append(io_thread._node)
        if len(set_ups) == 1:
            raise RuntimeError("declare failed")  # the new connection is closed and tried again

    io_thread._open = open_node
    io_thread.on_recovered = set_up
    io_thread.recovering = True
    assert io_thread._recover() is True
    assert tried == [0, 1, 2] and set_ups == [1, 2] and io_thread._node == 2
    assert not io_thread.recovering


def test_recovery_gives_up_once_the_owner_closes(monkeypatch):
    monkeypatch.setattr(conn, "retry_delays", lambda: iter([0.0] * 10))
    io_thread = conn.ConnectionThread("amqp://a/", "t")
    io_thread._closing.set()
    io_thread._open = lambda index: pytest.fail("no attempt after close")
    assert io_thread._recover() is False


# -- the requester: RR-20.1 and RR-20.3 --------------------------------------------------------


class _Told(RequesterObserver, ResponderObserver):
    def __init__(self):
        self.lost, self.recovered_count = [], 0

    def connection_lost(self, reason):
        self.lost.append(reason)

    def recovered(self):
        self.recovered_count += 1


def _requester(recovering=True, **policy):
    from acemq._policy import RequesterPolicy

    told = _Told()
    requester = Requester("amqp://unused/", observer=told)
    requester._policy = RequesterPolicy(**policy)
    requester._io.recovering = recovering
    return requester, told


def test_a_lost_connection_ends_pending_calls_and_gathers_at_once_not_as_timeouts():
    requester, told = _requester()
    call = _Call("m-1")
    requester._calls["m-1"] = call
    gather = Gather("g-1", "g-1", 2)
    requester._gathers["g-1"] = gather
    requester._connection_lost(FORCED)
    assert call.done and gather.done and told.lost == [FORCED]
    with pytest.raises(ConnectionLost) as lost:
        call.result()
    assert lost.value.reason == FORCED
    with pytest.raises(ConnectionLost):
        gather.wait(0)
    assert requester.timed_out.value == 0 and not requester._calls and not requester._gathers


def test_the_wait_defect_leaves_pending_calls_to_their_timeout():
    requester, _ = _requester(on_connection_lost="wait")
    call = _Call("m-1")
    requester._calls["m-1"] = call
    requester._connection_lost(FORCED)
    assert not call.done and "m-1" in requester._calls


def test_a_call_made_while_recovering_waits_and_goes_out_on_the_new_reply_queue():
    requester, told = _requester()
    requester._reply_queue = "amq.gen-old"
    requester._connection_lost(FORCED)
    requester._open_channels = lambda: "amq.gen-new"
    published = []

    def publish(fn, outgoing):
        published.append(outgoing.reply_queue)
        confirm = Future()
        confirm.set_result(None)
        return confirm

    requester._io.call = publish
    threading.Timer(0.2, requester._recovered).start()
    started = time.monotonic()
    pending = requester.send("", "requests", {"n": 2}, timeout=5)
    assert 0.1 < time.monotonic() - started < 4 and published == ["amq.gen-new"]
    assert requester.reply_queue == "amq.gen-new" and told.recovered_count == 1
    assert not pending.done()


def test_a_requester_that_does_not_recover_refuses_later_calls_as_lost():
    requester, _ = _requester(recovering=False, recover_connection=False)
    requester._connection_lost(FORCED)
    requester._io.call = lambda *a: pytest.fail("nothing is published")
    with pytest.raises(ConnectionLost, match="CONNECTION_FORCED"):
        requester.send("", "requests", {}, timeout=5)


def test_a_request_whose_confirm_died_with_the_connection_ends_as_lost_not_refused():
    from acemq.publishing import PublishFailed

    requester, _ = _requester()

    def publish(fn, outgoing):
        confirm = Future()
        requester._connection_lost(FORCED)  # lost before the confirm came
        confirm.set_exception(PublishFailed("channel failed: ConnectionClosedByBroker"))
        return confirm

    requester._io.call = publish
    with pytest.raises(ConnectionLost, match="CONNECTION_FORCED"):
        requester.send("", "requests", {}, timeout=5)
    assert requester.timed_out.value == 0


# -- the responder: RR-20.2 and RR-20.4 --------------------------------------------------------


def test_a_reply_for_a_delivery_of_the_lost_connection_is_not_sent_nor_settled():
    responder, _ = _responder()
    published = _settling(responder, ["confirmed"])
    delivery = _delivery()
    responder._settling.add(delivery.tag)
    responder._channel.is_open = False  # the connection went while the handler ran
    responder._answer(delivery, b"{}")
    responder._fail(delivery, "ScenarioFailure: boom")
    assert published == [] and responder._channel.calls == [] and responder._settling == set()
    assert responder.answered.value == 0, "it is answered once, when it comes again"


def test_a_settlement_after_the_loss_is_dropped_not_acked_on_another_channel():
    responder, _ = _responder()
    delivery = _delivery()
    responder._channel.is_open = False
    responder._ack(delivery.tag)
    responder._nack_requeue(delivery.tag)
    assert responder._channel.calls == []


def test_the_responder_acks_after_handling_unless_the_defect_acks_on_delivery():
    for timing, early in (("after_handling", []), ("on_delivery", [("ack", 5)])):
        responder, _ = _responder(ack_timing=timing)
        handled = []
        responder._workers.submit = lambda fn, delivery: handled.append(delivery)
        properties = pika.BasicProperties(message_id="m-5", reply_to="amq.gen-x")
        responder._on_request(None, type("M", (), {"delivery_tag": 5})(), properties, b"{}")
        assert responder._channel.calls == early
        _settling(responder, ["confirmed"])
        responder._answer(handled[0], b"{}")
        assert responder._channel.calls == [("ack", 5)], "acked once, whichever the timing"


def test_recovery_declares_and_consumes_again_and_is_told():
    responder, _ = _responder()
    told = _Told()
    responder._observer = told
    subscribed = []
    responder._subscribe = lambda: subscribed.append(True)
    responder._resubscribe()
    assert subscribed == [True] and told.recovered_count == 1
    responder._stopped.set()
    responder._resubscribe()
    assert subscribed == [True], "a stopped responder does not come back"


# -- the adapter: protocol 5 --------------------------------------------------------------


def test_a_lost_call_is_the_connection_lost_outcome_with_its_reason():
    for op, fields in (("request", _REQUEST), ("gather", _GATHER)):
        answer = _answer(_peer_with(_Failing(ConnectionLost(FORCED))), op, **fields)
        assert answer["ok"] and answer["outcome"] == "connection_lost" and answer["reason"] == FORCED


def test_a_role_connects_to_its_nodes_under_its_name_from_protocol_5_only():
    peer = Peer(Output(io.StringIO()))
    peer.hello({"protocol": 5, "protocols": [1, 2, 3, 4, 5], "amqp_url": "amqp://a/v", "amqp_urls": ["amqp://a/v", "amqp://b/v"]})
    command = {"connection_name": "acemq-interop run c0001.q", "amqp_urls": ["amqp://a/v", "amqp://b/v"]}
    assert peer._connection(command) == {"url": ["amqp://a/v", "amqp://b/v"], "connection_name": "acemq-interop run c0001.q"}
    assert peer._connection({}) == {"url": "amqp://a/v", "connection_name": None}
    peer.hello({"protocol": 4, "protocols": [1, 2, 3, 4], "amqp_url": "amqp://a/v"})
    assert peer._connection(command) == {"url": "amqp://a/v"}


def test_the_recovered_event_is_protocol_5s():
    from acemq_peer import EventsOfRequester, EventsOfResponder

    for protocol, lines in ((5, 2), (4, 0)):
        stream = io.StringIO()
        EventsOfRequester(Output(stream), "c0001.q", protocol).recovered()
        EventsOfResponder(Output(stream), "c0001.r", protocol).recovered()
        written = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert len(written) == lines
        if lines:
            assert written == [{"event": "recovered", "requester": "c0001.q"}, {"event": "recovered", "responder": "c0001.r"}]
