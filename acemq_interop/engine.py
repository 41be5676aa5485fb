"""Runs one cell: interprets a scenario's steps against peers and the probe.

Each cell has a namespace (`c0007`): every queue and exchange name it uses is prefixed with
it, and everything it opened is closed and deleted at its end, pass or fail. Every wait is
bounded; a FAIL names the rule and shows what was expected against what was observed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import assertions
from .cells import Cell, result_of
from .errors import BrokerError, CheckFailed, PeerError, TemplateError
from .management import Management
from .manifests import PeerSpec
from .model import CellResult, Status
from .peer_client import Note, PeerLink, PendingCall
from .probe import Probe
from .steps import STEPS, Opened



@dataclass
class RunContext:
    """What every cell of a run shares."""

    amqp_url: str
    vhost: str
    management: Management
    peers: dict[str, PeerLink]
    op_bound_s: float = 20.0  # for commands that do not wait on the broker's behaviour
    broker: str = ""  # the label of the broker the cells run on
    probe_factory: Callable[[str], Probe] = Probe  # the seam for unit tests of the engine
    ca_file: str | None = None  # a TLS run's CA: every client the harness opens verifies the broker with it
    # -- transcripts (issue 13): the run's firehose tracer, and which cells keep theirs --
    tracer: Any = None  # transcript.Tracer | None
    keep_transcript: Callable[[CellResult], bool] | None = None


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

    def name(self, logical: str) -> str:
        return f"{self.ns}.{logical}"

    def queue_name(self, value: str) -> str:
        """A queue given in a step: `${...}` is a real name, anything else is namespaced."""
        rendered = assertions.render(value, self.variables)
        return rendered if value.startswith("${") else self.name(rendered)

    def get_probe(self) -> Probe:
        if self.probe is None:
            self.probe = self.ctx.probe_factory(self.ctx.amqp_url)
        return self.probe

    def spec_of(self, role: str) -> PeerSpec:
        who = self.cell.roles[role]
        assert isinstance(who, PeerSpec)
        return who

    def note(self, step: str, **details: Any) -> None:
        self.trace.append({"t": round(time.monotonic() - self.variables["_t0"], 3), "step": step, **details})

    def noter(self, peer: PeerLink) -> Note:
        """What a peer client tells of each command: into the cell's evidence."""
        def note(command: dict[str, Any], answer: dict[str, Any] | None) -> None:
            details: dict[str, Any] = {"peer": peer.name, "sent": command}
            if answer is not None:
                details["answer"] = answer
            self.note(command["op"], **details)
        return note


# -- the cell -----------------------------------------------------------------------


def run_cell(cell: Cell, ns: str, ctx: RunContext) -> CellResult:
    state = CellState(cell=cell, ns=ns, ctx=ctx)
    state.variables["_t0"] = time.monotonic()
    state.variables["ns"] = ns
    for spec in cell.specs():
        state.event_marks[spec.name] = ctx.peers[spec.name].event_count()
    started = time.monotonic()
    result = result_of(cell, Status.PASS, broker=ctx.broker)
    try:
        for index, step in enumerate(cell.scenario.steps):
            (kind, args), = step.items()
            try:
                STEPS[kind](state, args)
            except TemplateError as exc:
                raise PeerError(f"step {index + 1} ({kind}): {exc}") from None
        if state.pending:
            raise PeerError(f"the scenario never awaited {', '.join(state.pending)}")
    except CheckFailed as failed:
        result.status, result.rule, result.message = Status.FAIL, failed.rule, failed.message
        result.expected, result.observed = failed.expected, failed.observed
    except (PeerError, BrokerError) as exc:
        result.status, result.message = Status.ERROR, str(exc)
    except Exception as exc:  # a harness bug must not take the other cells down
        result.status, result.message = Status.ERROR, f"harness error: {type(exc).__name__}: {exc}"
    finally:
        _cleanup(state, result)
    result.duration_s = time.monotonic() - started
    result.trace = state.trace
    if result.status == Status.ERROR:
        result.stderr = {s.name: ctx.peers[s.name].stderr_tail() for s in cell.specs() if s.name in ctx.peers}
    if ctx.tracer is not None:  # -- transcript hook (issue 13) --
        from .transcript import attach

        attach(ctx.tracer, ctx.keep_transcript, ns, state.variables["_t0"], result)
    return result


def _cleanup(state: CellState, result: CellResult) -> None:
    """Close what the cell opened and delete what it declared, whatever happened."""
    for opened in reversed(state.opened):
        if not opened.peer.alive:
            continue
        try:
            if opened.op == "responder.stop":
                opened.peer.stop_responder(opened.name, check=False)
            else:
                opened.peer.close_requester(opened.name, check=False)
        except PeerError as exc:
            if result.status == Status.PASS:
                result.status, result.message = Status.ERROR, f"cleanup: {exc}"
    for _, (peer, call, _, _) in state.pending.items():
        call.cancel()
    if state.probe is not None:
        state.probe.close()
    try:
        prefix = state.ns + "."
        for queue in state.ctx.management.queues(state.ctx.vhost):
            if queue["name"].startswith(prefix):
                state.ctx.management.delete_queue(state.ctx.vhost, queue["name"])
        for exchange in state.ctx.management.exchanges(state.ctx.vhost):
            if exchange["name"].startswith(prefix):
                state.ctx.management.delete_exchange(state.ctx.vhost, exchange["name"])
    except BrokerError as exc:
        if result.status == Status.PASS:
            result.status, result.message = Status.ERROR, f"cleanup: {exc}"
