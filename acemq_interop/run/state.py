"""What one cell carries while it runs: the run's context for the cells (`RunContext`) and a
cell's own state (`CellState`), with the requesters and responders it opened (`Opened`).

Apart from the engine (engine.py, which runs a cell) and the step runs (steps.py, which
change its state), so that neither imports the other's module to name it.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..amqp.probe import Probe
from ..broker.control import HeldQueue
from ..broker.leftovers import VHOST_PREFIX
from ..broker.management import Management
from ..core.errors import BrokerError, CheckFailed
from ..peers.client import Note, PeerLink, PendingCall
from ..peers.manifests import PeerSpec
from ..results.model import CellResult, Failure, NotEvaluated
from ..spec import assertions
from ..spec import catalogue as spec
from .cells import Cell
from .profile import CellClock

if TYPE_CHECKING:
    from ..broker.control import BrokerControl


def connection_lost_in(ns: str, excused: tuple[str, ...] = (),
                       expected: dict[str, float] | None = None) -> Callable[[dict[str, Any]], bool]:
    """Matches a `connection_lost` event of a requester or responder of the cell `ns`, but one
    whose reason names a queue in `excused` (the broker refused a declaration of it, which the
    cell judged as a binding's break), and one of a role in `expected` written after the cell
    dropped that role's connection (peer-side name -> when, time.monotonic())."""
    prefix = ns + "."
    dropped = expected or {}

    def lost(event: dict[str, Any]) -> bool:
        if event.get("event") != "connection_lost":
            return False
        names = [str(event.get(side) or "") for side in ("requester", "responder")]
        if not any(n.startswith(prefix) for n in names):
            return False
        if any(n in dropped and float(event.get("_at", dropped[n])) >= dropped[n] for n in names):
            return False
        return not any(queue in str(event.get("reason")) for queue in excused)
    return lost


@dataclass
class Opened:
    """A requester or responder a cell opened: closed at the cell's end unless a step closed it."""

    peer: "PeerLink"
    op: str  # the command that closes it: requester.close | responder.stop
    name: str


@dataclass
class RunContext:
    """What every cell of a run shares."""

    amqp_url: str
    vhost: str
    management: Management
    peers: dict[str, PeerLink]
    op_bound_s: float = 20.0  # for commands that do not wait on the broker's behaviour
    broker: str = ""  # the label of the broker the cells run on
    probe_factory: Callable[..., Probe] = Probe  # (amqp_url, label): the seam for unit tests of the engine
    ca_file: str | None = None  # a TLS run's CA: every client the harness opens verifies the broker with it
    # -- transcripts (issue 13): the run's firehose tracer, and which cells keep theirs --
    tracer: Any = None  # transcript.Tracer | None
    keep_transcript: Callable[[CellResult], bool] | None = None
    # A broker condition that makes a cell's verdict worthless (a memory or disk alarm, a
    # blocked connection) seen since a time.monotonic() instant: the cause, or None.
    broker_condition: Callable[[float], str | None] | None = None
    broker_control: "BrokerControl | None" = None  # None on a broker given by URL
    cluster: Any = None  # the run's NodeCluster (--cluster): node steps fault its nodes; None on one node
    amqp_urls: list[str] = field(default_factory=list)  # every node's URL with the vhost (a cluster's: A first)
    clocks: dict[str, CellClock] | None = None  # run --profile: each cell's waits, by cell id
    _connections_why: list[str | None] = field(default_factory=list)  # connections_unavailable, once looked

    def connections_unavailable(self) -> str | None:
        """Why the management API cannot end a role's connection here (drop_connection,
        wait_recovered: RR-20), or None; looked at once per run. A broker given by URL may
        offer no management API, or a user it does not show the vhost's connections to."""
        if not self._connections_why:
            try:
                self.management.connections(self.vhost)
                why = None
            except BrokerError as exc:
                why = (f"needs the management API's connections (to end a role's connection and see it back, "
                       f"RR-20), which this broker does not offer: {exc}")
            self._connections_why.append(why)
        return self._connections_why[0]


@dataclass
class CellState:
    cell: Cell
    ns: str
    ctx: RunContext
    variables: dict[str, Any] = field(default_factory=dict)
    pending: dict[str, tuple[PeerLink, PendingCall, float, bool]] = field(default_factory=dict)
    opened: list[Opened] = field(default_factory=list)
    owners: dict[str, tuple[PeerLink, str]] = field(default_factory=dict)  # step name -> (peer, peer-side name)
    event_marks: dict[str, int] = field(default_factory=dict)  # peer name -> events index at cell start
    trace: list[dict[str, Any]] = field(default_factory=list)
    probe: Probe | None = None
    # -- every check, every cell --
    failures: list[Failure] = field(default_factory=list)
    not_evaluated: list[NotEvaluated] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # a name no step could bind -> why
    spoiled: list[tuple[tuple[str, ...], str]] = field(default_factory=list)  # paths a failed check judged -> why
    refused: dict[str, str] = field(default_factory=dict)  # calls refused unasked -> the peer's error, until judged
    step_index: int = 0
    lacking: dict[int, tuple[str, str]] = field(default_factory=dict)  # step index -> (role, part) its peer declares it lacks
    lacking_names: dict[str, tuple[str, str]] = field(default_factory=dict)  # a name such a step would have bound
    held: list[HeldQueue] = field(default_factory=list)  # queues the cell holds (broker/control.py), released at its end
    # Holds that lasted past HOLD_TRUSTED_MS: (trusted until, released at, why), cell seconds.
    long_holds: list[tuple[float, float, str]] = field(default_factory=list)
    probe_connections: list[str] = field(default_factory=list)  # own addresses of the probe's other connections (raw gets)
    declared_by: dict[str, str] = field(default_factory=dict)  # a request queue -> the role whose responder declared it first
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # a request's name -> when and where it was sent
    call_checks: dict[int, str] = field(default_factory=dict)  # index in `failures` -> the call its check read
    declaration_refusals: set[str] = field(default_factory=set)  # queues whose refused declaration the cell judged (RR-17.1)
    # Roles whose connection the cell ended (drop_connection, RR-20): peer-side name -> when
    # (time.monotonic()); a `connection_lost` of theirs from then on is expected, not a fault.
    dropped: dict[str, float] = field(default_factory=dict)
    dropped_connections: set[str] = field(default_factory=set)  # the broker's names of the connections it closed
    streams: dict[str, Any] = field(default_factory=dict)  # stream steps under way (run/node_steps.py), until awaited
    # Why the rest of the scenario has lost its premise (a responder it needs never started):
    # every later step is not run and its checks are not evaluated.
    halted: str | None = None
    # What the cell declared (the probe's queues and exchanges, its responders' queues and
    # dead-letter queues): deleted by name at its end; anything else goes with the run's vhost.
    declared_queues: set[str] = field(default_factory=set)
    declared_exchanges: set[str] = field(default_factory=set)
    clock: CellClock = field(default_factory=CellClock)  # time waited on what the scenario provoked (run --profile)

    @contextmanager
    def waiting(self, kind: str) -> Iterator[None]:
        """Counts the time inside as waiting on `kind` (a call's answer, an event, a message)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.clock.waited(kind, time.monotonic() - started)

    def name(self, logical: str) -> str:
        return f"{self.ns}.{logical}"

    def connection_name(self, name: str) -> str:
        """The client-provided connection name a protocol-5 role (peer-side `name`, the cell's
        namespace in it) is given: unique per role per run, and no credentials in it."""
        run = self.ctx.vhost[len(VHOST_PREFIX):] if self.ctx.vhost.startswith(VHOST_PREFIX) else self.ctx.vhost
        return f"acemq-interop {run} {name}"

    def lost_connections(self) -> Callable[[dict[str, Any]], bool]:
        """Matches a `connection_lost` of the cell that is a fault: not one the broker closed
        for a declaration the cell judged (RR-17.1), nor one of a role the cell dropped."""
        return connection_lost_in(self.ns, excused=tuple(self.declaration_refusals), expected=dict(self.dropped))

    def release(self, held: HeldQueue) -> str | None:
        """Ends a hold (deleting its key) and says why what the cell saw while holding is no
        verdict, or None. A probe whose connection is gone took its exclusive key along. A
        hold that ran long is kept in `long_holds`: what was judged after it may have run out
        is weighed at the cell's end (engine: _judge_long_holds)."""
        self.held.remove(held)
        if self.probe is not None and self.probe.fault() is None:
            self.probe.delete_queue(held.key)
        untrusted = held.untrusted()
        if untrusted is not None:
            t0 = self.variables["_t0"]
            self.long_holds.append((held.trusted_until() - t0, time.monotonic() - t0, untrusted))
        return untrusted

    def queue_name(self, value: str) -> str:
        """A queue given in a step: `${...}` is a real name, anything else is namespaced."""
        rendered = assertions.render(value, self.variables)
        return rendered if value.startswith("${") else self.name(rendered)

    def get_probe(self) -> Probe:
        if self.probe is None:
            self.probe = self.ctx.probe_factory(self.ctx.amqp_url, self.ns)
        return self.probe

    def spec_of(self, role: str) -> PeerSpec:
        who = self.cell.roles[role]
        assert isinstance(who, PeerSpec)
        return who

    def note(self, step: str, **details: Any) -> None:
        self.trace.append({"t": round(time.monotonic() - self.variables["_t0"], 3), "step": step, **details})

    # -- failures: recorded, charged to the side that broke them, and the cell goes on --

    def fail(self, failed: CheckFailed, check: str, index: int | None = None, sub: int = 0,
             role: str | None = None, seen_by: str | None = None, direct: bool = False) -> None:
        """Record a broken clause. The role charged is the scenario's for this check (the
        loader derived it), or `role` for a failure the engine itself finds (a call that never
        ended: its requester's)."""
        index = self.step_index if index is None else index
        role = self.cell.scenario.charges.get((index, sub), role)
        clause = spec.catalogue().clauses.get(failed.rule)
        peer, suspects = self.peer_of(role)
        self.failures.append(Failure(
            clause=failed.rule, rule=spec.rule_of(failed.rule), side=clause.side if clause else "either", role=role,
            peer=peer, check=check, message=failed.message, expected=failed.expected, observed=failed.observed,
            seen_as=failed.seen_as, at=len(self.trace) - 1 if self.trace else None, suspects=suspects,
            seen_by=seen_by if failed.seen_as else None, direct=direct))

    def peer_of(self, role: str | None) -> tuple[str | None, tuple[str, ...]]:
        """The label of the peer playing `role`, or (None, the candidates) when several do; the
        probe is never charged."""
        who = self.cell.roles.get(role) if role else None
        if isinstance(who, tuple):
            labels = tuple(dict.fromkeys(s.label for s in who))
            return (labels[0], ()) if len(labels) == 1 else (None, labels)
        return (who.label, ()) if isinstance(who, PeerSpec) else (None, ())

    def skip(self, clause: str, check: str, needs: str) -> None:
        self.not_evaluated.append(NotEvaluated(clause, check, needs))

    def spoil(self, path: str, why: str) -> None:
        """A value a check found broken: later checks reading it (or a part of it) are not
        evaluated, so one defect is named once, by the check that judged it."""
        self.spoiled.append((tuple(path.split(".")), why))

    def blocked(self, paths: list[str]) -> str | None:
        """Why a step reading these paths cannot be evaluated: a name an earlier step could
        not bind, or a value an earlier check found broken; None when it can run."""
        for path in paths:
            parts = tuple(path.split("."))
            if parts[0] in self.unavailable:
                return f"needs {parts[0]} ({self.unavailable[parts[0]]})"
            for spoiled, why in self.spoiled:
                n = min(len(parts), len(spoiled))
                if all(a == b or "*" in (a, b) for a, b in zip(parts[:n], spoiled[:n])):
                    return f"needs {'.'.join(spoiled)} ({why})"
        return None

    def guarded(self, names: list[str]) -> str | None:
        """Why a step must not bind these names: a failed check guards them (its `guards:`)."""
        for name in names:
            for spoiled, why in self.spoiled:
                if spoiled == (name,):
                    return f"guarded by a failed check ({why})"
        return None

    def consumed_by(self, name: str) -> list[tuple[str, float]]:
        """The queues the requester or responder `name` (its peer-side name) consumes, each with
        when it was opened (cell seconds): a responder's request queue, a requester's reply queue."""
        found = []
        for note in self.trace:
            sent, answer = note.get("sent") or {}, note.get("answer") or {}
            if sent.get("name") != name or not isinstance(answer, dict) or not answer.get("ok"):
                continue
            queue = sent.get("queue") if note.get("step") == "responder.start" else answer.get("reply_queue")
            if isinstance(queue, str) and queue:
                # The note is written at the answer; the consumer may have taken messages before.
                found.append((queue, float(note.get("t", 0)) - float(note.get("rtt_ms") or 0) / 1000))
        return found

    def noter(self, peer: PeerLink) -> Note:
        """What a peer client tells of each command: into the cell's evidence."""
        def note(command: dict[str, Any], answer: dict[str, Any] | None, rtt_ms: float | None = None) -> None:
            details: dict[str, Any] = {"peer": peer.name, "sent": command}
            if answer is not None:
                details["answer"] = answer
            if rtt_ms is not None:
                details["rtt_ms"] = rtt_ms
            self.note(command["op"], **details)
        return note


# -- the cell -----------------------------------------------------------------------
