"""The raw AMQP client against a scripted broker on a loopback socket: its frames, its
publishes with confirms (ack, return, nack, a blocked connection, a closed channel), its
gets and its consumer, every header read through the codec with its type code kept."""
from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any, Callable

import pytest

from acemq_interop.amqp import raw_client as raw
from acemq_interop.amqp.codec import Field, Typed, decode_content_header, decode_table, encode_content_header, encode_table, shortstr
from acemq_interop.amqp.raw_client import Blocked, BrokerClosed, RawAmqpError, RawConnection, address_text, client_end, method_frame


def test_method_frames_are_framed_as_0_9_1_says() -> None:
    frame = method_frame(1, (60, 80), struct.pack(">QB", 7, 0))
    assert frame[:7] == struct.pack(">BHI", 1, 1, 4 + 9)
    assert frame[7:11] == struct.pack(">HH", 60, 80)
    assert frame[-1] == 0xCE


def test_a_connections_own_address_is_written_as_rabbitmq_names_its_client_end() -> None:
    assert address_text(("127.0.0.1", 5678)) == "127.0.0.1:5678"
    assert address_text(("::1", 5678, 0, 0)) == "[::1]:5678"
    assert address_text(("::ffff:10.0.0.2", 1, 0, 0)) == "10.0.0.2:1"
    assert address_text("") is None and address_text(None) is None
    assert client_end("127.0.0.1:5678 -> 127.0.0.1:5672") == "127.0.0.1:5678"
    assert client_end("[0:0:0:0:0:0:0:1]:5678 -> [::1]:5672") == "[::1]:5678"
    assert client_end("10.0.0.2:1 -> 10.0.0.1:5672") == address_text(("::ffff:10.0.0.2", 1, 0, 0))
    assert client_end("acemq-interop probe") is None and client_end("") is None


# -- a scripted broker ------------------------------------------------------------------


class Broker:
    """The broker's end of one connection: reads the client's frames, writes its own."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer = sock, b""
        self.published: list[tuple[str, str, dict[str, Any], dict[str, Field], bytes]] = []
        self.heartbeats = 0
        self.client_properties: dict[str, Field] = {}

    def _take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def frame(self) -> tuple[int, int, bytes]:
        while True:
            kind, channel, size = struct.unpack(">BHI", self._take(7))
            payload = self._take(size)
            assert self._take(1) == b"\xce"
            if kind != 8:
                return kind, channel, payload
            self.heartbeats += 1

    def method(self) -> tuple[tuple[int, int], bytes]:
        kind, _, payload = self.frame()
        assert kind == 1, f"a method frame, not type {kind}"
        return struct.unpack(">HH", payload[:4]), payload[4:]

    def expect(self, method: tuple[int, int]) -> bytes:
        got, args = self.method()
        assert got == method, f"expected {method}, got {got}"
        return args

    def drain(self, wait_s: float) -> None:
        """Read (and count) the heartbeats the client sent, for `wait_s`."""
        deadline = time.monotonic() + wait_s
        try:
            while time.monotonic() < deadline:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                kind, _, _ = struct.unpack_from(">BHI", self._take(8))  # a heartbeat frame is 8 bytes
                assert kind == 8, f"only heartbeats, not a frame of type {kind}"
                self.heartbeats += 1
        except socket.timeout:
            pass
        finally:
            self.sock.settimeout(None)

    def send(self, *frames: bytes) -> None:
        self.sock.sendall(b"".join(frames))

    def handshake(self, heartbeat: int = 0) -> dict[str, Field]:
        assert self._take(8) == b"AMQP\x00\x00\x09\x01"
        self.send(method_frame(0, (10, 10), b"\x00\x09" + encode_table({"product": "fake"}) + raw.longstr(b"PLAIN")
                               + raw.longstr(b"en_US")))
        args = self.expect((10, 11))
        length = struct.unpack(">I", args[:4])[0]
        self.client_properties = decode_table(args[4:4 + length])  # before the client can see the handshake end
        self.send(method_frame(0, (10, 30), struct.pack(">HIH", 2047, 131072, heartbeat)))
        self.expect((10, 31))
        self.expect((10, 40))
        self.send(method_frame(0, (10, 41), b"\x00"))
        self.expect((20, 10))
        self.send(method_frame(1, (20, 11), struct.pack(">I", 0)))
        return self.client_properties

    def publish(self) -> None:
        """One basic.publish with its content, kept in `published`."""
        args = self.expect((60, 40))
        exchange_len = args[2]
        exchange = args[3:3 + exchange_len].decode()
        rest = args[3 + exchange_len:]
        routing_key = rest[1:1 + rest[0]].decode()
        kind, _, header = self.frame()
        assert kind == 2
        size, properties, headers = decode_content_header(header)
        body = b""
        while len(body) < size:
            kind, _, chunk = self.frame()
            assert kind == 3
            body += chunk
        self.published.append((exchange, routing_key, properties, headers, body))

    def content(self, channel: int, body: bytes, properties: dict[str, Any], headers: dict[str, Any] | None) -> bytes:
        return raw.frame(2, channel, encode_content_header(len(body), properties, headers)) + (raw.frame(3, channel, body) if body else b"")


def ack(tag: int, multiple: bool = False) -> bytes:
    return method_frame(1, (60, 80), struct.pack(">QB", tag, 1 if multiple else 0))


@pytest.fixture
def scripted() -> Any:
    """`scripted(serve, **kwargs)`: a RawConnection opened to a broker running `serve(broker)`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    errors: list[BaseException] = []
    threads: list[threading.Thread] = []
    opened: list[RawConnection] = []
    brokers: list[Broker] = []

    def start(serve: Callable[[Broker], None], heartbeat: int = 0, **kwargs: Any) -> RawConnection:
        def run() -> None:
            sock, _ = listener.accept()
            broker = Broker(sock)
            brokers.append(broker)
            try:
                broker.handshake(heartbeat)
                serve(broker)
            except EOFError:
                pass
            except BaseException as exc:  # said by the test, not lost in the thread
                errors.append(exc)
            finally:
                time.sleep(0.05)
                sock.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        connection = RawConnection(f"amqp://guest:guest@127.0.0.1:{port}/", bound_s=kwargs.pop("bound_s", 2.0), **kwargs)
        connection.open()
        opened.append(connection)
        return connection

    start.brokers = brokers  # type: ignore[attr-defined]
    yield start
    for connection in opened:
        connection.abort()
    for thread in threads:
        thread.join(5)
    listener.close()
    assert not errors, errors


def test_the_client_says_who_it_is_and_what_it_can_do(scripted) -> None:
    connection = scripted(lambda broker: None, connection_name="acemq-interop probe (publisher)")
    (broker,) = scripted.brokers
    assert connection.local_address is not None and connection.local_address.startswith("127.0.0.1:")
    props = broker.client_properties
    assert props["connection_name"] == Field("S", b"acemq-interop probe (publisher)")
    capabilities = props["capabilities"].value
    assert capabilities["connection.blocked"] == Field("t", True) and capabilities["publisher_confirms"] == Field("t", True)


def test_a_publish_is_confirmed_with_its_typed_headers_and_a_return_says_unroutable(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.expect((85, 10))
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        broker.send(ack(1))
        broker.publish()  # unroutable: returned, then acked
        broker.send(method_frame(1, (60, 50), struct.pack(">H", 312) + shortstr("NO_ROUTE") + shortstr("") + shortstr("nowhere")),
                    broker.content(1, b"{}", {"message_id": "m-2"}, {"x": "y"}), ack(2))
        broker.publish()
        broker.send(ack(3, multiple=True))
        broker.expect((10, 50))
        broker.send(method_frame(0, (10, 51)))

    connection = scripted(serve)
    headers = {"x-byte": Typed("b", -7), "x-double": Typed("d", 0.25), "x-bytes": Typed("x", "hi"), "x-text": "été",
               "x-table": {"n": Typed("l", 1)}}
    big = b"z" * 300_000  # over the frame size: three body frames
    assert connection.publish("", "q", b'{"n": 1}', {"message_id": "m-1", "reply_to": ""}, headers) is True
    assert connection.publish("", "nowhere", b"{}", {"message_id": "m-2"}, None) is False
    assert connection.publish("x", "k", big, {}, None, mandatory=False) is True
    connection.close()
    (broker,) = scripted.brokers
    first, second, third = broker.published
    assert first[:3] == ("", "q", {"message_id": "m-1", "reply_to": ""}) and first[4] == b'{"n": 1}'
    assert first[3] == {"x-byte": Field("b", -7), "x-double": Field("d", 0.25), "x-bytes": Field("x", b"hi"),
                        "x-text": Field("S", "été".encode()), "x-table": Field("F", {"n": Field("l", 1)})}
    assert second[3] == {} and third[:2] == ("x", "k") and third[4] == big


def test_a_value_the_codec_cannot_write_is_refused_before_anything_is_sent(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.expect((85, 10))  # the first frame after the handshake is the good publish's
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        broker.send(ack(1))

    connection = scripted(serve)
    with pytest.raises(raw.CodecError):
        connection.publish("", "q", b"", {}, {"x": Typed("b", 300)})
    with pytest.raises(raw.CodecError):
        connection.publish("", "q" * 256, b"", {}, None)
    assert connection.publish("", "q", b"", {}, None) is True
    assert scripted.brokers[0].published[0][1] == "q"


def test_a_publish_blocked_longer_than_allowed_ends_with_blocked(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.expect((85, 10))
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        broker.send(method_frame(0, (10, 60), shortstr("low on memory")))
        time.sleep(1.0)

    connection = scripted(serve, blocked_s=0.3)
    started = time.monotonic()
    with pytest.raises(Blocked, match=r"blocked its publishes for 0.3s"):
        connection.publish("", "q", b"", {}, None)
    assert 0.3 <= time.monotonic() - started < 1.0


def test_a_publish_unblocked_in_time_is_confirmed(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.expect((85, 10))
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        broker.send(method_frame(0, (10, 60), shortstr("low on memory")))
        time.sleep(0.1)
        broker.send(method_frame(0, (10, 61)), ack(1))

    connection = scripted(serve, blocked_s=1.0)
    assert connection.publish("", "q", b"", {}, None) is True


def test_a_confirm_that_never_comes_is_bounded(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.expect((85, 10))
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        time.sleep(0.6)

    connection = scripted(serve, confirm_bound_s=0.2)
    with pytest.raises(RawAmqpError, match="no confirm of a publish within 0.2s"):
        connection.publish("", "q", b"", {}, None)


def test_a_nack_and_a_closed_channel_or_connection_are_errors_with_the_brokers_words(scripted) -> None:
    def nack(broker: Broker) -> None:
        broker.expect((85, 10))
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        broker.send(method_frame(1, (60, 120), struct.pack(">QB", 1, 0)))

    with pytest.raises(RawAmqpError, match="nacked"):
        scripted(nack).publish("", "q", b"", {}, None)

    def close_channel(broker: Broker) -> None:
        broker.expect((85, 10))
        broker.send(method_frame(1, (85, 11)))
        broker.publish()
        broker.send(method_frame(1, (20, 40), struct.pack(">H", 404) + shortstr("NOT_FOUND - no exchange 'x'")
                                 + struct.pack(">HH", 60, 40)))
        broker.expect((20, 41))

    with pytest.raises(BrokerClosed, match="closed the channel: 404 NOT_FOUND") as closed:
        scripted(close_channel).publish("x", "q", b"", {}, None)
    assert closed.value.channel and closed.value.code == 404

    def close_connection(broker: Broker) -> None:
        broker.expect((60, 70))
        broker.send(method_frame(0, (10, 50), struct.pack(">H", 320) + shortstr("CONNECTION_FORCED - Closed via management plugin")
                                 + struct.pack(">HH", 0, 0)))
        broker.expect((10, 51))

    connection = scripted(close_connection)
    with pytest.raises(BrokerClosed, match="closed the connection: 320 CONNECTION_FORCED") as closed:
        connection.get("q")
    assert not closed.value.channel and not connection.is_open


def test_get_reads_a_message_with_its_typed_headers_and_acks_it(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.expect((60, 70))
        broker.send(method_frame(1, (60, 72), shortstr("")))
        broker.expect((60, 70))
        broker.send(method_frame(1, (60, 71), struct.pack(">QB", 9, 1) + shortstr("") + shortstr("q") + struct.pack(">I", 0)),
                    broker.content(1, b"body", {"message_id": "m"}, {"x-b": Typed("b", -7), "x-d": Typed("d", 0.25)}))
        assert broker.expect((60, 80)) == struct.pack(">QB", 9, 0)

    connection = scripted(serve)
    assert connection.get("q") is None
    message = connection.get("q")
    assert message is not None and message.body == b"body" and message.redelivered and message.delivery_tag == 9
    assert message.properties == {"message_id": "m"} and message.routing_key == "q"
    assert message.headers == {"x-b": Field("b", -7), "x-d": Field("d", 0.25)}


def test_a_consumer_gets_every_delivery_typed_and_sends_heartbeats(scripted) -> None:
    firehose = {"exchange_name": "", "routing_keys": ["c1.q"], "connection": "127.0.0.1:5 -> 127.0.0.1:5672",
                "properties": {"message_id": "m", "headers": {"x-b": Typed("b", -7), "x-d": Typed("d", 0.25)}}}

    def serve(broker: Broker) -> None:
        broker.expect((50, 10))
        broker.send(method_frame(1, (50, 11), shortstr("amq.gen-t") + struct.pack(">II", 0, 0)))
        broker.expect((50, 20))
        broker.send(method_frame(1, (50, 21)))
        broker.expect((60, 20))
        broker.send(method_frame(1, (60, 21), shortstr("ctag")))
        for n in range(3):
            broker.send(method_frame(1, (60, 60), shortstr("ctag") + struct.pack(">QB", n + 1, 0) + shortstr("amq.rabbitmq.trace")
                                     + shortstr("publish.")), broker.content(1, b"x" * n, {}, firehose))
        broker.drain(1.3)  # the client beats meanwhile (every half of its 1 s heartbeat)
        assert broker.heartbeats >= 1
        broker.send(method_frame(0, (8, 0)))  # not a frame the consumer expects

    connection = scripted(serve, heartbeat=1, heartbeat_s=60)
    assert connection.declare_queue("", exclusive=True, auto_delete=True, arguments={"x-queue-type": "classic"}) == "amq.gen-t"
    connection.bind("amq.gen-t", "amq.rabbitmq.trace", "publish.#")
    assert connection.consume("amq.gen-t") == "ctag"
    got = []
    started = time.monotonic()
    while len(got) < 3 and time.monotonic() - started < 2:
        got += list(connection.deliveries(0.1))
    assert [m.body for m in got] == [b"", b"x", b"xx"] and {m.routing_key for m in got} == {"publish."}
    props = got[0].headers["properties"].value
    assert props["headers"].value == {"x-b": Field("b", -7), "x-d": Field("d", 0.25)}
    assert got[0].headers["routing_keys"] == Field("A", [Field("S", b"c1.q")])
    with pytest.raises(RawAmqpError, match="unexpected frame while consuming"):
        while time.monotonic() - started < 5:
            list(connection.deliveries(0.1))


def test_a_refused_connection_is_one_line() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(RawAmqpError, match="AMQP connection to 127.0.0.1 failed"):
        RawConnection(f"amqp://guest:guest@127.0.0.1:{port}/", bound_s=1.0).open()
    with pytest.raises(RawAmqpError, match="not an AMQP URL"):
        RawConnection("http://127.0.0.1/").open()


def test_poll_sees_a_connection_the_broker_closed_meanwhile_without_waiting(scripted) -> None:
    def serve(broker: Broker) -> None:
        broker.send(method_frame(0, (10, 50), struct.pack(">H", 320) + shortstr("CONNECTION_FORCED - Closed via management plugin")
                                 + struct.pack(">HH", 0, 0)))
        broker.expect((10, 51))

    connection = scripted(serve)
    connection.poll()  # nothing yet, or the close: either way at once
    deadline = time.monotonic() + 2
    with pytest.raises(BrokerClosed, match="320 CONNECTION_FORCED"):
        while time.monotonic() < deadline:
            started = time.monotonic()
            connection.poll()
            assert time.monotonic() - started < 0.1, "poll never waits"
            time.sleep(0.01)
    with pytest.raises(RawAmqpError, match="closed"):
        connection.poll()


def _bare_probe(blocked_why: Callable[[], str | None] | None = None) -> Any:
    from acemq_interop.amqp.probe import Probe

    probe = Probe.__new__(Probe)  # the guard alone: no connection
    probe._lost, probe._publisher, probe._blocked_s, probe._blocked_why = None, None, 10.0, blocked_why
    return probe


@pytest.mark.parametrize("error, message", [
    (Blocked(10.0), "probe connection lost: the broker blocked its publishes for 10s (broker alarm: memory since 3s)"),
    (BrokerClosed(404, "NOT_FOUND - no exchange 'x'", True), "probe channel closed by the broker: 404 NOT_FOUND - no exchange 'x'"),
    (BrokerClosed(320, "CONNECTION_FORCED - Closed via management plugin", False),
     "probe connection lost: 320 CONNECTION_FORCED - Closed via management plugin"),
    (RawAmqpError("the broker closed the connection"), "probe connection lost: the broker closed the connection"),
])
def test_a_lost_publisher_is_the_probes_lost_connection_with_the_brokers_words(error: Exception, message: str) -> None:
    from acemq_interop.core.errors import ConnectionLost

    probe = _bare_probe(lambda: "broker alarm: memory since 3s")
    for _ in range(2):  # and every later call says the same
        with pytest.raises(ConnectionLost) as lost:
            with probe._guard():
                raise error
        assert str(lost.value) == message
    assert probe.fault() == message


def test_the_runs_probe_factory_names_the_brokers_condition_and_bounds_a_blocked_publish(monkeypatch) -> None:
    from acemq_interop.amqp import probe as probe_module
    from acemq_interop.broker.conditions import bounded_probe_factory

    made: list[tuple[str, Any]] = []

    def fake_init(self: Any, amqp_url: str, ca_file: str | None = None, blocked_why: Any = None, label: str = "") -> None:
        made.append((amqp_url, ca_file, label))
        self._lost, self._publisher, self._blocked_s, self._blocked_why = None, None, 5.0, blocked_why

    monkeypatch.setattr(probe_module.Probe, "__init__", fake_init)
    seen: list[tuple[float, str]] = []
    factory = bounded_probe_factory(5.0, lambda since, what: seen.append((since, what)) or "broker alarm: disk", "/ca.pem")
    probe = factory("amqp://u:p@h:1/v", "c0007")
    assert made == [("amqp://u:p@h:1/v?blocked_connection_timeout=5", "/ca.pem", "c0007")]
    from acemq_interop.core.errors import ConnectionLost

    with pytest.raises(ConnectionLost, match=r"^probe connection lost: the broker blocked its publishes for 5s \(broker alarm: disk\)$"):
        with probe._guard():
            raise Blocked(5.0)
    assert seen and seen[0][1] == "the probe's connection"
