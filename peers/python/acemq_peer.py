"""The Python reference peer: the acemq binding behind the JSON-lines peer protocol.

Run from this folder (peers/python): ``python -m acemq_peer``. Commands are read
from stdin, each handled on its own thread; answers and events go to stdout one
line at a time under a lock; the log goes to stderr. Protocol 5, and 1 to 4 when the
harness asks for them (docs/peer-protocol.md). From protocol 5 each requester and
responder connects under the connection name the harness gives, to its list of nodes, and
recovers by itself after a lost connection (RR-20).

From protocol 4 the harness sends policy values, which acemq_peer_policies sets on the
binding's policies by field name; they reach the binding only through
``acemq._conformance``. ``load`` and the raw responder are in acemq_peer_load.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Optional, TextIO, TypeVar, Union

import pika

from acemq import (
    Binding,
    Broker,
    Brokers,
    ConnectionLost,
    PendingGather,
    PendingRequest,
    ReplyDecodeError,
    Request,
    RequestTimedOut,
    RequestTimeoutError,
    Requester,
    RequesterClosed,
    RequesterObserver,
    Responder,
    ResponderFailed,
    ResponderObserver,
    __version__,
    tls_parameters,
)
from acemq import _conformance as conformance
from acemq.errors import describe
from acemq_peer_load import LoadSpec, RawResponder, binding_load, raw_load
from acemq_peer_policies import UNREACHABLE, PolicyError, knobs, policy_of

# 3: type, the closed outcome, unmatched with both ids; 4: policy values; 5: named connections, recovery
PROTOCOLS = (1, 2, 3, 4, 5)
POLICY_PROTOCOL = 4  # commands carry policy values, not profile and mutant names
RECOVERY_PROTOCOL = 5  # each role's connection_name and amqp_urls; the connection_lost outcome; recovered
PEER = "python"
DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/"

log = logging.getLogger("acemq.peer")


class ScenarioFailure(Exception):
    """The error a `fail` behaviour raises: its text is `ScenarioFailure: {message}`."""


class BadCommand(Exception):
    """A command the peer cannot carry out as given."""


class Output:
    """Line-atomic writes of protocol messages to stdout."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


def seen_of(request: Request) -> dict[str, Any]:
    """What the handler saw, as the echo body and the `handled` event report it."""
    return {
        "message_id": request.message_id,
        "correlation_id": request.correlation_id,
        "reply_to": request.reply_to,
        "reply_to_source": request.reply_to_source,
        "headers": sorted(request.headers),
        "attempt": request.attempt,
    }


def make_handler(responder_name: str, behavior: dict[str, Any]) -> Callable[[Request], Any]:
    """The handler the protocol's `behavior` describes: echo or fail, after an optional delay."""
    kind = behavior.get("reply", "echo")
    if kind not in ("echo", "fail"):
        raise BadCommand(f"unknown behavior.reply {kind!r}")
    if kind == "fail" and behavior.get("error_message") is None:
        raise BadCommand("behavior.error_message is required when reply is fail")
    delay = float(behavior.get("delay_ms") or 0) / 1000.0
    message = str(behavior.get("error_message"))

    def handle(request: Request) -> Any:
        if delay:
            time.sleep(delay)
        if kind == "fail":
            raise ScenarioFailure(message)
        echo: dict[str, Any] = {"echo": request.body, "responder": responder_name, "peer": PEER}
        # Always present: the body's correlationId when it is an object that has one, else null.
        echo["correlationId"] = request.body.get("correlationId") if isinstance(request.body, dict) else None
        echo["seen"] = seen_of(request)
        return echo

    return handle


class EventsOfRequester(RequesterObserver):
    def __init__(self, out: Output, name: str, protocol: int) -> None:
        self._out, self._name, self._protocol = out, name, protocol

    def unmatched(self, correlation_id: Optional[str], response_message_id: Optional[str] = None) -> None:
        self._out.write(
            {
                "event": "unmatched",
                "requester": self._name,
                "correlation_id": correlation_id,
                "response_message_id": response_message_id,
            }
        )

    def connection_lost(self, reason: str) -> None:
        if self._protocol >= 2:  # the event is version 2's
            self._out.write({"event": "connection_lost", "requester": self._name, "reason": reason})

    def recovered(self) -> None:
        if self._protocol >= RECOVERY_PROTOCOL:
            self._out.write({"event": "recovered", "requester": self._name})


class EventsOfResponder(ResponderObserver):
    """A responder's events; with ``events`` false (protocol 4, a load) none per request.
    A lost connection is still told: it is a fault, which the harness must hear of."""

    def __init__(self, out: Output, name: str, protocol: int, events: bool = True) -> None:
        self._out, self._name, self._protocol, self._events = out, name, protocol, events

    def _emit(self, event: str, **fields: Any) -> None:
        if self._events:
            self._out.write({"event": event, "responder": self._name, **fields})

    def handled(self, request: Request) -> None:
        self._emit("handled", message_id=request.message_id, attempt=request.attempt, seen=seen_of(request))

    def replied(self, message_id: Optional[str], failure: Optional[str]) -> None:
        self._emit("replied", message_id=message_id, failure=failure)

    def reply_failed(self, message_id: Optional[str], attempt: int, error: str) -> None:
        self._emit("reply_failed", message_id=message_id, attempt=attempt, error=error)

    def dead_lettered(self, message_id: Optional[str], reason: str) -> None:
        self._emit("dead_lettered", message_id=message_id, reason=reason)

    def unanswerable(self, message_id: Optional[str]) -> None:
        self._emit("unanswerable", message_id=message_id)

    def connection_lost(self, reason: str) -> None:
        if self._protocol >= 2:
            self._out.write({"event": "connection_lost", "responder": self._name, "reason": reason})

    def recovered(self) -> None:
        if self._protocol >= RECOVERY_PROTOCOL:
            self._out.write({"event": "recovered", "responder": self._name})


def _required(command: dict[str, Any], field: str) -> Any:
    if command.get(field) is None:
        raise BadCommand(f"missing field {field!r}")
    return command[field]


def _optional(command: dict[str, Any], field: str, keyword: str, convert: Callable[[Any], Any] = lambda v: v) -> dict[str, Any]:
    """``{keyword: value}`` when the command gives ``field``, else nothing: an absent field is
    left out of the binding call, so the binding's own default applies (protocol 2)."""
    value = command.get(field)
    return {} if value is None else {keyword: convert(value)}


def _seconds(timeout_ms: Any) -> float:
    return float(timeout_ms) / 1000.0


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


E = TypeVar("E", bound=BaseException)
P = TypeVar("P", conformance.RequesterPolicy, conformance.ResponderPolicy)


def found_in(error: BaseException, kind: type[E]) -> Optional[E]:
    """``error`` itself when it is a ``kind`` (a subclass too), else the first ``kind`` it wraps:
    its cause (``raise ... from``), or a member of an exception group. A binding's timeout is
    the timeout outcome whatever carries it, never a refused call. Not the implicit context:
    an error raised while handling a timeout is an error of its own."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        todo.extend(getattr(current, "exceptions", None) or ())  # an ExceptionGroup's members
        if current.__cause__ is not None:
            todo.append(current.__cause__)
    return None


class _Slot:
    """One request or gather command: its requester, and its binding call once sent."""

    __slots__ = ("requester", "pending")

    def __init__(self, requester: str) -> None:
        self.requester = requester
        self.pending: Optional[Union[PendingRequest, PendingGather]] = None


class InFlight:
    """The request and gather commands that have not answered yet, by command id.

    ``requester.close`` answers only once every call the binding ended at the close has
    written its answer (outcome ``closed``), so the harness reads that answer first. A
    call the close left pending does not hold it up, and neither does anything for
    longer than ``bound`` seconds.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._slots: dict[Any, _Slot] = {}

    def begin(self, command_id: Any, requester: str) -> None:
        with self._changed:
            self._slots[command_id] = _Slot(requester)

    def sent(self, command_id: Any, pending: Union[PendingRequest, PendingGather]) -> None:
        with self._changed:
            slot = self._slots.get(command_id)
            if slot is not None:
                slot.pending = pending
            self._changed.notify_all()

    def answered(self, command_id: Any) -> None:
        with self._changed:
            if self._slots.pop(command_id, None) is not None:
                self._changed.notify_all()

    def await_ended(self, requester: str, bound: float = 10.0) -> None:
        """Wait until no call of ``requester`` is still being sent or ended but unanswered."""

        def settled() -> bool:
            return not any(
                slot.requester == requester and (slot.pending is None or slot.pending.done())
                for slot in self._slots.values()
            )

        with self._changed:
            self._changed.wait_for(settled, bound)


class Peer:
    # Ops that never wait are answered on the reading thread: under a burst of
    # requests a new thread can take a while to be scheduled, and `counters`
    # must not wait for anything.
    _INLINE = frozenset({"counters", "hello"})

    def __init__(self, out: Output) -> None:
        self._out = out
        # An AMQP URL, or pika parameters with TLS when hello carries `tls` (the binding takes either).
        self._broker: Broker = os.environ.get("ACEMQ_AMQP_URL", DEFAULT_URL)
        self._tls_ca: Optional[str] = None  # hello's tls: every node of a role's list trusts it
        self._lock = threading.Lock()
        self._protocol = max(PROTOCOLS)  # until hello says otherwise
        self._requesters: dict[str, Requester] = {}
        self._responders: dict[str, Union[Responder, RawResponder]] = {}
        self._claimed: set[str] = set()
        self._in_flight = InFlight()
        self._ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "hello": self.hello,
            "requester.open": self.requester_open,
            "requester.close": self.requester_close,
            "request": self.request,
            "gather": self.gather,
            "responder.start": self.responder_start,
            "responder.stop": self.responder_stop,
            "counters": self.counters,
            "load": self.load,
        }

    # -- dispatch ---------------------------------------------------------

    def dispatch(self, line: str) -> None:
        try:
            command = json.loads(line)
            command_id = command["id"]
            op = command["op"]
        except (ValueError, KeyError, TypeError) as exc:
            log.error("ignored a line that is not a command (%s): %s", exc, line.rstrip())
            return
        if op == "shutdown":
            self.shutdown(command_id)
            return
        if op in self._INLINE:
            self._run(command_id, op, command)
            return
        threading.Thread(target=self._run, args=(command_id, op, command), name=f"cmd-{command_id}", daemon=True).start()

    def _run(self, command_id: Any, op: str, command: dict[str, Any]) -> None:
        handler = self._ops.get(op)
        try:
            if handler is None:
                raise BadCommand(f"unknown op {op!r}")
            answer = {"id": command_id, "ok": True, **handler(command)}
        except Exception as exc:
            log.info("command %s (%s) refused: %s", command_id, op, describe(exc))
            answer = {"id": command_id, "ok": False, "error": describe(exc)}
        self._out.write(answer)
        self._in_flight.answered(command_id)

    # -- ops --------------------------------------------------------------

    def hello(self, command: dict[str, Any]) -> dict[str, Any]:
        offered = command.get("protocols") or [command.get("protocol", 1)]
        spoken = [v for v in offered if v in PROTOCOLS]
        if not spoken:
            raise BadCommand(f"this peer speaks protocols {list(PROTOCOLS)}, not {offered}")
        self._protocol = max(spoken)
        url = command.get("amqp_url") or (self._broker if isinstance(self._broker, str) else None)
        tls = command.get("tls")
        if tls is not None:
            # Every connection (binding and raw) verifies the broker against the run's CA
            # and its name against the URL's host.
            if not isinstance(tls, dict) or not isinstance(tls.get("ca_file"), str):
                raise BadCommand("tls must be {\"ca_file\": \"/path/ca.pem\"}")
            if not url:
                raise BadCommand("tls needs an amqp_url")
            self._broker = tls_parameters(url, tls["ca_file"])
            self._tls_ca = tls["ca_file"]
        elif url:
            self._broker = url
        capabilities = ["request", "respond", "gather"] + (["load"] if self._protocol >= 2 else []) + ["tls"]
        if self._protocol >= POLICY_PROTOCOL:
            offer: dict[str, Any] = {"knobs": knobs(), "unreachable": UNREACHABLE}
        else:  # the binding as it ships: this adapter knows no catalogue name
            offer = {"profiles": ["current"], "mutants": []}
        return {
            "protocol": self._protocol,
            "peer": PEER,
            "language": "Python",
            "binding": f"acemq-python {__version__}",
            "client": f"pika {pika.__version__}",
            **offer,
            "capabilities": capabilities,
        }

    def _policy(self, kind: type[P], command: dict[str, Any]) -> P:
        """The policy a requester.open, responder.start or load opens with: from protocol 4
        the command's ``policy`` values (``profile`` and ``mutant`` are never looked up);
        before it, hello offered ``current`` and no mutant, so the binding as it ships."""
        if self._protocol < POLICY_PROTOCOL:
            if command.get("profile", "current") not in (None, "current") or command.get("mutant") is not None:
                raise BadCommand(f"before protocol {POLICY_PROTOCOL} this peer offers the profile current and no mutant")
            return kind()
        try:
            return policy_of(kind, command.get("policy") or {})
        except PolicyError as exc:
            raise BadCommand(str(exc)) from exc

    def _connection(self, command: dict[str, Any]) -> dict[str, Any]:
        """Where a role connects and under which name: from protocol 5 the command's
        ``amqp_urls`` (in order; absent, hello's URL) and ``connection_name``; before it, the
        run's broker and no name."""
        if self._protocol < RECOVERY_PROTOCOL:
            return {"url": self._broker}
        urls = command.get("amqp_urls")
        if urls is not None and (not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls)):
            raise BadCommand("amqp_urls must be a non-empty list of AMQP URLs")
        name = command.get("connection_name")
        if name is not None and not isinstance(name, str):
            raise BadCommand("connection_name must be a string")
        nodes: Brokers = self._broker
        if urls:
            nodes = [tls_parameters(u, self._tls_ca) if self._tls_ca else u for u in urls]
        return {"url": nodes, "connection_name": name}

    def requester_open(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "name")
        policy = self._policy(conformance.RequesterPolicy, command)
        connection = self._connection(command)
        self._claim(name)
        try:
            requester = conformance.open_requester(
                connection.pop("url"),
                policy,
                observer=EventsOfRequester(self._out, name, self._protocol),
                name=f"requester-{name}",
                **connection,
            )
        except BaseException:
            self._release(name)
            raise
        with self._lock:
            self._requesters[name] = requester
        return {"reply_queue": requester.reply_queue}

    def requester_close(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "name")
        with self._lock:
            requester = self._requesters.pop(name, None)
        if requester is None:
            raise BadCommand(f"no requester named {name!r}")
        requester.close()
        self._in_flight.await_ended(name)
        self._release(name)
        return {}

    def request(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "requester")
        requester = self._requester(name)
        if "body" not in command:
            raise BadCommand("missing field 'body'")
        routing_key = _required(command, "routing_key")
        started = time.monotonic()
        answer: dict[str, Any] = {}
        self._in_flight.begin(command["id"], name)
        try:
            pending = requester.send(
                command.get("exchange") or "",
                routing_key,
                command["body"],
                **_optional(command, "timeout_ms", "timeout", _seconds),
                **_optional(command, "headers", "headers"),
                **_optional(command, "message_id", "message_id"),
                **_optional(command, "correlation_id", "correlation_id"),
                **_optional(command, "type", "message_type"),
            )
            self._in_flight.sent(command["id"], pending)
            answer["request_id"] = pending.request_id
            answer.update(outcome="reply", reply=pending.result())
        except RequesterClosed:
            answer.update(outcome="closed")
        except ConnectionLost as exc:
            answer.update(outcome="connection_lost", reason=exc.reason)
        except ResponderFailed as exc:
            answer.update(outcome="responder_failed", failure=exc.failure)
        except ReplyDecodeError as exc:
            answer.update(outcome="decode_error", error=exc.reason)
        except Exception as exc:
            if found_in(exc, RequestTimedOut) is None:
                raise
            answer.update(outcome="timeout")
        answer["elapsed_ms"] = _elapsed_ms(started)
        return answer

    def gather(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "requester")
        requester = self._requester(name)
        mode = command.get("mode", "multi")
        if mode == "multi":
            target = {"endpoint": _required(command, "endpoint")}
        elif mode == "publish":
            target = {"exchange": _required(command, "exchange")}
        else:
            raise BadCommand(f"unknown gather mode {mode!r}")
        started = time.monotonic()
        answer: dict[str, Any] = {}
        self._in_flight.begin(command["id"], name)
        try:
            pending = requester.begin_gather(
                command.get("body"),
                **target,
                **_optional(command, "expected_reply_count", "expected_reply_count", int),
                **_optional(command, "timeout_ms", "timeout", _seconds),
                **_optional(command, "correlation_id", "correlation_id"),
                **_optional(command, "type", "message_type"),
            )
            self._in_flight.sent(command["id"], pending)
            answer["request_id"] = pending.request_id
            answer.update(outcome="replies", replies=pending.result())
        except RequesterClosed:
            answer.update(outcome="closed")
        except ConnectionLost as exc:
            answer.update(outcome="connection_lost", reason=exc.reason)
        except Exception as exc:
            shortfall = found_in(exc, RequestTimeoutError)
            if shortfall is None:
                raise
            answer.update(outcome="timeout_with_partial", replies=shortfall.partial_replies)
        answer["elapsed_ms"] = _elapsed_ms(started)
        return answer

    def responder_start(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "name")
        queue = _required(command, "queue")
        client = command.get("client", "binding")
        if client not in ("binding", "raw"):
            raise BadCommand(f"unknown client {client!r}: binding or raw")
        if client == "binding":
            bind = command.get("bind")
            handler = make_handler(name, command.get("behavior") or {"reply": "echo"})
            policy = self._policy(conformance.ResponderPolicy, command)
            connection = self._connection(command)
        self._claim(name)
        try:
            if client == "raw":
                responder: Union[Responder, RawResponder] = RawResponder.start(self._broker, queue, name)
            else:
                responder = conformance.start_responder(
                    connection.pop("url"),
                    queue,
                    handler,
                    policy,
                    bind=Binding(bind["exchange"], bind.get("routing_key") or "") if bind else None,
                    **_optional(command, "max_attempts", "max_attempts", int),
                    observer=EventsOfResponder(self._out, name, self._protocol, events=command.get("events") is not False),
                    name=f"responder-{name}",
                    **connection,
                )
        except BaseException:
            self._release(name)
            raise
        with self._lock:
            self._responders[name] = responder
        return {}

    def responder_stop(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "name")
        with self._lock:
            responder = self._responders.pop(name, None)
        if responder is None:
            raise BadCommand(f"no responder named {name!r}")
        responder.stop()
        self._release(name)
        return {}

    def counters(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "of")
        with self._lock:
            requester = self._requesters.get(name)
            responder = self._responders.get(name)
        if requester is not None:
            return {"counters": {"timed_out": requester.timed_out.value, "unmatched": requester.unmatched.value}}
        if isinstance(responder, Responder):
            return {"counters": {"answered": responder.answered.value, "unanswerable": responder.unanswerable.value}}
        if responder is not None:
            return {"counters": {}}  # the raw responder keeps none
        raise BadCommand(f"no requester or responder named {name!r}")

    def load(self, command: dict[str, Any]) -> dict[str, Any]:
        if self._protocol < 2:
            raise BadCommand("load is protocol 2's; this run speaks protocol 1")
        client = command.get("client", "binding")
        spec = LoadSpec.of(command)
        exchange, routing_key = command.get("exchange") or "", _required(command, "routing_key")
        if client == "raw":
            return {"load": raw_load(self._broker, exchange, routing_key, spec)}
        if client != "binding":
            raise BadCommand(f"unknown client {client!r}: binding or raw")
        policy = self._policy(conformance.RequesterPolicy, command)
        requester = conformance.open_requester(self._broker, policy, name=f"load-{command.get('id')}")
        try:
            return {"load": binding_load(requester, exchange, routing_key, spec)}
        finally:
            requester.close()

    def shutdown(self, command_id: Any) -> None:
        self.close_all()
        self._out.write({"id": command_id, "ok": True})
        os._exit(0)

    # -- registry ---------------------------------------------------------

    def _claim(self, name: str) -> None:
        """Reserve a name for a requester or responder being opened."""
        with self._lock:
            if name in self._claimed:
                raise BadCommand(f"the name {name!r} is already in use")
            self._claimed.add(name)

    def _release(self, name: str) -> None:
        with self._lock:
            self._claimed.discard(name)

    def _requester(self, name: str) -> Requester:
        with self._lock:
            requester = self._requesters.get(name)
        if requester is None:
            raise BadCommand(f"no requester named {name!r}")
        return requester

    def close_all(self) -> None:
        with self._lock:
            requesters, self._requesters = list(self._requesters.values()), {}
            responders, self._responders = list(self._responders.values()), {}
        closers = [threading.Thread(target=r.close) for r in requesters]
        closers += [threading.Thread(target=r.stop) for r in responders]
        for closer in closers:
            closer.start()
        for closer in closers:
            closer.join(10)


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("pika").setLevel(logging.WARNING)
    stdout = sys.stdout
    sys.stdout = sys.stderr  # nothing but protocol lines may reach the real stdout
    peer = Peer(Output(stdout))
    for line in sys.stdin:
        if line.strip():
            peer.dispatch(line)
    peer.close_all()
    stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
