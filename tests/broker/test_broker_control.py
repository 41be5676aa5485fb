"""Holding a queue's confirms on the session's private node (broker/control.py): held until
its key queue is gone, and never longer than its bound on the broker."""
from __future__ import annotations

import threading
import time
import uuid

import pika
import pytest

import support
from acemq_interop.broker.control import CtlControl, HeldQueue, HOLD_BOUND_MS, HOLD_TRUSTED_MS

NOT_HELD_FOR_S = 0.5  # how long a held publish must stay unconfirmed for the hold to count as one
RELEASED_WITHIN_S = 5.0  # a bound on the wait for a released confirm, never a measure of it


@pytest.fixture
def control(broker):
    found = support.BROKER_CONTROL.get(id(broker))
    if found is None:
        pytest.skip("the session's broker was given by URL: the harness holds no queue there")
    return found


def _connect(broker) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(broker.amqp_url("/")))


class ConfirmedPublish:
    """One mandatory publish on a confirm-mode channel of its own connection, in a thread: `done`
    is set once the broker confirmed it."""

    def __init__(self, broker, queue: str):
        self.done = threading.Event()
        self._connection = _connect(broker)
        self._queue = queue
        self._thread = threading.Thread(target=self._publish, daemon=True)
        self._thread.start()

    def _publish(self) -> None:
        channel = self._connection.channel()
        channel.confirm_delivery()
        channel.basic_publish("", self._queue, b"{}", mandatory=True)
        self.done.set()

    def close(self) -> None:
        self._thread.join(RELEASED_WITHIN_S)
        self._connection.close()


@pytest.fixture
def queues(broker):
    connection = _connect(broker)
    channel = connection.channel()
    held = f"test-hold.{uuid.uuid4().hex[:8]}"
    channel.queue_declare(held)
    key = channel.queue_declare("", exclusive=True).method.queue
    yield connection, channel, held, key
    if connection.is_open:
        channel.queue_delete(held)
        connection.close()


def test_a_held_queue_confirms_only_once_its_key_is_deleted(broker, control, queues):
    connection, channel, held, key = queues
    control.hold("/", held, key)
    publish = ConfirmedPublish(broker, held)
    try:
        assert not publish.done.wait(NOT_HELD_FOR_S), "the publish was confirmed while its queue was held"
        channel.queue_delete(key)
        released = time.monotonic()
        assert publish.done.wait(RELEASED_WITHIN_S), "the publish was not confirmed after the key was deleted"
        print(f"confirmed {1000 * (time.monotonic() - released):.0f} ms after the key's deletion")
    finally:
        publish.close()
    assert channel.queue_declare(held, passive=True).method.message_count == 1


def test_a_hold_ends_with_the_connection_that_owns_its_key(broker, control, queues):
    connection, channel, held, key = queues
    control.hold("/", held, key)
    publish = ConfirmedPublish(broker, held)
    try:
        assert not publish.done.wait(NOT_HELD_FOR_S)
        connection.close()  # a probe (or a harness) that dies mid-hold
        assert publish.done.wait(RELEASED_WITHIN_S), "the hold outlived the connection that owned its key"
    finally:
        publish.close()
    with _connect(broker) as other:
        other.channel().queue_delete(held)


def test_a_hold_never_outlasts_its_bound_on_the_broker(broker, control, queues):
    connection, channel, held, key = queues
    bounded = CtlControl(control._ctl, control._env, bound_ms=1000)
    started = time.monotonic()
    bounded.hold("/", held, key)
    publish = ConfirmedPublish(broker, held)
    try:
        assert not publish.done.wait(NOT_HELD_FOR_S)
        assert publish.done.wait(RELEASED_WITHIN_S), "the hold outlasted its bound with its key still there"
        assert time.monotonic() - started >= 1.0
    finally:
        publish.close()


def test_a_hold_on_a_queue_that_is_not_there_is_refused(broker, control, queues):
    connection, channel, held, key = queues
    with pytest.raises(Exception, match="not_found"):
        control.hold("/", f"no-such-queue.{uuid.uuid4().hex[:8]}", key)


def test_a_hold_near_its_bound_gives_no_verdict():
    held = HeldQueue("q", "k", since=100.0)
    assert held.untrusted(now=100.0 + (HOLD_TRUSTED_MS - 1) / 1000) is None
    reason = held.untrusted(now=100.0 + HOLD_TRUSTED_MS / 1000)
    assert reason is not None and f"{HOLD_BOUND_MS} ms bound" in reason and "--concurrency" in reason
