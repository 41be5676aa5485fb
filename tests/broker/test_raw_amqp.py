"""The raw AMQP client and the codec on the broker: what the probe publishes comes back code
for code; the probe's connections are known by their own addresses; the firehose transcript
keeps every header's type and names each publisher right."""
from __future__ import annotations

import time
import urllib.parse
import uuid

import pytest

from acemq_interop.amqp import transcript as tr
from acemq_interop.amqp.codec import Typed
from acemq_interop.amqp.probe import Probe
from acemq_interop.amqp.raw_client import RawAmqpError, RawConnection, client_end, plain, type_codes

pytestmark = pytest.mark.broker


@pytest.fixture
def queue(broker):
    probe = Probe(broker.amqp_url("/"))
    name = probe.declare_queue(f"raw-amqp-{uuid.uuid4().hex[:8]}", "classic")
    try:
        yield probe, name
    finally:
        probe.delete_queue(name)
        probe.close()


def test_every_header_type_the_probe_writes_comes_back_with_its_code(broker, queue) -> None:
    probe, name = queue
    headers = {
        "acemq-error": "ScenarioFailure: été",  # text -> S
        "x-blob": b"\x00\xff",  # bytes -> x
        "x-plain-int": 5,  # a small int -> I, as pika writes it
        "x-int": Typed("I", -7), "x-byte": Typed("b", -7), "x-long": Typed("l", 9000000000),
        "x-flag": True, "x-ratio": Typed("d", 0.25),
        "x-table": {"k": "v", "n": Typed("I", 1)}, "x-list": ["a", Typed("b", 2)],
        # what WF-2 forbids, written on purpose so the reader is seen to tell them apart
        "x-ubyte": Typed("B", 200), "x-ushort": Typed("u", 65000), "x-uint": Typed("i", 4000000000),
    }
    props = {"message_id": "m-1", "correlation_id": "c-1", "reply_to": "amq.gen-x", "content_type": "application/json",
             "type": "quote"}
    assert probe.publish("", name, b'{"n": 1}', props, headers)
    with RawConnection(broker.amqp_url("/")) as raw:
        message = raw.get_within(name, 5.0)
        assert message is not None
        assert raw.get(name) is None, "the message was acked: the queue is empty"
    codes = {k: v.code for k, v in message.headers.items()}
    assert codes == {"acemq-error": "S", "x-blob": "x", "x-plain-int": "I", "x-int": "I", "x-byte": "b",
                     "x-long": "l", "x-flag": "t", "x-ratio": "d", "x-table": "F", "x-list": "A",
                     "x-ubyte": "B", "x-ushort": "u", "x-uint": "i"}
    assert type_codes(message.headers)["I"] == ["x-int", "x-plain-int", "x-table.n"]
    assert type_codes(message.headers)["b"] == ["x-byte", "x-list.1"]
    assert plain(message.headers["acemq-error"]) == "ScenarioFailure: été"
    assert plain(message.headers["x-long"]) == 9000000000 and plain(message.headers["x-int"]) == -7
    assert plain(message.headers["x-byte"]) == -7 and plain(message.headers["x-ratio"]) == 0.25
    assert plain(message.headers["x-uint"]) == 4000000000 and plain(message.headers["x-ubyte"]) == 200
    assert {k: message.properties[k] for k in props} == props
    assert message.body == b'{"n": 1}' and message.routing_key == name and message.message_count == 0


def test_a_large_body_spanning_frames_and_an_empty_one_are_read_whole(broker, queue) -> None:
    probe, name = queue
    big = b"x" * 300_000  # over the 128 KiB frame size
    assert probe.publish("", name, big, {}, {})
    assert probe.publish("", name, b"", {}, {"acemq-error": "E: x"})
    with RawConnection(broker.amqp_url("/")) as raw:
        first, second = raw.get_within(name, 5.0), raw.get_within(name, 5.0)
    assert first.body == big and first.headers == {}
    assert second.body == b"" and second.headers["acemq-error"].code == "S"


def test_an_unroutable_publish_is_returned_and_the_probe_goes_on(broker, queue) -> None:
    probe, name = queue
    assert probe.publish("", f"no-such-queue-{uuid.uuid4().hex}", b"{}", {}, {}) is False
    assert probe.publish("", name, b"{}", {"message_id": "after"}, {}) is True
    assert probe.get(name, 5.0)["properties"]["message_id"] == "after"


def test_a_missing_queue_and_bad_credentials_are_one_line_errors(broker) -> None:
    with RawConnection(broker.amqp_url("/")) as raw:
        with pytest.raises(RawAmqpError, match="closed the channel: 404"):
            raw.get("no-such-queue-" + uuid.uuid4().hex)
    url = broker.amqp_url("/").replace(f"{broker.username}:", "nobody:", 1)
    with pytest.raises(RawAmqpError):
        RawConnection(url, bound_s=5.0).open()


def _connections(broker, vhost: str) -> dict[str, str]:
    """Client-given name -> the broker's name (`CLIENT -> SERVER`) of the vhost's connections."""
    found = broker.management()._call("GET", f"/api/vhosts/{urllib.parse.quote(vhost, safe='')}/connections") or []
    return {str((c.get("client_properties") or {}).get("connection_name")): c["name"] for c in found}


def test_the_probe_knows_its_connections_as_the_broker_names_them(broker, queue) -> None:
    probe, name = queue
    assert probe.publish("", name, b"{}", {}, {})  # opens the publisher
    assert len(probe.connections) == 2
    deadline = time.monotonic() + 20  # the management API lists a connection a moment late
    while True:
        names = _connections(broker, "/")
        if {"acemq-interop probe", "acemq-interop probe (publisher)"} <= set(names) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    # Other tests' probes may be listed too: the broker's names of this probe's are among them.
    ends = {client_end(n) for n in names.values()}
    assert set(probe.connections) <= ends, (probe.connections, names)


def test_the_transcript_keeps_header_types_and_names_a_dead_lettering_responder_right(broker) -> None:
    """RR-11 on the wire: a responder dead-letters the probe's request keeping its message_id
    and sends a failure reply with a body (RR-10.1). The firehose is read with the codec; the
    probe is named by its connections, the responder by what it consumed, and the wire checks
    judge the responder's reply."""
    from acemq_interop.run.wire_checks import message_breaks

    management = broker.management()
    vhost = f"acemq-interop-test-codec-{uuid.uuid4().hex[:8]}"
    management.create_vhost(vhost)
    tracer = None
    probe = None
    try:
        tracer = tr.start_tracer("all", broker.amqp_url(vhost), management, vhost, log=print, ca_file=broker.ca_file)
        assert tracer is not None, "the firehose consumer started"
        t0 = time.monotonic()
        probe = Probe(broker.amqp_url(vhost), ca_file=broker.ca_file)
        requests, dlq = probe.declare_queue("c0001.requests", "classic"), probe.declare_queue("c0001.requests.dlq", "classic")
        inbox = probe.declare_queue("c0001.inbox", "classic")
        assert probe.publish("", requests, b'{"q": 1}', {"message_id": "c0001-m1", "reply_to": inbox},
                             {"acemq-reply-to": inbox, "x-b": Typed("b", -7), "x-d": Typed("d", 0.25),
                              "x-t": {"n": Typed("l", 5)}})
        with RawConnection(broker.amqp_url(vhost), connection_name="a responder", ca_file=broker.ca_file) as responder:
            request = responder.get_within(requests, 5.0)
            assert request is not None
            assert responder.publish("", dlq, request.body, request.properties, request.headers)  # as it came, codes kept
            assert responder.publish("", inbox, b'{"why": "no"}', {"correlation_id": "c0001-m1", "content_type": "application/json"},
                                     {"acemq-error": "ScenarioFailure: no", "responseMessageId": "c0001-m1"})
        assert probe.get(inbox, 5.0) is not None
        trace = [{"step": "responder.start", "peer": "go", "sent": {"queue": requests}},
                 {"step": "probe_publish", "published": [{"message_id": "c0001-m1", "routed": True}]},
                 {"step": "probe_get", "queue": inbox}]
        who, replies = tr.participants(trace, {"responder": "go"})
        deadline = time.monotonic() + 10
        while tracer.received < 5 and time.monotonic() < deadline:  # 3 publishes, 2 deliveries (gets)
            time.sleep(0.05)  # a poll of the tracer's count, not a wait for a race
        records = tr.transcript(tracer.take("c0001", replies, keep=True), t0, who, probe.connections)
        shown = [(r["event"], r.get("queue") or r["routing_keys"][0], r["who"]) for r in records]
        assert shown == [("publish", requests, "probe"), ("deliver", requests, "go (responder)"),
                         ("publish", dlq, "go (responder)"), ("publish", inbox, "go (responder)"),
                         ("deliver", inbox, "probe")], shown
        request_headers = records[0]["headers"]
        assert request_headers["x-b"] == {"type": "b", "value": -7} and request_headers["x-d"] == {"type": "d", "value": 0.25}
        assert request_headers["x-t"] == {"type": "F", "value": {"n": {"type": "l", "value": 5}}}
        assert records[2]["headers"] == request_headers, "the dead-letter kept every type"
        breaks = {(b.clause, b.peer) for b in message_breaks(records, {"go"}, {inbox})}
        assert ("RR-10.1", "go") in breaks, breaks
    finally:
        if probe is not None:
            probe.close()
        if tracer is not None:
            tracer.stop()
        management.delete_vhost(vhost)


def _api(broker, method: str, path: str) -> object:
    """The management API as a user calls it (the harness's client has no connection calls)."""
    import base64
    import json
    import urllib.request

    request = urllib.request.Request(f"{broker.mgmt_url}{path}", method=method, headers={
        "Authorization": "Basic " + base64.b64encode(f"{broker.username}:{broker.password}".encode()).decode(),
        "X-Reason": "acemq-interop test: the tracer's connection is closed by force"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def test_the_tracer_reconnects_after_a_forced_close_and_says_which_time_it_missed(broker) -> None:
    """An operator (or the broker) closes the tracer's connection mid-run: the tracer connects
    again and goes on filing what the firehose sends, and the time without a consumer is a gap
    a cell overlapping it is told of (`gap_during`), never a silent hole in its transcript."""
    management = broker.management()
    vhost = f"acemq-interop-test-tracer-{uuid.uuid4().hex[:8]}"
    management.create_vhost(vhost)
    said: list[str] = []
    tracer = probe = None
    try:
        tracer = tr.start_tracer("all", broker.amqp_url(vhost), management, vhost, log=said.append, ca_file=broker.ca_file)
        assert tracer is not None
        probe = Probe(broker.amqp_url(vhost), ca_file=broker.ca_file)
        queue = probe.declare_queue("c0001.requests", "classic")
        before = time.monotonic()
        assert probe.publish("", queue, b"before", {"message_id": "m1"}, {})
        deadline = time.monotonic() + 10
        while tracer.received < 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # a poll of the tracer's count
        assert tracer.received == 1 and tracer.gap_during(before, time.monotonic()) is None

        name = None
        deadline = time.monotonic() + 30  # the API lists a connection once its statistics are in
        while name is None and time.monotonic() < deadline:
            listed = _api(broker, "GET", f"/api/vhosts/{urllib.parse.quote(vhost, safe='')}/connections")
            name = next((c["name"] for c in listed if (c.get("client_properties") or {}).get("connection_name")
                         == "acemq-interop tracer"), None)
            time.sleep(0.2)
        assert name is not None, "the API lists the tracer's connection"
        closed_at = time.monotonic()
        _api(broker, "DELETE", f"/api/connections/{urllib.parse.quote(name, safe='')}")
        deadline = time.monotonic() + 30
        while not (tracer.gaps and tracer.gaps[-1][1] is not None) and time.monotonic() < deadline:
            time.sleep(0.05)  # a poll of the tracer's state
        assert tracer.gaps and tracer.gaps[-1][1] is not None, f"the tracer came back: {said}"
        assert any("connection was lost" in line for line in said) and any("reconnected" in line for line in said), said

        gap = tracer.gap_during(before, time.monotonic())
        assert gap is not None and gap.startswith("transcript incomplete: the tracer's connection was lost at +"), gap
        assert tracer.gap_during(before, closed_at - 0.5) is None, "a cell that ended before the close is whole"

        after = time.monotonic()
        assert probe.publish("", queue, b"after", {"message_id": "m2"}, {})
        deadline = time.monotonic() + 10
        while tracer.received < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        taken = tracer.take("c0001", [], keep=True)
        assert [r.body for r in taken] == [b"before", b"after"], [r.body for r in taken]
        assert tracer.gap_during(after, time.monotonic()) is None, "a cell after the reconnect is whole"
    finally:
        if probe is not None:
            probe.close()
        if tracer is not None:
            tracer.stop()
        management.delete_vhost(vhost)
