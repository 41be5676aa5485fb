"""The Python reference peer: the acemq binding behind the JSON-lines peer protocol.

Run from the repository root: ``python -m reference_impl.peer``. Commands are
read from stdin, each handled on its own thread; answers and events go to
stdout one line at a time under a lock; the log goes to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Optional, TextIO

import pika

from acemq import (
    MUTANT_NAMES,
    PROFILES,
    Binding,
    ReplyDecodeError,
    Request,
    RequestTimedOut,
    RequestTimeoutError,
    Requester,
    RequesterObserver,
    Responder,
    ResponderFailed,
    ResponderObserver,
    __version__,
)
from acemq.errors import describe
from acemq.mutants import Mutant, Side

PROTOCOL = 1
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
    delay = float(behavior.get("delay_ms") or 0) / 1000.0
    message = str(behavior.get("error_message", "scenario failure"))

    def handle(request: Request) -> Any:
        if delay:
            time.sleep(delay)
        if kind == "fail":
            raise ScenarioFailure(message)
        echo: dict[str, Any] = {"echo": request.body, "responder": responder_name, "peer": PEER}
        if isinstance(request.body, dict) and "correlationId" in request.body:
            echo["correlationId"] = request.body["correlationId"]
        echo["seen"] = seen_of(request)
        return echo

    return handle


class EventsOfRequester(RequesterObserver):
    def __init__(self, out: Output, name: str) -> None:
        self._out, self._name = out, name

    def unmatched(self, correlation_id: Optional[str]) -> None:
        self._out.write({"event": "unmatched", "requester": self._name, "correlation_id": correlation_id})


class EventsOfResponder(ResponderObserver):
    def __init__(self, out: Output, name: str) -> None:
        self._out, self._name = out, name

    def _emit(self, event: str, **fields: Any) -> None:
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


def mutant_for(command: dict[str, Any], *sides: Side) -> Optional[str]:
    """The command's mutant when it acts on this side.

    A peer spec such as ``python+no-strip`` may be used in both roles of a cell;
    a mutant of the other side leaves this one as it is. Unknown names are
    passed on, so the binding refuses them.
    """
    name = command.get("mutant")
    if name is None:
        return None
    try:
        side = Mutant(name).side
    except ValueError:
        return name
    if side in sides:
        return name
    log.info("mutant %s acts on a %s: ignored by %s", name, side.value, command.get("op"))
    return None


def _required(command: dict[str, Any], field: str) -> Any:
    if command.get(field) is None:
        raise BadCommand(f"missing field {field!r}")
    return command[field]


def _seconds(command: dict[str, Any]) -> Optional[float]:
    timeout_ms = command.get("timeout_ms")
    return None if timeout_ms is None else float(timeout_ms) / 1000.0


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


class Peer:
    # Ops that never wait are answered on the reading thread: under a burst of
    # requests a new thread can take a while to be scheduled, and `counters`
    # must not wait for anything.
    _INLINE = frozenset({"counters", "hello"})

    def __init__(self, out: Output) -> None:
        self._out = out
        self._url = os.environ.get("ACEMQ_AMQP_URL", DEFAULT_URL)
        self._lock = threading.Lock()
        self._requesters: dict[str, Requester] = {}
        self._responders: dict[str, Responder] = {}
        self._claimed: set[str] = set()
        self._ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "hello": self.hello,
            "requester.open": self.requester_open,
            "requester.close": self.requester_close,
            "request": self.request,
            "gather": self.gather,
            "responder.start": self.responder_start,
            "responder.stop": self.responder_stop,
            "counters": self.counters,
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

    # -- ops --------------------------------------------------------------

    def hello(self, command: dict[str, Any]) -> dict[str, Any]:
        protocol = command.get("protocol", PROTOCOL)
        if protocol != PROTOCOL:
            raise BadCommand(f"this peer speaks protocol {PROTOCOL}, not {protocol}")
        if command.get("amqp_url"):
            self._url = command["amqp_url"]
        return {
            "protocol": PROTOCOL,
            "peer": PEER,
            "language": "Python",
            "binding": f"acemq-python {__version__}",
            "client": f"pika {pika.__version__}",
            "profiles": list(PROFILES),
            "mutants": list(MUTANT_NAMES),
            "capabilities": ["request", "respond", "gather"],
        }

    def requester_open(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "name")
        self._claim(name)
        try:
            requester = Requester.open(
                self._url,
                profile=command.get("profile"),
                mutant=mutant_for(command, Side.REQUESTER, Side.GATHERER),
                observer=EventsOfRequester(self._out, name),
                name=f"requester-{name}",
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
        self._release(name)
        return {}

    def request(self, command: dict[str, Any]) -> dict[str, Any]:
        requester = self._requester(_required(command, "requester"))
        if "body" not in command:
            raise BadCommand("missing field 'body'")
        started = time.monotonic()
        pending = requester.send(
            command.get("exchange") or "",
            _required(command, "routing_key"),
            command["body"],
            timeout=_seconds(command),
            headers=command.get("headers"),
            message_id=command.get("message_id"),
            correlation_id=command.get("correlation_id"),
        )
        answer: dict[str, Any] = {"request_id": pending.request_id}
        try:
            answer.update(outcome="reply", reply=pending.result())
        except RequestTimedOut:
            answer.update(outcome="timeout")
        except ResponderFailed as exc:
            answer.update(outcome="responder_failed", failure=exc.failure)
        except ReplyDecodeError as exc:
            answer.update(outcome="decode_error", error=exc.reason)
        answer["elapsed_ms"] = _elapsed_ms(started)
        return answer

    def gather(self, command: dict[str, Any]) -> dict[str, Any]:
        requester = self._requester(_required(command, "requester"))
        mode = command.get("mode", "multi")
        if mode == "multi":
            target = {"endpoint": _required(command, "endpoint")}
        elif mode == "publish":
            target = {"exchange": _required(command, "exchange")}
        else:
            raise BadCommand(f"unknown gather mode {mode!r}")
        started = time.monotonic()
        pending = requester.begin_gather(
            command.get("body"),
            **target,
            expected_reply_count=command.get("expected_reply_count"),
            timeout=_seconds(command),
            correlation_id=command.get("correlation_id"),
            message_type=command.get("type"),
        )
        answer: dict[str, Any] = {"request_id": pending.request_id}
        try:
            answer.update(outcome="replies", replies=pending.result())
        except RequestTimeoutError as exc:
            answer.update(outcome="timeout_with_partial", replies=exc.partial_replies)
        answer["elapsed_ms"] = _elapsed_ms(started)
        return answer

    def responder_start(self, command: dict[str, Any]) -> dict[str, Any]:
        name = _required(command, "name")
        bind = command.get("bind")
        handler = make_handler(name, command.get("behavior") or {"reply": "echo"})
        self._claim(name)
        try:
            responder = Responder.start(
                self._url,
                _required(command, "queue"),
                handler,
                bind=Binding(bind["exchange"], bind.get("routing_key") or "") if bind else None,
                max_attempts=int(command.get("max_attempts") or 3),
                profile=command.get("profile"),
                mutant=mutant_for(command, Side.RESPONDER),
                observer=EventsOfResponder(self._out, name),
                name=f"responder-{name}",
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
        if responder is not None:
            return {"counters": {"answered": responder.answered.value, "unanswerable": responder.unanswerable.value}}
        raise BadCommand(f"no requester or responder named {name!r}")

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
