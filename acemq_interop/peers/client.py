"""One typed client of a peer, used by the engine and by bench alike.

`PeerClient` wraps a `PeerProcess` (the pipes, the JSON lines, the protocol version) with
one method per peer-protocol command, so no caller spells a command dict. A refused command
is a `PeerError` naming the peer and the command; `request` and `gather` return a
`PendingCall` that the caller waits on (their answers may be refusals a scenario expects).

`PeerLink` is the interface the engine is written against: unit tests drive the engine
with an in-memory implementation of it, every run uses `PeerClient`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from ..core import redact
from ..core.errors import Lacking, PeerError
from ..spec.catalogue import offer_from_knobs, policy_for
from .manifests import Manifest
from .process import DEFAULT_OP_BOUND_S, LIVENESS_BOUND_S, PeerProcess
from .protocol import POLICY_PROTOCOL, RECOVERY_PROTOCOL

# Told of every command a client sends: (command, its answer or None while an async call is
# out, and the round trip in ms of an answered one, which the cell's grace is measured from).
Note = Callable[..., None]


class PendingCall(Protocol):
    command: dict[str, Any]

    def wait(self, bound_s: float, abort: Callable[[], str | None] | None = None) -> dict[str, Any]: ...

    def cancel(self) -> None: ...


class PeerLink(Protocol):
    """What the engine needs of a peer: its typed commands and its events."""

    name: str

    @property
    def alive(self) -> bool: ...

    @property
    def fault(self) -> str | None: ...

    def check_alive(self) -> str | None: ...

    def stderr_tail(self) -> str: ...

    def event_count(self) -> int: ...

    def events_since(self, since: int, match: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]: ...

    def wait_events(self, match: Callable[[dict[str, Any]], bool], count: int, bound_s: float,
                    since: int = 0, stop: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]: ...

    def open_requester(self, name: str, profile: str = "current", mutant: str | None = None,
                       note: Note | None = None, connection_name: str | None = None,
                       amqp_urls: list[str] | None = None) -> dict[str, Any]: ...

    def close_requester(self, name: str, check: bool = True, note: Note | None = None) -> dict[str, Any]: ...

    def start_responder(self, name: str, queue: str, behavior: dict[str, Any] | None = None, profile: str = "current",
                        mutant: str | None = None, bind: dict[str, str] | None = None,
                        max_attempts: int | None = None, note: Note | None = None,
                        connection_name: str | None = None, amqp_urls: list[str] | None = None) -> dict[str, Any]: ...

    def stop_responder(self, name: str, check: bool = True, note: Note | None = None) -> dict[str, Any]: ...

    def counters(self, of: str, note: Note | None = None) -> dict[str, Any]: ...

    def request(self, requester: str, exchange: str, routing_key: str, body: Any, timeout_ms: int | None = None,
                note: Note | None = None, message_type: str | None = None) -> PendingCall: ...

    def gather(self, requester: str, mode: str, body: Any, timeout_ms: int, endpoint: str | None = None,
               exchange: str | None = None, correlation_id: Any = None, expected_reply_count: Any = None,
               note: Note | None = None, message_type: str | None = None) -> PendingCall: ...


@dataclass
class _ProcessCall:
    """A command under way on a real peer process."""

    process: PeerProcess
    command: dict[str, Any]
    future: Any

    def wait(self, bound_s: float, abort: Callable[[], str | None] | None = None) -> dict[str, Any]:
        return self.process.wait(self.future, bound_s, abort)

    def cancel(self) -> None:
        self.future.cancel()


class PeerClient:
    """A running peer, driven through typed commands."""

    def __init__(self, process: PeerProcess, op_bound_s: float = DEFAULT_OP_BOUND_S):
        self.process = process
        self.op_bound_s = op_bound_s
        self.amqp_urls: list[str] = []  # every broker node's URL, from the handshake

    @classmethod
    def launch(cls, manifest: Manifest, log_dir: Path, in_docker: bool = False,
               op_bound_s: float = DEFAULT_OP_BOUND_S, run_id: str | None = None,
               mounts: tuple[Path, ...] = ()) -> "PeerClient":
        """Start the peer's process (its `hello` is `handshake`); `run_id` labels its container,
        `mounts` are folders its container sees read-only at the same path (a TLS run's CA)."""
        return cls(PeerProcess(manifest, log_dir, in_docker, run_id, mounts), op_bound_s)

    # -- the process ---------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.process.manifest.name

    @property
    def manifest(self) -> Manifest:
        return self.process.manifest

    def handshake(self, amqp_url: str, bound_s: float = 60.0, tls: dict[str, Any] | None = None,
                  amqp_urls: list[str] | None = None) -> dict[str, Any]:
        """`hello`. A protocol-4 peer names its policy knobs, not catalogue names: the profiles
        and mutants it offers are derived from them here, so the rest of the run reads one offer.
        `amqp_urls` are every broker node's (one on a single node): a protocol-5 role is given them."""
        self.amqp_urls = list(amqp_urls or [amqp_url])
        hello = self.process.handshake(amqp_url, bound_s, tls, self.amqp_urls)
        if self.protocol >= POLICY_PROTOCOL:
            hello["profiles"], hello["mutants"] = offer_from_knobs(self.binding, hello)
        return hello

    @property
    def binding(self) -> str:
        """The binding whose catalogue history this peer replays: the manifest's name, or for
        a peer given as an image (`go-rc=IMAGE`) the binding its hello names."""
        return str(self.hello.get("peer") or self.name) if self.manifest.image else self.name

    @property
    def hello(self) -> dict[str, Any]:
        return self.process.hello

    @property
    def protocol(self) -> int:
        return self.process.protocol

    @property
    def startup_s(self) -> float:
        return self.process.startup_s

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.alive

    @property
    def fault(self) -> str | None:
        """Why the peer is out of the run (exited, unresponsive, out of protocol), or None."""
        return self.process.fault

    def check_alive(self) -> str | None:
        """None when the peer answers a liveness check within the op bound (at most a few
        seconds); else its fault, and from then on it is out of the run."""
        return self.process.check_alive(min(LIVENESS_BOUND_S, self.op_bound_s))

    def capabilities(self) -> set[str]:
        return self.process.capabilities()

    def lacks(self) -> frozenset[str]:
        """The optional parts its binding declares it has none of (hello `lacks`: counters,
        events, dead_lettering): the scenarios needing one FAIL at once with its clauses."""
        declared = self.process.hello.get("lacks") if isinstance(self.process.hello, dict) else None
        return frozenset(p for p in declared or () if isinstance(p, str))

    def stderr_tail(self) -> str:
        return self.process.stderr_tail()

    def event_count(self) -> int:
        return self.process.event_count()

    def wait_events(self, match: Callable[[dict[str, Any]], bool], count: int, bound_s: float,
                    since: int = 0, stop: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        return self.process.wait_events(match, count, bound_s, since, stop)

    def events_since(self, since: int, match: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """The events so far (from index `since`) that match, with no wait."""
        return self.process.events(match, since)

    def shutdown(self) -> None:
        self.process.shutdown()

    # -- commands ------------------------------------------------------------------

    def _call(self, command: dict[str, Any], note: Note | None, check: bool = True,
              bound_s: float | None = None) -> dict[str, Any]:
        sent = time.monotonic()
        answer = self.process.call(command, self.op_bound_s if bound_s is None else bound_s)
        if note is not None:
            note(_as_noted(command), answer, round((time.monotonic() - sent) * 1000, 1))
        if check and not answer.get("ok"):
            raise PeerError(f"peer '{self.name}' refused {command['op']}: {answer.get('error')}")
        return answer

    def _send(self, command: dict[str, Any], note: Note | None) -> PendingCall:
        future = self.process.send(command)
        if note is not None:
            note(_as_noted(command), None)
        return _ProcessCall(self.process, command, future)

    def _configured(self, command: dict[str, Any], profile: str, mutant: str | None) -> dict[str, Any]:
        """A `requester.open` or `responder.start` with what to emulate: the profile's and the
        mutant's names, and from protocol 4 on the policy values they stand for (the peer
        applies those by knob name and never looks the names up)."""
        command["profile"], command["mutant"] = profile, mutant
        if self.protocol >= POLICY_PROTOCOL:
            command["policy"] = policy_for(self.binding, command["op"], profile, (mutant,) if mutant else ())
        return command

    def _connected(self, command: dict[str, Any], connection_name: str | None,
                   amqp_urls: list[str] | None = None) -> dict[str, Any]:
        """Protocol 5: the role's own connection, named (so the harness can find it on the
        broker and end it, and nothing else), and the nodes it may connect to. An older peer is
        sent neither: its commands stay exactly as its version has them."""
        if self.protocol >= RECOVERY_PROTOCOL:
            command["connection_name"] = connection_name or f"acemq-interop {command['name']}"
            # A cell may prefer a node for this role (a cluster's): its URL comes first.
            command["amqp_urls"] = list(amqp_urls or self.amqp_urls)
        return command

    def open_requester(self, name: str, profile: str = "current", mutant: str | None = None,
                       note: Note | None = None, connection_name: str | None = None,
                       amqp_urls: list[str] | None = None) -> dict[str, Any]:
        """`requester.open`; the answer carries the requester's `reply_queue`."""
        command = self._configured({"op": "requester.open", "name": name}, profile, mutant)
        return self._call(self._connected(command, connection_name, amqp_urls), note)

    def close_requester(self, name: str, check: bool = True, note: Note | None = None) -> dict[str, Any]:
        return self._call({"op": "requester.close", "name": name}, note, check)

    def start_responder(self, name: str, queue: str, behavior: dict[str, Any] | None = None, profile: str = "current",
                        mutant: str | None = None, bind: dict[str, str] | None = None,
                        max_attempts: int | None = None, note: Note | None = None,
                        client: str = "binding", events: bool = True,
                        connection_name: str | None = None, amqp_urls: list[str] | None = None) -> dict[str, Any]:
        """`responder.start`; `client="raw"` is protocol 2's echo responder on the bare client;
        `events=False` (protocol 4) asks for no event per request (a load, not a cell)."""
        command: dict[str, Any] = self._configured(
            {"op": "responder.start", "name": name, "queue": queue, "behavior": behavior or {"reply": "echo"}}, profile, mutant)
        if client == "binding":
            command = self._connected(command, connection_name, amqp_urls)
        if not events and self.protocol >= POLICY_PROTOCOL:
            command["events"] = False
        if client != "binding":
            command["client"] = client
        if bind is not None:
            command["bind"] = bind
        if max_attempts is not None:
            command["max_attempts"] = max_attempts
        return self._call(command, note)

    def stop_responder(self, name: str, check: bool = True, note: Note | None = None) -> dict[str, Any]:
        return self._call({"op": "responder.stop", "name": name}, note, check)

    def counters(self, of: str, note: Note | None = None) -> dict[str, Any]:
        """The binding's own counters of a requester or responder, with no wait."""
        answer = self._call({"op": "counters", "of": of}, note, check=False)
        counters = answer.get("counters")
        if not answer.get("ok"):
            # A peer that answers at all is alive (a dead or silent one raised above): a
            # `counters` refused for a requester or responder it opened is its binding saying
            # it has none, declared or not.
            raise Lacking("counters", f"peer '{self.name}' refused counters of '{of}': {answer.get('error')}")
        if not isinstance(counters, dict) or not counters:
            raise Lacking("counters", f"peer '{self.name}' answered counters of '{of}' without any counter")
        return counters

    def request(self, requester: str, exchange: str, routing_key: str, body: Any, timeout_ms: int | None = None,
                note: Note | None = None, message_type: str | None = None) -> PendingCall:
        command: dict[str, Any] = {"op": "request", "requester": requester, "exchange": exchange,
                                   "routing_key": routing_key, "body": body}
        if timeout_ms is not None:
            command["timeout_ms"] = timeout_ms
        if message_type is not None:  # protocol 3: the AMQP type property (SG-2.3)
            command["type"] = message_type
        return self._send(command, note)

    def gather(self, requester: str, mode: str, body: Any, timeout_ms: int, endpoint: str | None = None,
               exchange: str | None = None, correlation_id: Any = None, expected_reply_count: Any = None,
               note: Note | None = None, message_type: str | None = None) -> PendingCall:
        command: dict[str, Any] = {"op": "gather", "requester": requester, "mode": mode, "body": body,
                                   "timeout_ms": timeout_ms}
        if mode == "multi":
            command["endpoint"] = endpoint
        else:
            command["exchange"] = exchange
        if correlation_id is not None:
            command["correlation_id"] = correlation_id
        if expected_reply_count is not None:
            command["expected_reply_count"] = expected_reply_count
        if message_type is not None:  # protocol 3: the AMQP type property of every copy (SG-2.3)
            command["type"] = message_type
        return self._send(command, note)

    def load(self, exchange: str, routing_key: str, requests: int, in_flight: int, body_bytes: int = 256,
             timeout_ms: int = 5000, warmup: int = 0, client: str = "binding", profile: str = "current",
             mutant: str | None = None, bound_s: float | None = None) -> dict[str, Any]:
        """Protocol 2's `load`: the peer measures its own binding (or its bare client)."""
        if self.protocol < 2:
            raise PeerError(f"peer '{self.name}' speaks protocol {self.protocol}, which has no load")
        command = self._configured({"op": "load", "client": client, "exchange": exchange, "routing_key": routing_key,
                                    "requests": requests, "in_flight": in_flight, "body_bytes": body_bytes,
                                    "timeout_ms": timeout_ms, "warmup": warmup}, profile, mutant)
        return self._call(command, None, bound_s=bound_s or max(self.op_bound_s, timeout_ms / 1000 * 2 + 60))["load"]


def _as_noted(command: dict[str, Any]) -> dict[str, Any]:
    """A command as the cell's evidence keeps it: a protocol-5 role's node URLs carry the
    broker's credentials, and the trace goes into results.json and the report."""
    if "amqp_urls" not in command:
        return command
    return {**command, "amqp_urls": [redact.url(str(u)) for u in command["amqp_urls"]]}
