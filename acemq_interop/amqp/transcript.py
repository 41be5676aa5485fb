"""The broker's own transcript of a cell: every publish and delivery of its namespace.

Which firehose, and why: RabbitMQ's built-in firehose (the `amq.rabbitmq.trace` topic
exchange of each vhost), switched on with the management API (`PUT /api/vhosts/VHOST`
with `{"tracing": true}`, what `rabbitmqctl trace_on -p VHOST` does), and read over AMQP by
one consumer per run. We chose it over
  - `rabbitmqctl trace_on`: it needs rabbitmqctl on this machine and the node's name and
    Erlang cookie, which we know only for the private node, not for an existing broker;
  - the rabbitmq_tracing plugin: it has to be enabled on the node (a restart of plugins on
    an existing broker), writes its log to the node's disk, lags behind, and its JSON log
    renders header values without their AMQP field types.
The management API is already what the harness needs of every broker (it makes the run's
vhost there), so the firehose works wherever a run does, private node or not. The firehose
message keeps the original properties as a typed table; the tracer reads it with the raw
client (raw_client.py), whose codec (codec.py) keeps the field type of every value, so a
transcript tells a header sent as `x` (bytes) from one sent as `S` (long string), and shows
a `b` of -7 as -7 and a `d` of 0.25 as 0.25.

Cheap when cells pass: the tracer thread only appends what arrives to a buffer; a cell takes
its own entries at its end, and they are decoded into the transcript only when the cell is
kept (a non-PASS cell, or every cell with `--transcripts all`).

Only the cell's own namespace is kept: a queue, exchange or routing key starting with the
cell's `ns.` prefix, or a server-named reply queue (`amq.gen-...`) the cell's requesters
named (their `requester.open` answers, and any reply address a message of the cell carried).
No user name, password or URL is recorded: a participant is named by what the cell knows of
it (the probe, a peer's requester or responder) or as `connection N`.

Who published what: the firehose names each message's connection by its two ends
(`CLIENT_IP:PORT -> SERVER_IP:PORT`). The probe's connections are the probe's by their own
addresses, which the probe keeps (`Probe.connections`), never by what a message carries (a
responder dead-lettering a probe's request keeps its message_id, RR-11); a peer's connection
is named by a queue it consumed from (its responder's request queue, its requester's reply
queue) or by the reply queue a request of it names. Where a NAT or a proxy stands between the
harness and the broker, the broker sees other addresses than the probe's own: its publishes
are then shown as `connection N`, which the wire checks never judge.
"""
from __future__ import annotations

import functools

import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable

from .codec import Field, shown
from .raw_client import RawConnection, client_end

MODES = ("failed", "all", "none")
TRACE_EXCHANGE = "amq.rabbitmq.trace"
BODY_LIMIT = 4000  # characters of a body kept in a transcript
STALE_S = 300.0  # entries no cell claimed (late copies of passed cells) are dropped after this long
SWEEP_S = 30.0  # how often that is looked at
SETTLE_S = 0.3  # a kept cell waits this long for the firehose's last messages
PROBE = "probe"
CONNECT_BOUND_S = 10.0  # the tracer's connect, handshake and declares
HEARTBEAT_S = 60  # the tracer's connection lives for the run
POLL_S = 0.1  # how often the tracer's thread looks whether it is to stop


def plain(value: Any) -> Any:
    """A firehose header value without its type (for exchange names, routing keys...)."""
    if isinstance(value, Field):
        return plain(value.value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def typed(value: Any) -> Any:
    """A header value as JSON that keeps its AMQP type: `{"type": "S", "value": "..."}`."""
    if isinstance(value, Field):
        return shown(value)
    return {"type": "?", "value": plain(value)}


# -- the tracer ---------------------------------------------------------------------


@dataclass
class Raw:
    """One firehose message as it arrived: decoded lazily, only for kept cells."""

    at: float  # time.monotonic() when the tracer got it
    routing_key: str  # publish.EXCHANGE or deliver.QUEUE
    headers: dict[str, Any]
    body: bytes
    _names: frozenset[str] | None = None
    seq: int = 0  # arrival order
    taken: bool = False

    def names(self) -> frozenset[str]:
        """Exchange, routing keys, queues: what ties the message to a cell (computed once)."""
        if self._names is None:
            self._names = self._find_names()
        return self._names

    def _find_names(self) -> frozenset[str]:
        h = self.headers
        found = {plain(h.get("exchange_name") or ""), *[plain(k) for k in plain_list(h.get("routing_keys"))],
                 *[plain(q) for q in plain_list(h.get("routed_queues"))]}
        if self.routing_key.startswith("deliver."):
            found.add(self.routing_key[len("deliver."):])
        return frozenset(n for n in found if n)

    def reply_addresses(self) -> set[str]:
        props = self.headers.get("properties")
        props = props.value if isinstance(props, Field) else (props or {})
        found = set()
        reply_to = plain(props.get("reply_to")) if isinstance(props, dict) else None
        if reply_to:
            found.add(reply_to)
        headers = plain(props.get("headers")) if isinstance(props, dict) else None
        for key, value in (headers or {}).items():
            if "reply-to" in key and isinstance(value, str) and value:
                found.add(value)
        return found


def plain_list(value: Any) -> list[Any]:
    value = value.value if isinstance(value, Field) else value
    return list(value) if isinstance(value, list) else []


class Tracer:
    """One consumer of the vhost's firehose for a whole run, on a thread of its own."""

    def __init__(self, amqp_url: str, management: Any, vhost: str, log: Any = print, ca_file: str | None = None,
                 amqp_urls: list[str] | None = None):
        self._url, self._management, self._vhost, self._log = amqp_url, management, vhost, log
        # A cluster's every node: the firehose is a node's own (switched on at each), and a
        # tracer whose node goes down reconnects to the next one.
        self._urls = list(amqp_urls or [amqp_url])
        self._ca_file = ca_file  # a TLS run: the tracer verifies the broker against the run's CA too
        self._keys: dict[str, list[Raw]] = {}  # key (cell ns or server-named queue) -> entries naming it
        self._swept = time.monotonic()
        self.take_s = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._failed: str | None = None
        self._reason: str | None = None  # why the last reconnect failed
        # [lost, back] (monotonic; back None while it lasts): times with no firehose consumer.
        self.gaps: list[list[float | None]] = []
        self._thread = threading.Thread(target=self._consume, name="acemq-interop-tracer", daemon=True)
        self.received = 0

    # The management API's vhost `tracing` flag is the firehose switch (trace_on).
    def start(self) -> "Tracer | None":
        try:
            for node in self._management.at_each_node():
                node.set_tracing(self._vhost, True)
        except Exception as exc:  # a user without the administrator tag: run on, without transcripts
            self._log(f"transcripts off: the management API would not turn tracing on for {self._vhost}: {exc}")
            return None
        self._thread.start()
        if not self._ready.wait(15.0) or self._failed:
            self._log(f"transcripts off: the firehose consumer did not start: {self._failed or 'no answer in 15s'}")
            self.stop()
            return None
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._log(f"tracer: {self.received} firehose messages, {self.take_s:.2f}s spent sorting them into cells")
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10.0)
        try:
            for node in self._management.at_each_node():
                node.set_tracing(self._vhost, False)
        except Exception:
            pass  # the vhost is deleted right after

    def _connect(self) -> RawConnection:
        """A connection consuming the firehose: an exclusive queue bound to every publish and delivery."""
        connection = RawConnection(self._url, bound_s=CONNECT_BOUND_S, connection_name="acemq-interop tracer",
                                   ca_file=self._ca_file, heartbeat_s=HEARTBEAT_S)
        try:
            connection.open()
            queue = connection.declare_queue("", exclusive=True, auto_delete=True, arguments={"x-queue-type": "classic"})
            connection.bind(queue, TRACE_EXCHANGE, "publish.#")
            connection.bind(queue, TRACE_EXCHANGE, "deliver.#")
            connection.consume(queue, no_ack=True)
        except BaseException:
            connection.close()
            raise
        return connection

    def _consume(self) -> None:
        """Consume until stopped. A lost connection (the broker or an operator closed it) is
        reconnected: what the firehose sent meanwhile is gone with the exclusive queue, so the
        time without a consumer is kept as a gap, and a cell overlapping it says its
        transcript is incomplete (`gap_during`) rather than be judged on a partial one."""
        from .tls import connect_error

        try:
            connection = self._connect()
        except Exception as exc:  # the run goes on without transcripts
            self._failed = connect_error(exc)
            self._ready.set()
            return
        self._ready.set()
        while True:
            try:
                while not self._stop.is_set():
                    for message in connection.deliveries(POLL_S):
                        raw = Raw(time.monotonic(), message.routing_key, message.headers, message.body)
                        with self._lock:
                            self.received += 1
                            self._file(raw)
                return
            except Exception as exc:
                lost_at = time.monotonic()
                with self._lock:
                    self.gaps.append([lost_at, None])
                self._log(f"tracer: its connection was lost ({connect_error(exc)}); reconnecting (cells meanwhile say "
                          "their transcript is incomplete)")
            finally:
                connection.close()
            connection = self._reconnect(lost_at)
            if connection is None:
                return

    def _reconnect(self, lost_at: float) -> RawConnection | None:
        """Retries until connected (the gap ends) or stopped (it stays open), backing off to 2 s."""
        from .tls import connect_error

        wait_s = 0.1
        while not self._stop.wait(wait_s):
            if len(self._urls) > 1:  # a cluster: each node in turn, from the one after the node lost
                self._urls.append(self._urls.pop(0))
                self._url = self._urls[0]
            try:
                connection = self._connect()
            except Exception as exc:
                self._reason = connect_error(exc)
                wait_s = min(wait_s * 2, 2.0)
                continue
            back_at = time.monotonic()
            with self._lock:
                self.gaps[-1][1] = back_at
            self._log(f"tracer: reconnected after {back_at - lost_at:.1f}s")
            return connection
        return None

    def gap_during(self, start: float, end: float) -> str | None:
        """Why the transcript of [start, end] (monotonic) is incomplete, or None: a time the
        tracer had no consumer overlapping it, relative to `start`."""
        with self._lock:
            gaps = [(lost, back) for lost, back in self.gaps if lost <= end and (back is None or back >= start)]
        if not gaps:
            return None
        lost, back = gaps[0]
        when = f"{lost - start:+.1f}s" if lost >= start else "before the cell"
        until = f"back at {back - start:+.1f}s" if back is not None else "not back by the cell's end"
        return f"transcript incomplete: the tracer's connection was lost at {when} ({until})"

    def deliveries(self, ns: str, queue: str, since: float, message_id: str | None = None) -> int:
        """How many messages the broker has delivered from `queue` (a queue of the cell `ns`)
        since `since` (time.monotonic()), of `message_id` when given; without taking them."""
        key = f"deliver.{queue}"
        with self._lock:
            found = [raw for raw in self._keys.get(ns, ()) if raw.routing_key == key and raw.at >= since]
        if message_id is None:
            return len(found)
        return sum(1 for raw in found if _message_id(raw) == message_id)

    def take(self, ns: str, reply_queues: Iterable[str], keep: bool, want: bool = False) -> list[Raw]:
        """Remove the cell's entries from the buffer; returned (after a short settle) when kept.

        Entries are filed on arrival under the keys they name (`c0007` for `c0007.requests`,
        the whole name of a server-named queue), so a cell's take costs its own messages,
        not the run's. Reply addresses a message of the cell carries belong to the cell too
        (a request names amq.gen-X; the reply to amq.gen-X is the cell's).
        """
        if keep:
            time.sleep(SETTLE_S)
        keep = keep or want
        started = time.monotonic()
        todo = [ns, *[q for q in reply_queues if q]]
        seen_keys: set[str] = set()
        mine: dict[int, Raw] = {}
        with self._lock:
            while todo:
                key = todo.pop()
                if key in seen_keys:
                    continue
                seen_keys.add(key)
                for raw in self._keys.pop(key, ()):
                    if raw.taken:
                        continue
                    raw.taken = True
                    mine[raw.seq] = raw
                    todo.extend(a for a in raw.reply_addresses() if a not in seen_keys)
            if started - self._swept > SWEEP_S:
                self._sweep(started)
        self.take_s += time.monotonic() - started
        return [mine[k] for k in sorted(mine)] if keep else []

    def _file(self, raw: Raw) -> None:
        """File an arriving entry under every key it names (with the lock held)."""
        raw.seq = self.received
        for key in {_key(n) for n in raw.names()}:
            self._keys.setdefault(key, []).append(raw)

    def _sweep(self, now: float) -> None:
        """Drop what no cell claimed for a long time (late copies of passed cells' messages)."""
        self._swept = now
        for key in list(self._keys):
            kept = [r for r in self._keys[key] if not r.taken and now - r.at < STALE_S]
            if kept:
                self._keys[key] = kept
            else:
                del self._keys[key]


def _message_id(raw: Raw) -> Any:
    props = raw.headers.get("properties")
    props = props.value if isinstance(props, Field) else (props or {})
    return plain(props.get("message_id")) if isinstance(props, dict) else None


def _key(name: str) -> str:
    """`c0007.requests` -> `c0007`; a server-named queue (`amq.gen-...`) or a name without a dot is its own key."""
    if name.startswith("amq.") or "." not in name:
        return name
    return name.partition(".")[0]


# -- a transcript, as plain data ----------------------------------------------------


def transcript(raws: list[Raw], t0: float, who: dict[str, str], probe_connections: Iterable[str] = (),
               windows: dict[str, list[tuple[float, float, str]]] | None = None) -> list[dict[str, Any]]:
    """The kept entries of a cell as its `transcript`: one record per publish or delivery.

    `probe_connections` are the own addresses (`IP:PORT`) of the probe's connections: the
    firehose names a connection by its client end, so the probe's are known exactly. `who`
    names consumers by queue (a responder's request queue, a requester's reply queue);
    other connections are named from what they consumed, or from the requester's reply
    queue a request of theirs names, so a publish is shown as coming from the peer that
    made it. What a message carries never names the probe: a responder dead-lettering the
    probe's request keeps its message_id (RR-11), and is still the responder; nor does a
    dead-letter copy name its publisher the requester whose address it keeps (RR-11.4).
    `windows` (`consumer_windows`) names a delivery on a queue responders of two peers took
    turns on by the one consuming it at that moment (cell seconds).
    """
    probe = {a for a in (client_end(str(c)) for c in probe_connections) if a}
    connections: dict[str, str] = {}
    for raw in raws:
        conn = plain(raw.headers.get("connection")) or ""
        if conn and conn not in connections and client_end(conn) in probe:
            connections[conn] = PROBE
    for raw in raws:
        conn = plain(raw.headers.get("connection")) or ""
        if raw.routing_key.startswith("deliver.") and conn not in connections:
            queue = raw.routing_key[len("deliver."):]
            if queue in who:
                connections[conn] = who[queue]
            else:
                held = [named for start, stop, named in (windows or {}).get(queue, ()) if start <= raw.at - t0 <= stop]
                if len(set(held)) == 1:
                    connections[conn] = held[0]
    for raw in raws:  # a request naming a requester's reply queue was published by that requester
        conn = plain(raw.headers.get("connection")) or ""
        if raw.routing_key.startswith("publish.") and conn not in connections and not _dead_letter(raw):
            named = [who[a] for a in raw.reply_addresses() if who.get(a, "").endswith("(requester)")]
            if named:
                connections[conn] = named[0]
    records = []
    for number, raw in enumerate(raws):
        h = raw.headers
        conn = plain(h.get("connection")) or ""
        props_field = h.get("properties")
        props = props_field.value if isinstance(props_field, Field) else (props_field or {})
        properties = {k: plain(v) for k, v in props.items() if k != "headers"} if isinstance(props, dict) else {}
        headers = props.get("headers") if isinstance(props, dict) else None
        headers = headers.value if isinstance(headers, Field) else (headers or {})
        publish = raw.routing_key.startswith("publish.")
        body = raw.body.decode("utf-8", errors="replace")
        record: dict[str, Any] = {
            "n": number + 1,
            "t": round(raw.at - t0, 3),
            "event": "publish" if publish else "deliver",
            "who": connections.get(conn) or _anonymous(conn, connections),
            "exchange": plain(h.get("exchange_name")) or "",
            "routing_keys": [plain(k) for k in plain_list(h.get("routing_keys"))],
            "properties": properties,
            "headers": {k: typed(v) for k, v in headers.items()},
            "body": body[:BODY_LIMIT] + ("..." if len(body) > BODY_LIMIT else ""),
            "body_length": len(raw.body),
        }
        if publish:
            record["routed_queues"] = [plain(q) for q in plain_list(h.get("routed_queues"))]
        else:
            record["queue"] = raw.routing_key[len("deliver."):]
            record["redelivered"] = bool(plain(h.get("redelivered")))
        records.append(record)
    return records


def _dead_letter(raw: Raw) -> bool:
    """A responder's dead-letter copy (RR-11): it keeps the caller's address, yet is no request."""
    props = raw.headers.get("properties")
    props = props.value if isinstance(props, Field) else (props or {})
    headers = plain(props.get("headers")) if isinstance(props, dict) else None
    keys = [str(plain(k)) for k in plain_list(raw.headers.get("routing_keys"))]
    return "acemq-dead-letter-reason" in (headers or {}) or bool(keys) and all(k.endswith(".dlq") for k in keys)


def _anonymous(connection: str, known: dict[str, str]) -> str:
    """A connection the cell cannot name: `connection 2` (its address is no one's business)."""
    if not connection:
        return "unknown"
    key = f"~{connection}"
    if key not in known:
        known[key] = f"connection {sum(1 for k in known if k.startswith('~')) + 1}"
    return known[key]


def participants(trace: list[dict[str, Any]], roles: dict[str, Any]) -> tuple[dict[str, str], set[str]]:
    """From a cell's evidence: consumers by queue, and the reply queues.

    The engine's trace notes every command a peer was sent with its answer
    (`responder.start` names the queue, `requester.open` answers with the reply queue) and
    every probe get.
    """
    label = functools.partial(_label, roles)
    who: dict[str, str] = {}
    shared: set[str] = set()
    replies: set[str] = set()
    for step in trace:
        op = step.get("step")
        sent = step.get("sent") or {}
        answer = step.get("answer") or {}
        peer = step.get("peer")
        if op == "responder.start" and sent.get("queue"):
            named = f"{label(peer, ('responder', 'subscribers'))} (responder)"
            if who.get(sent["queue"], named) != named:
                shared.add(sent["queue"])  # two peers' responders took turns on it: a delivery names neither
            who[sent["queue"]] = named
        elif op == "requester.open":
            queue = answer.get("reply_queue")
            if queue:
                who[queue] = f"{label(peer, ('requester', 'gatherer'))} (requester)"
                replies.add(queue)
        elif op == "probe_get" and step.get("queue"):
            who.setdefault(step["queue"], PROBE)
    for queue in shared:
        del who[queue]
    return who, replies


def _label(roles: dict[str, Any], peer: str, sides: tuple[str, ...]) -> str:
    """The spec label (`python+native-only`) of the peer process playing one of these roles."""
    for role, who in roles.items():
        if role in sides:
            for spec in who if isinstance(who, list) else [who]:
                if str(spec).split("@")[0].split("+")[0] == peer:
                    return str(spec)
    return peer


def consumer_windows(trace: list[dict[str, Any]], roles: dict[str, Any]) -> dict[str, list[tuple[float, float, str]]]:
    """When each responder consumed its queue, for the queues responders of two peers took
    turns on (a redeploy): queue -> [(from, to, name)] in cell seconds, from the start command's
    sending (its consumer may take a backlog before it answers) to the stop's answer."""
    started: dict[str, tuple[str, float, str]] = {}  # responder name -> (queue, from, label)
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for step in trace:
        sent = step.get("sent") or {}
        t = float(step.get("t", 0))
        if step.get("step") == "responder.start" and sent.get("queue") and sent.get("name"):
            named = f"{_label(roles, str(step.get('peer')), ('responder', 'subscribers'))} (responder)"
            started[str(sent["name"])] = (str(sent["queue"]), t - float(step.get("rtt_ms") or 0) / 1000, named)
        elif step.get("step") == "responder.stop" and str(sent.get("name")) in started:
            queue, since, named = started.pop(str(sent["name"]))
            spans.setdefault(queue, []).append((since, t, named))
    for queue, since, named in started.values():
        spans.setdefault(queue, []).append((since, float("inf"), named))
    return {q: s for q, s in spans.items() if len({named for _, _, named in s}) > 1}


# -- the hooks the runner and the engine call -----------------------------------------


def start_tracer(mode: str, amqp_url: str, management: Any, vhost: str, log: Any,
                 ca_file: str | None = None, amqp_urls: list[str] | None = None) -> Tracer | None:
    """The run's tracer, or None (`--transcripts none`, or the broker would not trace)."""
    if mode == "none":
        return None
    return Tracer(amqp_url, management, vhost, log, ca_file, amqp_urls).start()


def attach(tracer: Tracer, keep: Any, ns: str, t0: float, result: Any, read: bool = False,
           probe_connections: Iterable[str] = ()) -> list[dict[str, Any]]:
    """At a cell's end: take its entries from the tracer; decode them when the cell keeps them
    (after a short settle, so its last messages are in) or when `read` asks for them anyway
    (the wire checks of every cell: what has arrived, no settle). `probe_connections`: the
    own addresses of the cell's probe connections (Probe.connections, the raw getter's).
    Returns the records."""
    kept = bool(keep(result)) if keep is not None else result.status != "PASS"
    who, replies = participants(result.trace, result.roles)
    raws = tracer.take(ns, replies, kept, want=read)
    records = transcript(raws, t0, who, probe_connections, consumer_windows(result.trace, result.roles)) if raws else []
    if kept:
        result.transcript = records
    return records
