"""Runs one cell: interprets a scenario's steps against peers and the probe.

Each cell has a namespace (`c0007`): every queue and exchange name it uses is prefixed with
it, and everything it opened is closed and deleted at its end, pass or fail. Every wait is
bounded; a FAIL names the rule and shows what was expected against what was observed.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from . import assertions
from .catalogue import mutants
from .cells import Cell, result_of
from .errors import BrokerError, CheckFailed, PeerError
from .management import Management
from .manifests import PeerSpec
from .model import CellResult, Status
from .peer_client import Note, PeerLink, PendingCall
from .probe import Probe

GRACE_S = 10.0  # on top of a request's own timeout, for the peer's bookkeeping
DEFAULT_WAIT_MS = 5000


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


@dataclass
class _Opened:
    peer: PeerLink
    op: str
    name: str


@dataclass
class CellState:
    cell: Cell
    ns: str
    ctx: RunContext
    variables: dict[str, Any] = field(default_factory=dict)
    pending: dict[str, tuple[PeerLink, PendingCall, float, bool]] = field(default_factory=dict)
    opened: list[_Opened] = field(default_factory=list)
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


def _mutant_for(spec: PeerSpec, op: str) -> str | None:
    """Only the side a mutant acts on is given it (the catalogue says which)."""
    if spec.mutant is None:
        return None
    mutant = mutants().get(spec.mutant)
    return spec.mutant if mutant is None or mutant.acts_on == op else None


# -- steps ------------------------------------------------------------------------


def _step_queue(state: CellState, args: dict[str, Any]) -> None:
    probe = state.get_probe()
    name = probe.declare_queue(state.name(args["name"]), args.get("type", "quorum"))
    if "bind" in args:
        probe.bind(name, state.name(args["bind"]["exchange"]), args["bind"].get("routing_key", ""))


def _step_exchange(state: CellState, args: dict[str, Any]) -> None:
    state.get_probe().declare_exchange(state.name(args["name"]), args["type"])


def _step_probe_inbox(state: CellState, args: dict[str, Any]) -> None:
    name = state.get_probe().declare_queue(state.name(args["as"]), "classic", exclusive=True)
    state.variables[args["as"]] = {"name": name}


def _step_responder(state: CellState, args: dict[str, Any]) -> None:
    who = state.cell.roles[args["role"]]
    specs = list(who) if isinstance(who, tuple) else [who] * args.get("count", 1)
    names = []
    for index, spec in enumerate(specs):
        peer = state.ctx.peers[spec.name]
        name = state.name(f"{args['as']}{index + 1}" if len(specs) > 1 else args["as"])
        queue = args["queue"].replace("{index}", str(index + 1)).replace("{peer}", f"{spec.name}-{index + 1}")
        bind = None
        if "bind" in args:
            bind = {"exchange": state.name(args["bind"]["exchange"]), "routing_key": args["bind"].get("routing_key", "")}
        peer.start_responder(name, state.queue_name(queue), args.get("behavior", {"reply": "echo"}), spec.profile,
                             _mutant_for(spec, "responder.start"), bind, args.get("max_attempts"), note=state.noter(peer))
        state.opened.append(_Opened(peer, "responder.stop", name))
        names.append(name)
        state.owners[name] = (peer, name)
    state.owners[args["as"]] = state.owners[names[0]]
    state.variables[args["as"]] = {"name": names[0], "names": names, "count": len(names)}


def _step_requester(state: CellState, args: dict[str, Any]) -> None:
    spec = state.spec_of(args["role"])
    peer = state.ctx.peers[spec.name]
    name = state.name(args["as"])
    answer = peer.open_requester(name, spec.profile, _mutant_for(spec, "requester.open"), note=state.noter(peer))
    state.opened.append(_Opened(peer, "requester.close", name))
    state.owners[args["as"]] = (peer, name)
    state.variables[args["as"]] = {"name": name, "reply_queue": answer.get("reply_queue")}


def _target(state: CellState, args: dict[str, Any]) -> tuple[str, str]:
    if "queue" in args:
        return "", state.queue_name(args["queue"])
    exchange = args.get("exchange", "")
    return (state.name(exchange) if exchange else ""), assertions.render(args.get("routing_key", ""), state.variables)


def _started(state: CellState, args: dict[str, Any], peer: PeerLink, call: PendingCall, timeout_ms: int) -> None:
    state.pending[args["as"]] = (peer, call, timeout_ms / 1000 + GRACE_S, bool(args.get("refusal_expected")))
    if not args.get("async"):
        _await(state, args["as"])


def _step_request(state: CellState, args: dict[str, Any]) -> None:
    exchange, routing_key = _target(state, args)
    peer, requester = state.owners[args["requester"]]
    call = peer.request(requester, exchange, routing_key, assertions.render(args["body"], state.variables),
                        args.get("timeout_ms"), note=state.noter(peer))
    _started(state, args, peer, call, args.get("timeout_ms", 30000))


def _step_gather(state: CellState, args: dict[str, Any]) -> None:
    peer, requester = state.owners[args["requester"]]
    multi = args["mode"] == "multi"
    rendered = {key: assertions.render(args[key], state.variables) for key in ("correlation_id", "expected_reply_count") if key in args}
    call = peer.gather(requester, args["mode"], assertions.render(args["body"], state.variables), args["timeout_ms"],
                       endpoint=state.queue_name(args["endpoint"]) if multi else None,
                       exchange=None if multi else state.name(args["exchange"]), note=state.noter(peer), **rendered)
    _started(state, args, peer, call, args["timeout_ms"])


def _await(state: CellState, name: str) -> None:
    peer, call, bound_s, refusal_expected = state.pending.pop(name)
    answer = call.wait(bound_s)
    state.note("answer", peer=peer.name, of=name, answer=answer)
    if not answer.get("ok") and not refusal_expected:
        raise PeerError(f"peer '{peer.name}' refused {call.command['op']} '{name}': {answer.get('error')}")
    state.variables[name] = answer if answer.get("ok") else {**answer, "outcome": "refused"}


def _step_await(state: CellState, args: Any) -> None:
    for name in args if isinstance(args, list) else [args]:
        _await(state, name)


def _step_counters(state: CellState, args: dict[str, Any]) -> None:
    peer, name = state.owners[args["of"]]
    state.variables[args["as"]] = peer.counters(name, note=state.noter(peer))


def _step_wait_event(state: CellState, args: dict[str, Any]) -> None:
    peer, name = state.owners[args["of"]]
    wanted = args["event"]
    where = assertions.render(args.get("where", {}), state.variables)
    count = args.get("count", 1)
    bound_s = args.get("timeout_ms", DEFAULT_WAIT_MS) / 1000

    def match(event: dict[str, Any]) -> bool:
        return (
            event.get("event") == wanted
            and name in (event.get("responder"), event.get("requester"))
            and all(event.get(k) == v for k, v in where.items())
        )

    found = peer.wait_events(match, count, bound_s, since=state.event_marks.get(peer.name, 0))
    state.note("wait_event", peer=peer.name, event=wanted, where=where, seen=len(found))
    if not peer.alive:
        raise PeerError(f"peer '{peer.name}' died while the cell waited for {wanted}")
    if len(found) < count:
        raise CheckFailed(
            args["rule"],
            f"{count} '{wanted}' event(s) from {args['of']}{' with ' + json.dumps(where) if where else ''} within {bound_s:.1f}s",
            expected=count,
            observed=len(found),
        )
    if "as" in args:
        state.variables[args["as"]] = [{k: v for k, v in e.items() if k != "_at"} for e in found]


def _step_probe_publish(state: CellState, args: dict[str, Any]) -> None:
    probe = state.get_probe()
    rendered = assertions.render(args, state.variables)
    exchange, routing_key = _target(state, args)
    properties = dict(rendered.get("properties", {}))
    properties.setdefault("content_type", "application/json")
    published = []
    for _ in range(args.get("repeat", 1)):
        props = dict(properties)
        props.setdefault("message_id", f"{state.ns}-{uuid.uuid4().hex[:12]}")
        if "body_text" in rendered:
            body = rendered["body_text"].encode("utf-8")
        else:
            body = json.dumps(rendered.get("body", {})).encode("utf-8")
        routed = probe.publish(exchange, routing_key, body, props, rendered.get("headers", {}))
        published.append({"message_id": props["message_id"], "routed": routed})
    state.note("probe_publish", exchange=exchange, routing_key=routing_key, published=published,
               properties=properties, headers={k: repr(v) for k, v in rendered.get("headers", {}).items()})
    if "as" in args:
        state.variables[args["as"]] = published[0] if len(published) == 1 else {"messages": published}


def _step_probe_get(state: CellState, args: dict[str, Any]) -> None:
    probe = state.get_probe()
    queue = state.queue_name(args["queue"])
    bound_s = args.get("timeout_ms", DEFAULT_WAIT_MS) / 1000
    if args.get("absent"):
        got = probe.get(queue, bound_s)
        state.note("probe_get", queue=queue, absent_expected=True, got=got)
        if got is not None:
            raise CheckFailed(args.get("rule", "RR-1"), f"no message on {queue} within {bound_s:.1f}s", expected="nothing", observed=got)
        state.variables[args["as"]] = None
        return
    records = []
    for _ in range(args.get("count", 1)):
        got = probe.get(queue, bound_s)
        if got is None:
            break
        records.append(got)
    state.note("probe_get", queue=queue, got=records)
    if len(records) < args.get("count", 1):
        message = f"{args.get('count', 1)} message(s) on {queue} within {bound_s:.1f}s"
        if "rule" in args:
            raise CheckFailed(args["rule"], message, expected=args.get("count", 1), observed=len(records))
        raise PeerError(f"expected {message}; got {len(records)}")
    state.variables[args["as"]] = records[0] if "count" not in args else records


def _step_queue_facts(state: CellState, args: dict[str, Any]) -> None:
    queue = state.queue_name(args["queue"])
    facts = state.ctx.management.queue(state.ctx.vhost, queue)
    state.note("queue_facts", queue=queue, facts=facts)
    state.variables[args["as"]] = facts if facts is not None else {"exists": False}


def _step_stop_responder(state: CellState, name: str) -> None:
    names = set(state.variables[name]["names"])
    for opened in [o for o in state.opened if o.op == "responder.stop" and o.name in names]:
        opened.peer.stop_responder(opened.name, note=state.noter(opened.peer))
        state.opened.remove(opened)


def _step_close_requester(state: CellState, name: str) -> None:
    peer, peer_name = state.owners[name]
    peer.close_requester(peer_name, note=state.noter(peer))
    state.opened = [o for o in state.opened if not (o.op == "requester.close" and o.name == peer_name)]


def _step_expect(state: CellState, args: list[dict[str, Any]]) -> None:
    for expectation in args:
        failure = assertions.check(expectation, state.variables)
        state.note("expect", that=expectation["that"], rule=expectation["rule"], ok=failure is None,
                   observed=assertions.lookup(state.variables, expectation["that"]) if failure else None)
        if failure is not None:
            raise failure


STEPS: dict[str, Callable[[CellState, Any], None]] = {
    "queue": _step_queue,
    "exchange": _step_exchange,
    "probe_inbox": _step_probe_inbox,
    "responder": _step_responder,
    "requester": _step_requester,
    "request": _step_request,
    "gather": _step_gather,
    "await": _step_await,
    "counters": _step_counters,
    "wait_event": _step_wait_event,
    "probe_publish": _step_probe_publish,
    "probe_get": _step_probe_get,
    "queue_facts": _step_queue_facts,
    "stop_responder": _step_stop_responder,
    "close_requester": _step_close_requester,
    "expect": _step_expect,
}


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
            except KeyError as exc:
                if isinstance(exc.args[0], str) and "names nothing" in exc.args[0]:
                    raise PeerError(f"step {index + 1} ({kind}): {exc.args[0]}") from None
                raise
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
