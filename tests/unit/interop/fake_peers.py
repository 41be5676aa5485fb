"""An in-memory peer for unit tests of the engine: it implements PeerLink, no process, no broker.

Only pure logic is tested with it (steps, bindings of names, verdicts, cleanup, errors);
every wire behaviour stays tested on a real broker with real peers (tests/broker).
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from acemq_interop.core.errors import PeerError


class FakeBroker:
    """Queues by name, each with the in-memory responder consuming it."""

    def __init__(self) -> None:
        self.responders: dict[str, tuple["FakePeer", str, dict[str, Any]]] = {}


@dataclass
class FakeCall:
    command: dict[str, Any]
    answer: dict[str, Any] | None
    cancelled: bool = False

    def wait(self, bound_s: float, abort: Callable[[], str | None] | None = None) -> dict[str, Any]:
        if self.answer is None:
            raise PeerError(f"peer did not answer {self.command['op']} within {bound_s:.1f}s")
        return self.answer

    def cancel(self) -> None:
        self.cancelled = True


class FakePeer:
    """A binding that behaves per spec, unless told otherwise with `defects`."""

    def __init__(self, name: str, broker: FakeBroker, defects: set[str] | None = None,
                 refuse: set[str] | None = None) -> None:
        self.name = name
        self.broker = broker
        self.defects = defects or set()
        self.refuse = refuse or set()  # ops this peer refuses
        self.requesters: dict[str, str] = {}  # name -> reply queue
        self.responders: dict[str, str] = {}  # name -> queue
        self.counts: dict[str, dict[str, int]] = {}
        self.events: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []  # every command, in order
        self._changed = threading.Condition()
        self.alive = True
        self.stopped = False  # answers commands, but not the liveness check (a FAIL is then an ERROR)

    # -- PeerLink ---------------------------------------------------------------------

    @property
    def fault(self) -> str | None:
        return None if self.alive else f"peer '{self.name}' exited (code 1)"

    def check_alive(self) -> str | None:
        if self.fault is None and self.stopped:
            return f"peer '{self.name}' unresponsive: no answer to counters within 1.0s"
        return self.fault

    def stderr_tail(self) -> str:
        return f"{self.name}: in-memory peer"

    def events_since(self, since: int, match: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        return [e for e in self.events[since:] if match(e)]

    def event_count(self) -> int:
        return len(self.events)

    def wait_events(self, match: Callable[[dict[str, Any]], bool], count: int, bound_s: float,
                    since: int = 0, stop: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events[since:] if match(e)]

    def _answer(self, command: dict[str, Any], note: Any, check: bool = True, **fields: Any) -> dict[str, Any]:
        self.log.append(command)
        answer = {"ok": False, "error": f"{command['op']} refused on purpose"} if command["op"] in self.refuse else {"ok": True, **fields}
        if note is not None:
            note(command, answer)
        if check and not answer["ok"]:
            raise PeerError(f"peer '{self.name}' refused {command['op']}: {answer['error']}")
        return answer

    def open_requester(self, name: str, profile: str = "current", mutant: str | None = None, note: Any = None,
                       connection_name: str | None = None) -> dict[str, Any]:
        reply_queue = f"amq.gen-{uuid.uuid4().hex[:8]}"
        answer = self._answer({"op": "requester.open", "name": name, "profile": profile, "mutant": mutant}, note,
                              reply_queue=reply_queue)
        self.requesters[name] = reply_queue
        self.counts[name] = {"timed_out": 0, "unmatched": 0}
        return answer

    def close_requester(self, name: str, check: bool = True, note: Any = None) -> dict[str, Any]:
        self.requesters.pop(name, None)
        return self._answer({"op": "requester.close", "name": name}, note, check)

    def start_responder(self, name: str, queue: str, behavior: dict[str, Any] | None = None, profile: str = "current",
                        mutant: str | None = None, bind: dict[str, str] | None = None,
                        max_attempts: int | None = None, note: Any = None, connection_name: str | None = None) -> dict[str, Any]:
        command = {"op": "responder.start", "name": name, "queue": queue, "behavior": behavior, "profile": profile,
                   "mutant": mutant}
        answer = self._answer(command, note)
        self.responders[name] = queue
        self.broker.responders[queue] = (self, name, behavior or {"reply": "echo"})
        self.counts[name] = {"answered": 0, "unanswerable": 0}
        return answer

    def stop_responder(self, name: str, check: bool = True, note: Any = None) -> dict[str, Any]:
        queue = self.responders.pop(name, None)
        self.broker.responders.pop(queue, None)
        return self._answer({"op": "responder.stop", "name": name}, note, check)

    def counters(self, of: str, note: Any = None) -> dict[str, Any]:
        return self._answer({"op": "counters", "of": of}, note, counters=dict(self.counts.get(of, {})))["counters"]

    def request(self, requester: str, exchange: str, routing_key: str, body: Any, timeout_ms: int | None = None,
                note: Any = None, message_type: str | None = None) -> FakeCall:
        command = {"op": "request", "requester": requester, "exchange": exchange, "routing_key": routing_key, "body": body,
                   "timeout_ms": timeout_ms}
        self.log.append(command)
        if note is not None:
            note(command, None)
        if "request" in self.refuse:
            return FakeCall(command, {"ok": False, "error": "request refused on purpose"})
        request_id = uuid.uuid4().hex
        reply_to = self.requesters[requester] if "wrong-reply-to" not in self.defects else "amq.gen-elsewhere"
        target = self.broker.responders.get(routing_key)
        if target is None:
            self.counts[requester]["timed_out"] += 1
            return FakeCall(command, {"ok": True, "outcome": "timeout", "request_id": request_id, "elapsed_ms": timeout_ms})
        responder, responder_name, behavior = target
        responder.counts[responder_name]["answered"] += 1
        responder.events.append({"event": "handled", "responder": responder_name, "message_id": request_id})
        if behavior.get("reply") == "fail":
            return FakeCall(command, {"ok": True, "outcome": "responder_failed", "failure": behavior.get("error_message"),
                                      "request_id": request_id, "elapsed_ms": 1})
        reply = {"echo": body, "seen": {"message_id": request_id, "reply_to": reply_to, "responder": responder.name}}
        return FakeCall(command, {"ok": True, "outcome": "reply", "reply": reply, "request_id": request_id, "elapsed_ms": 1})

    def gather(self, requester: str, mode: str, body: Any, timeout_ms: int, endpoint: str | None = None,
               exchange: str | None = None, correlation_id: Any = None, expected_reply_count: Any = None,
               note: Any = None, message_type: str | None = None) -> FakeCall:
        command = {"op": "gather", "requester": requester, "mode": mode, "body": body, "timeout_ms": timeout_ms}
        self.log.append(command)
        if note is not None:
            note(command, None)
        return FakeCall(command, None)  # never answers: the engine's bound decides


class FakeManagement:
    """The cleanup's view of the broker: nothing left over."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def queues(self, vhost: str) -> list[dict[str, Any]]:
        return []

    def exchanges(self, vhost: str) -> list[dict[str, Any]]:
        return []

    def delete_queue(self, vhost: str, name: str) -> None:
        self.deleted.append(name)

    def delete_exchange(self, vhost: str, name: str) -> None:
        self.deleted.append(name)

    def queue(self, vhost: str, name: str) -> dict[str, Any] | None:
        return {"name": name, "type": "quorum", "durable": True, "exclusive": False, "auto_delete": False, "arguments": {}}


def no_probe(url: str, label: str = "") -> Any:
    raise AssertionError("these unit tests run scenarios without the probe")


@dataclass
class Hellos:
    caps: list[str] = field(default_factory=lambda: ["request", "respond", "gather"])

    def of(self, *names: str) -> dict[str, dict[str, Any]]:
        return {n: {"capabilities": self.caps, "profiles": ["current"], "mutants": []} for n in names}


def now() -> float:
    return time.monotonic()
