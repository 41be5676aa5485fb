"""The raw AMQP client on the broker: it reads back, code for code, what pika published."""
from __future__ import annotations

import uuid

import pytest

from acemq_interop.amqp.codec import Typed
from acemq_interop.amqp.probe import Probe
from acemq_interop.amqp.raw_client import RawAmqpError, RawConnection, plain, type_codes

pytestmark = pytest.mark.broker


@pytest.fixture
def queue(broker):
    probe = Probe(broker.amqp_url("/"))
    name = probe.declare_queue(f"raw-amqp-{uuid.uuid4().hex[:8]}", "classic")
    try:
        yield probe, name
    finally:
        probe._channel.queue_delete(name)
        probe.close()


def test_every_header_type_pika_writes_comes_back_with_its_code(broker, queue) -> None:
    probe, name = queue
    headers = {
        "acemq-error": "ScenarioFailure: été",  # pika: str -> S
        "x-blob": b"\x00\xff",  # bytes -> x
        "x-plain-int": 5,  # pika: a small int -> I
        "x-int": Typed("I", -7), "x-byte": Typed("b", 5), "x-long": Typed("l", 9000000000),
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
    assert plain(message.headers["x-ratio"]) == 0.25 and plain(message.headers["x-uint"]) == 4000000000
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


def test_a_missing_queue_and_bad_credentials_are_one_line_errors(broker) -> None:
    with RawConnection(broker.amqp_url("/")) as raw:
        with pytest.raises(RawAmqpError, match="closed the channel: 404"):
            raw.get("no-such-queue-" + uuid.uuid4().hex)
    url = broker.amqp_url("/").replace(f"{broker.username}:", "nobody:", 1)
    with pytest.raises(RawAmqpError):
        RawConnection(url, bound_s=5.0).open()
