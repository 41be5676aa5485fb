"""An in-memory world whose answers are valid by the peer protocol's schema, and odd.

`World` holds one seeded random generator for one cell and makes everything that cell talks
to: peer processes (`AdversarialProcess`, driven through the real `PeerClient`, so the
typed client is under test too), the probe (`InMemoryProbe`), the raw probe client
(`InMemoryRawConnection`) and the management API (`StrictManagement`). Every peer line is
generated as a Python value, sent through JSON and back (as on the pipe), and checked against
acemq_interop/schemas/peer-protocol.schema.json, both with the harness's own line validator
and with the whole schema: what the harness is given is always something a peer may write.

The fakes of the broker's side are as strict about argument types as the real clients
(pika's encoders, urllib's quote, the raw client's short strings), so a harness bug that
hands them a None or a number shows up here as it would on a broker.

Time is virtual (`Clock`): the engine's bounded waits (events, counters, probe counts) pass
at once, so every scenario runs in milliseconds.
"""
from __future__ import annotations

import json
import random
import time
import urllib.parse
from concurrent.futures import Future
from dataclasses import dataclass
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, Callable

import jsonschema
import pika
import pika.spec
import pika.validators

from acemq_interop.amqp import raw_client as raw_amqp
from acemq_interop.core.errors import BrokerError, CallNotEnded, PeerError
from acemq_interop.peers.client import PeerClient
from acemq_interop.amqp.codec import Field as TraceField
from acemq_interop.amqp.codec import Typed, encode_content_header
from acemq_interop.amqp.probe import raw_record, record
from acemq_interop.peers.protocol import SCHEMA_PATH, validate_peer_line
from acemq_interop.amqp.transcript import Raw, Tracer

_SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
_FULL = jsonschema.validators.validator_for(_SCHEMA)(_SCHEMA)

OUTCOMES = ("reply", "timeout", "responder_failed", "decode_error", "replies", "timeout_with_partial", "closed")
EVENTS = ("handled", "replied", "reply_failed", "dead_lettered", "unanswerable", "unmatched", "connection_lost")


def check_line(message: dict[str, Any]) -> dict[str, Any]:
    """`message` as it crosses the pipe (JSON out and in), proved valid by the schema."""
    wire = json.loads(json.dumps(message, allow_nan=False))
    problem = validate_peer_line(wire)
    assert problem is None, f"the generator wrote an invalid line ({problem}): {json.dumps(wire)[:400]}"
    errors = list(_FULL.iter_errors(wire))
    assert not errors, f"the generator wrote a line the schema refuses: {errors[0].message}: {json.dumps(wire)[:400]}"
    return wire


class Clock:
    """Virtual time for acemq_interop.run.steps: a wait passes by moving the clock on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class Odd:
    """Odd values from one generator."""

    STRINGS = ("", " ", ".", "*", "0", "-1", "${ns}", "${q.reply_queue}", "amq.gen-", "null", "None", "\u0000",
               "\ud7ff\u00e9\u4e2d", "a.b.c", "..", "reply", "refused", "timeout", "ScenarioFailure: no price",
               "UndeliverableReply: ", "acemq-reply-to", "header", "native", "S", "B", "\n", "%s%%{}")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pool: list[Any] = []  # names and ids seen on the way: collisions make deeper paths

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def remember(self, *values: Any) -> None:
        for value in values:
            if isinstance(value, str) and value and value not in self.pool:
                self.pool.append(value)
                del self.pool[:-200]

    def string(self, short: bool = False, nonempty: bool = False) -> str:
        r = self.rng.random()
        if r < 0.3 and self.pool:
            s = self.rng.choice(self.pool)
        elif r < 0.6:
            s = self.rng.choice(self.STRINGS)
        elif r < 0.7:
            s = "x" * self.rng.choice((255, 256, 1000, 20000)) if not short else "y" * self.rng.randint(1, 200)
        elif r < 0.8:
            s = "".join(chr(self.rng.choice((0x7f, 0xe9, 0x2028, 0x1f600, 0x4e2d, 0x22))) for _ in range(self.rng.randint(1, 20)))
        else:
            s = f"amq.gen-{self.rng.getrandbits(48):x}"
        if short and len(s.encode("utf-8")) > 255:
            s = s[:60]
        if nonempty and not s:
            s = "n"
        return s

    def number(self, integer: bool = False, minimum: int | None = None) -> int | float:
        choices: list[int | float] = [0, 1, 2, 3, 7, 2 ** 31, 2 ** 63 - 1, 2 ** 63, 2 ** 64 + 5, 10 ** 30, 10 ** 300]
        if minimum is None:
            choices += [-1, -(2 ** 63), -(10 ** 30)]
        if not integer:
            choices += [0.5, 1e-300, 1.7e308, 3.0, 123456789.125]
            if minimum is None:
                choices += [-0.0, -2.5]
        return self.rng.choice(choices)

    def json(self, depth: int = 3) -> Any:
        r = self.rng.random()
        if depth <= 0 or r < 0.35:
            return self.rng.choice([None, True, False, self.number(), self.string(), self.string(), ""])
        if r < 0.45:
            return self.deep()
        if r < 0.7:
            return [self.json(depth - 1) for _ in range(self.rng.choice((0, 1, 2, 3, 30)))]
        keys = ["", ".", "*", "0", "outcome", "reply", "seen", "echo", "replies", "_at", "message_id", "answer",
                "unitPrice", "correlationId", "responder", "peer", "n", "sku"]
        return {self.rng.choice(keys) if self.chance(0.7) else self.string(): self.json(depth - 1)
                for _ in range(self.rng.choice((0, 1, 2, 4)))}

    def deep(self) -> Any:
        """A deeply but validly nested value (far below any JSON parser's limit)."""
        value: Any = self.rng.choice([None, "bottom", 1])
        for _ in range(self.rng.randint(20, 200) if self.chance(0.9) else 900):
            value = [value] if self.chance(0.5) else {self.rng.choice(("seen", "echo", "0", "a")): value}
        return value

    def maybe(self, value: Callable[[], Any], p: float = 0.8) -> Any:
        return value() if self.chance(p) else None


class AdversarialProcess:
    """What `PeerClient` needs of a `PeerProcess`, answering every command with valid oddities."""

    def __init__(self, name: str, world: "World") -> None:
        self.manifest = SimpleNamespace(name=name)
        self.world, self.odd, self.rng = world, world.odd, world.rng
        self.minimal = world.minimal  # every answer {"id": N, "ok": true} and nothing more, no events
        self._ids = 0
        self._events: list[dict[str, Any]] = []
        self._counters: dict[str, dict[str, int]] = {}
        self.requests: list[dict[str, Any]] = []  # what it was asked to send: the probe may "see" it
        self.protocol = 3
        hello: dict[str, Any] = {"id": 0, "ok": True, "protocol": 3, "peer": name,
                                 "capabilities": ["request", "respond", "gather", "load", "tls"],
                                 "profiles": ["current", "0.3.0", "0.5.0", "0.7.12"], "mutants": []}
        if self.odd.chance(0.15):
            hello["lacks"] = self.rng.sample(["counters", "events", "dead_lettering"], self.rng.randint(0, 3))
        self.hello = check_line(hello)
        self.lines = 0  # lines generated (each one schema-checked)

    # -- what PeerClient reads ------------------------------------------------------

    fault: str | None = None  # set when it "exits" mid-cell, as PeerProcess._die does
    startup_s = 0.0
    pid = 0

    @property
    def alive(self) -> bool:
        return self.fault is None

    def check_alive(self, bound_s: float = 5.0) -> str | None:
        return self.fault

    def responsive(self, bound_s: float = 5.0) -> bool:
        return self.fault is None

    def stderr_tail(self) -> str:
        return f"{self.manifest.name}: adversarial in-memory peer"

    def capabilities(self) -> set[str]:
        return set(self.hello["capabilities"])

    def event_count(self) -> int:
        return len(self._events)

    def events(self, match: Callable[[dict[str, Any]], bool], since: int = 0) -> list[dict[str, Any]]:
        return [e for e in self._events[since:] if match(e)]

    def wait_events(self, match: Callable[[dict[str, Any]], bool], count: int, bound_s: float, since: int = 0,
                    stop: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        found = self.events(match, since)
        if len(found) < count:
            if self.odd.chance(0.3):  # something comes while the harness waits
                self._emit_events(None, 1)
                found = self.events(match, since)
            if len(found) < count:
                self.world.clock.sleep(bound_s)
        return found

    def send(self, command: dict[str, Any]) -> Future:
        self._ids += 1
        command = {"id": self._ids, **command}
        future: Future = Future()
        future.command = command  # type: ignore[attr-defined]
        if self.fault is None and not self.minimal and self.odd.chance(0.005):
            self.fault = f"peer '{self.manifest.name}' exited (code 3)"
        if self.fault is not None:  # as PeerProcess.send: every command of a dead peer fails at once
            future.set_exception(PeerError(self.fault))
            return future
        self.odd.remember(*(command.get(k) for k in ("name", "queue", "requester", "of", "routing_key", "endpoint")))
        if command["op"] in ("request", "gather"):
            self.requests.append(command)
        self._emit_events(command, self.rng.choice((0, 0, 1, 1, 2, 3)))
        unanswered = 0.06 if command["op"] in ("request", "gather") else 0.01
        if self.minimal or not self.odd.chance(unanswered):
            future.set_result(self._line(self._answer(command)))
        self._emit_events(command, self.rng.choice((0, 0, 0, 1)))
        return future

    def wait(self, future: Future, bound_s: float, abort: Callable[[], str | None] | None = None) -> dict[str, Any]:
        if future.done():
            return future.result()  # raises what a dead peer's command raised
        reason = abort() if abort is not None else None
        if reason is not None:
            raise PeerError(reason)
        self.world.clock.sleep(bound_s)
        command = future.command  # type: ignore[attr-defined]
        raise CallNotEnded(f"peer '{self.manifest.name}' did not answer {command['op']} (id {command['id']}) "
                           f"within {bound_s:.1f}s (it still answers other commands)")

    def call(self, command: dict[str, Any], bound_s: float = 20.0) -> dict[str, Any]:
        return self.wait(self.send(command), bound_s)

    def shutdown(self) -> None:
        pass

    # -- the lines ------------------------------------------------------------------

    def _line(self, message: dict[str, Any]) -> dict[str, Any]:
        self.lines += 1
        return check_line(message)

    def _answer(self, command: dict[str, Any]) -> dict[str, Any]:
        odd, op = self.odd, command["op"]
        answer: dict[str, Any] = {"id": command["id"], "ok": True}
        if self.minimal:
            return answer
        refused = 0.03 if command.get("of") != "acemq-interop.liveness" else 0.5
        if odd.chance(refused):
            answer.update(ok=False, error=odd.string())
            if odd.chance(0.3):  # a refusal may carry any other field as well
                answer["outcome"] = "timeout"
            return answer
        if op == "requester.open":
            if odd.chance(self.world.reply_queue_p):
                answer["reply_queue"] = odd.string() if odd.chance(0.5) else f"amq.gen-{self.rng.getrandbits(64):x}"
                odd.remember(answer["reply_queue"])
        elif op == "counters":
            if odd.chance(0.9):
                answer["counters"] = self._counters_of(str(command.get("of")))
        elif op in ("request", "gather"):
            answer.update(self._outcome(command))
        if odd.chance(0.3):  # fields of other answers, valid by type, odd where they are
            extras: dict[str, Callable[[], Any]] = {
                "error": odd.string, "elapsed_ms": lambda: odd.number(minimum=0), "request_id": odd.string,
                "protocol": lambda: odd.number(integer=True), "capabilities": lambda: [],
                "profiles": lambda: [odd.string()], "mutants": lambda: [], "failure": odd.string,
                "lacks": lambda: ["counters"], "x-unknown": odd.json, "reply_queue": odd.string,
                "counters": lambda: {}, "": odd.json, "event": None,
            }
            for key in self.rng.sample(sorted(extras), self.rng.randint(1, 3)):
                if key == "event":  # an answer never carries `event` (it would be read as one)
                    continue
                if key not in answer and not (key == "counters" and op == "counters"):
                    answer[key] = extras[key]()
        return answer

    def _counters_of(self, name: str) -> dict[str, int]:
        odd = self.odd
        current = self._counters.get(name)
        if current is None or odd.chance(0.3):
            keys = ["answered", "unanswerable", "timed_out", "unmatched", "dead_lettered", "", "x-odd"]
            current = {k: int(odd.number(integer=True, minimum=0)) if odd.chance(0.3) else self.rng.randint(0, 4)
                       for k in self.rng.sample(keys, self.rng.randint(0, len(keys)))}
            self._counters[name] = current
        return dict(current)

    def _echo(self, command: dict[str, Any], request_id: Any) -> Any:
        """A reply body shaped like the echo body, with odd parts (or anything at all)."""
        odd = self.odd
        if odd.chance(0.2):
            return odd.json()
        reply: dict[str, Any] = {}
        for key, make in (("echo", lambda: command.get("body") if odd.chance(0.6) else odd.json()),
                          ("responder", odd.string), ("peer", lambda: self.rng.choice(["a", "b", "probe", odd.string()])),
                          ("correlationId", lambda: odd.maybe(odd.string)), ("seen", lambda: self._seen(request_id, loose=True)),
                          ("answer", lambda: self.rng.choice([1, 2, None, odd.json()])),
                          ("unitPrice", lambda: self.rng.choice([10, 11, 999, odd.number()]))):
            if odd.chance(0.75):
                reply[key] = make()
        return reply

    def _seen(self, request_id: Any, loose: bool = False) -> Any:
        """The `seen` object: schema-typed for an event, anything goes inside a reply body."""
        odd = self.odd
        seen: dict[str, Any] = {
            "message_id": self.rng.choice([request_id, None, odd.string()]) if isinstance(request_id, str) else odd.maybe(odd.string),
            "correlation_id": odd.maybe(odd.string),
            "reply_to": odd.maybe(odd.string),
            "reply_to_source": self.rng.choice(["header", "native", None]),
            "headers": sorted({odd.string() for _ in range(self.rng.choice((0, 1, 3)))}),
            "attempt": int(odd.number(integer=True, minimum=0)),
        }
        if loose:
            for key in list(seen):
                r = self.rng.random()
                if r < 0.1:
                    del seen[key]
                elif r < 0.2:
                    seen[key] = odd.json()
        return seen

    def _outcome(self, command: dict[str, Any]) -> dict[str, Any]:
        odd = self.odd
        gather = command["op"] == "gather"
        weights = {"reply": 1 if gather else 8, "replies": 8 if gather else 1, "timeout": 2, "responder_failed": 2,
                   "decode_error": 1, "timeout_with_partial": 2 if gather else 1, "closed": 1, None: 1}
        outcome = self.rng.choices(list(weights), list(weights.values()))[0]
        request_id = odd.string() if odd.chance(0.3) else f"{self.rng.getrandbits(64):016x}"
        odd.remember(request_id)
        out: dict[str, Any] = {}
        if outcome is not None:
            out["outcome"] = outcome
        if odd.chance(0.85):
            out["request_id"] = request_id
        if odd.chance(0.85):
            out["elapsed_ms"] = odd.number(minimum=0)
        if outcome == "reply" or (outcome is None and odd.chance(0.3)):
            out["reply"] = self._echo(command, request_id)
        if outcome in ("replies", "timeout_with_partial") or odd.chance(0.1):
            count = self.rng.choice((0, 1, 2, 3, 50))
            out["replies"] = [self._echo(command, request_id) for _ in range(count)]
        if outcome == "responder_failed" or odd.chance(0.1):
            out["failure"] = odd.string()
        if outcome == "decode_error" or odd.chance(0.1):
            out["error"] = odd.json() if odd.chance(0.3) else odd.string()  # `error` is a string only when ok is false
            if not isinstance(out["error"], str):
                out["error"] = str(out["error"])
        return out

    def _emit_events(self, command: dict[str, Any] | None, n: int) -> None:
        for _ in range(0 if self.minimal else n):
            event = self._event(command)
            if event is not None:
                wire = self._line(event)
                wire["_at"] = self.world.clock.now  # as PeerProcess._event stamps it
                self._events.append(wire)

    def _event(self, command: dict[str, Any] | None) -> dict[str, Any] | None:
        odd, rng = self.odd, self.rng
        kind = rng.choices(EVENTS, (4, 3, 2, 2, 2, 3, 0.15))[0]
        named = [command.get(k) for k in ("name", "requester", "of")] if command else []
        names = [n for n in named if isinstance(n, str) and n] or [odd.string(nonempty=True)]
        name = rng.choice(names) if odd.chance(0.8) else odd.string(nonempty=True)
        event: dict[str, Any] = {"event": kind}
        side = "requester" if kind == "unmatched" else rng.choice(["requester", "responder"]) if kind == "connection_lost" else "responder"
        event[side] = name
        if odd.chance(0.1):
            event["requester" if side == "responder" else "responder"] = odd.string(nonempty=True)
        ids = [c.get("id") for c in self.requests[-3:]] + [odd.string(), None]
        message_id = rng.choice(ids + [odd.json()])
        if kind == "handled":
            event.update(message_id=message_id, attempt=int(odd.number(integer=True, minimum=0)) if odd.chance(0.3) else rng.randint(0, 4),
                         seen=self._seen(message_id))
        elif kind == "replied":
            event.update(message_id=message_id, failure=rng.choice([None, odd.string(), odd.json()]))
        elif kind == "reply_failed":
            event.update(message_id=message_id, error=odd.json())
            if odd.chance(0.7):
                event["attempt"] = rng.randint(0, 5)
        elif kind == "dead_lettered":
            event.update(message_id=message_id, reason=odd.string())
        elif kind == "unanswerable":
            if odd.chance(0.8):
                event["message_id"] = message_id
        elif kind == "unmatched":
            for key in ("correlation_id", "response_message_id"):
                if odd.chance(0.7):
                    event[key] = odd.maybe(odd.string)
        else:
            event["reason"] = odd.string()
        for _ in range(rng.choice((0, 0, 1, 2))):  # fields no event defines
            key = rng.choice(["x-odd", "_at", "id", "ok", "seen", "answer", ""])
            if key == "ok" and "id" in event or key == "id" and "ok" in event:
                continue  # an object with both would also be an answer: not one line of the protocol
            if key == "seen":  # the schema types `seen` on every event: a valid one, where none belongs
                event.setdefault(key, self._seen(message_id))
                continue
            event.setdefault(key, odd.json())
        return event


# -- the broker's side ---------------------------------------------------------------


def _header_value(odd: Odd, depth: int = 2) -> Any:
    """A header value the codec (the probe's encoder) can write, plain or typed."""
    rng = odd.rng
    r = rng.random()
    if depth > 0 and r < 0.1:
        return {odd.string(short=True): _header_value(odd, depth - 1) for _ in range(rng.randint(0, 3))}
    if depth > 0 and r < 0.2:
        return [_header_value(odd, depth - 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([
        odd.string(), odd.string(), None, True, False, rng.randint(-5, 5), 2 ** 40, -(2 ** 63),
        Typed("x", odd.string()), Typed("b", rng.randint(-128, 127)), Typed("l", 2 ** 62), Typed("I", -7),
        Typed("t", 1), Typed("d", 2.5), Typed("B", 200), Typed("u", 60000), Typed("i", 4000000000),
        Decimal("1.25"),
    ])


@dataclass
class _Arrival:
    method: Any
    pika_properties: pika.spec.BasicProperties
    raw: raw_amqp.Message
    body: bytes


class InMemoryProbe:
    """The probe's interface over nothing: every argument checked as pika checks it."""

    def __init__(self, world: "World") -> None:
        self.world, self.odd, self.rng = world, world.odd, world.rng
        self.closed = False
        self.connections = [f"127.0.0.1:{40000 + len(world.probes)}"]

    def fault(self) -> str | None:
        return None

    def close(self) -> None:
        self.closed = True

    def declare_queue(self, name: str, kind: str = "quorum", exclusive: bool = False) -> str:
        pika.validators.require_string(name, "queue")
        pika.spec.Queue.Declare(queue=name, durable=kind == "quorum", exclusive=exclusive).encode()
        if kind != "quorum" and self.odd.chance(0.2):
            name = f"amq.gen-{self.rng.getrandbits(40):x}"
        self.odd.remember(name)
        return name

    def declare_exchange(self, name: str, kind: str) -> None:
        pika.validators.require_string(name, "exchange")
        pika.spec.Exchange.Declare(exchange=name, type=kind).encode()

    def bind(self, queue: str, exchange: str, routing_key: str) -> None:
        pika.validators.require_string(queue, "queue")
        pika.validators.require_string(exchange, "exchange")
        pika.spec.Queue.Bind(queue=queue, exchange=exchange, routing_key=routing_key).encode()

    def depth(self, name: str) -> tuple[int, int] | None:
        pika.validators.require_string(name, "queue")
        if self.odd.chance(0.2):
            return None
        return self.rng.choice((0, 1, 2, 3, 10 ** 6)), self.rng.choice((0, 1, 2))

    def publish(self, exchange: str, routing_key: str, body: bytes, properties: dict[str, Any],
                headers: dict[str, Any], mandatory: bool = True) -> bool:
        from acemq_interop.amqp.codec import encode_content_header, header_value, shortstr

        # As Probe.publish builds it, then as the raw client encodes it on the wire.
        typed = {k: header_value(v) for k, v in headers.items()} or None
        assert isinstance(body, bytes), f"the probe publishes bytes, not {type(body).__name__}"
        shortstr(exchange), shortstr(routing_key)
        encode_content_header(len(body), properties, typed)
        self.odd.remember(properties.get("message_id"))
        return self.odd.chance(0.85)

    def direct_request(self, routing_key: str, body: bytes, properties: dict[str, Any], headers: dict[str, Any],
                       gone: bool = False) -> int:
        # As Probe.direct_request builds it on pika's channel.
        from acemq_interop.amqp.codec import header_value

        assert isinstance(body, bytes), f"the probe publishes bytes, not {type(body).__name__}"
        pika.validators.require_string(routing_key, "routing_key")
        typed = {k: header_value(v) for k, v in headers.items()} or None
        pika.spec.BasicProperties(headers=typed, **{**properties, "reply_to": "amq.rabbitmq.reply-to"}).encode()
        self.odd.remember(properties.get("message_id"))
        return 2

    def direct_replies(self, number: int, bound_s: float) -> list[dict[str, Any]]:
        self.world.clock.sleep(bound_s)
        arrivals = [self.world.arrival() for _ in range(self.rng.choice((0, 1, 1, 3)))]
        return [record(a.method, a.pika_properties, a.body) for a in arrivals]

    def get(self, queue: str, bound_s: float) -> dict[str, Any] | None:
        pika.validators.require_string(queue, "queue")
        pika.spec.Basic.Get(queue=queue).encode()
        if self.odd.chance(0.15):
            self.world.clock.sleep(bound_s)
            return None
        arrival = self.world.arrival()
        return record(arrival.method, arrival.pika_properties, arrival.body)


class InMemoryRawConnection:
    """raw_amqp.RawConnection's interface: messages decoded from bytes pika encoded."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.local_address = "127.0.0.1:50000"

    def open(self) -> None:
        if self.world.odd.chance(0.02):
            raise raw_amqp.RawAmqpError("AMQP connection to in-memory failed: refused on purpose")

    def close(self) -> None:
        pass

    def get_within(self, queue: str, bound_s: float, poll_s: float = 0.02) -> raw_amqp.Message | None:
        raw_amqp.shortstr(queue)  # as RawConnection.get writes the queue name
        if self.world.odd.chance(0.15):
            self.world.clock.sleep(bound_s)
            return None
        return self.world.arrival().raw


class StrictManagement:
    """The management API's interface, quoting names as the real one does (urllib refuses a
    None), answering odd but well-typed facts."""

    def __init__(self, world: "World") -> None:
        self.world, self.odd, self.rng = world, world.odd, world.rng

    @staticmethod
    def _q(name: str) -> str:
        return urllib.parse.quote(name, safe="")

    def queue(self, vhost: str, name: str) -> dict[str, Any] | None:
        path = f"/api/queues/{self._q(vhost)}/{self._q(name)}"
        if not name:
            # The real API answers GET /api/queues/VHOST/ with the list of every queue, and
            # Management.queue would call .get on a list.
            raise AssertionError(f"the harness asked the management API for {path}: a queue with no name")
        if self.odd.chance(0.3):
            return None
        odd = self.odd
        return {"name": name, "type": self.rng.choice(["classic", "quorum", "stream", None]),
                "durable": self.rng.choice([True, False, None]), "exclusive": self.rng.choice([True, False, None]),
                "auto_delete": self.rng.choice([True, False, None]),
                "arguments": self.rng.choice([{}, {"x-queue-type": "classic"}, {"x-queue-type": "quorum"}, {"x": odd.json()}]),
                "consumers": self.rng.choice([0, 1, None])}

    def queues(self, vhost: str) -> list[dict[str, Any]]:
        self._q(vhost)
        return [{"name": n} for n in self.odd.pool[-5:]] if self.odd.chance(0.3) else []

    def exchanges(self, vhost: str) -> list[dict[str, Any]]:
        self._q(vhost)
        return []

    def connections(self, vhost: str, bound_s: float = 10.0) -> list[dict[str, Any]]:
        # A broker whose API does not show this user the vhost's connections: the scenarios
        # that end a role's connection (RR-20) are SKIPs saying why, never a harness error.
        raise BrokerError(f"management API GET /api/vhosts/{self._q(vhost)}/connections: HTTP 401 Not_Authorized")

    def delete_queue(self, vhost: str, name: str) -> None:
        self._q(vhost), self._q(name)

    def delete_exchange(self, vhost: str, name: str) -> None:
        self._q(vhost), self._q(name)


class InMemoryTracer(Tracer):
    """The run's firehose tracer, never started: at a cell's end it files a few firehose
    entries naming the cell's queues and the reply queues its peers named, then the real
    `take` (and `transcript`, for a kept cell) reads them."""

    def __init__(self, world: "World") -> None:
        super().__init__("amqp://in-memory/", None, "v", log=lambda *_: None)
        self.world = world

    def take(self, ns: str, reply_queues: Any, keep: bool, want: bool = False) -> list[Raw]:
        reply_queues = list(reply_queues)
        odd, rng = self.world.odd, self.world.rng

        def s(text: Any) -> TraceField:
            return TraceField("S", str(text).encode("utf-8"))
        for _ in range(rng.randint(0, 4)):
            name = rng.choice([f"{ns}.requests", *reply_queues, *odd.pool[-5:]] or [ns])
            props = {"reply_to": s(rng.choice(reply_queues or [odd.string()])), "message_id": s(odd.string(short=True)),
                     "headers": TraceField("F", {"acemq-reply-to": s(odd.string()), "x": TraceField("l", 5)})}
            headers = {"exchange_name": s(rng.choice(["", f"{ns}.x"])), "routing_keys": TraceField("A", [s(name)]),
                       "routed_queues": TraceField("A", [s(name)]), "connection": s(odd.string(short=True)),
                       "properties": TraceField("F", props), "redelivered": TraceField("t", False)}
            raw = Raw(at=self.world.clock.now, routing_key=rng.choice(["publish.", "deliver."]) + name, headers=headers,
                      body=odd.string().encode("utf-8"))
            with self._lock:
                self.received += 1
                self._file(raw)
        if odd.chance(0.1):  # the tracer's connection lost while the cell ran: its transcript has a hole
            with self._lock:
                self.gaps.append([time.monotonic(), None if odd.chance(0.5) else time.monotonic()])
        return super().take(ns, reply_queues, keep, want)


class World:
    """Everything one cell talks to, from one seeded generator."""

    def __init__(self, seed: str, clock: Clock, minimal: bool = False, reply_queue_p: float = 0.7) -> None:
        self.minimal = minimal  # peers answering only what the schema requires
        self.reply_queue_p = reply_queue_p  # how often requester.open names its reply queue
        self.rng = random.Random(seed)
        self.odd = Odd(self.rng)
        self.clock = clock
        self.processes: dict[str, AdversarialProcess] = {}
        self.probes: list[InMemoryProbe] = []

    def peer(self, name: str) -> PeerClient:
        process = self.processes[name] = AdversarialProcess(name, self)
        return PeerClient(process, op_bound_s=1.0)  # type: ignore[arg-type]

    def probe(self, url: str, label: str = "") -> InMemoryProbe:
        if self.odd.chance(0.01):
            raise BrokerError("probe cannot connect to in-memory: refused on purpose")
        probe = InMemoryProbe(self)
        self.probes.append(probe)
        return probe

    def tracer(self) -> InMemoryTracer:
        return InMemoryTracer(self)

    def management(self) -> StrictManagement:
        return StrictManagement(self)

    def raw_connection(self, *args: Any, **kwargs: Any) -> InMemoryRawConnection:
        return InMemoryRawConnection(self)

    @property
    def lines(self) -> int:
        return sum(p.lines for p in self.processes.values())

    def arrival(self) -> _Arrival:
        """One message as a broker would hand it over: properties and headers encoded by
        pika, decoded by pika (the probe) and by the raw client (wire types)."""
        odd, rng = self.odd, self.rng
        sent = [c for p in self.processes.values() for c in p.requests[-4:]]
        ids = [f"{rng.getrandbits(32):x}", None, "", odd.string(short=True)] + [odd.string(short=True) for _ in sent[:1]]
        properties: dict[str, Any] = {}
        for key in ("message_id", "correlation_id", "reply_to", "content_type", "type"):
            if odd.chance(0.8):
                properties[key] = rng.choice(ids + ([odd.string(short=True)] if key != "content_type" else ["application/json"]))
        headers: dict[str, Any] | None = None
        if odd.chance(0.85):
            keys = ["acemq-reply-to", "responseMessageId", "acemq-error", "acemq-dead-letter-reason", "acemq-attempt",
                    "x-long", "x-int", "x-custom", "", "."]
            headers = {k: _header_value(odd) for k in rng.sample(keys, rng.randint(0, len(keys)))}
        r = rng.random()
        if r < 0.5:
            body = json.dumps(rng.choice([sent[-1].get("body") if sent else None, odd.json()]), allow_nan=False).encode()
        elif r < 0.7:
            body = b""
        elif r < 0.85:
            body = b"\xff\xfe not json"
        else:
            body = odd.string().encode("utf-8")
        payload = encode_content_header(len(body), properties, headers)  # as a client writes it
        decoded = pika.spec.BasicProperties()
        decoded.decode(payload[12:])  # as the probe's pika reads it
        size, raw_props, raw_headers = raw_amqp.decode_content_header(payload)  # and the raw client
        exchange, routing_key = rng.choice(["", "x", odd.string(short=True)]), rng.choice(["", odd.string(short=True)])
        redelivered = odd.chance(0.2)
        method = pika.spec.Basic.GetOk(delivery_tag=1, redelivered=redelivered, exchange=exchange,
                                       routing_key=routing_key, message_count=0)
        raw = raw_amqp.Message(raw_props, raw_headers, body, 1, redelivered, exchange, routing_key, 0)
        raw_record(raw)  # both decoders read it (a record this harness could not make is not a test)
        return _Arrival(method, decoded, raw, body)
