"""How each step kind runs: one function per kind of the registry (spec/steps.py), in `RUNS`.

The engine (run/engine.py) interprets a scenario's steps with these; the loader never
imports them, so reading a scenario touches neither the probe nor a peer.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ..amqp import raw_client as raw_amqp
from ..amqp.probe import raw_record
from ..broker.control import HeldQueue
from ..core.errors import BrokerError, CallNotEnded, CheckFailed, Lacking, NotProduced, PeerError, TemplateError
from ..peers.manifests import PeerSpec
from ..spec import assertions
from ..spec.catalogue import catalogue, mutants
from ..spec.steps import NOT_CHECKED_KEYS, template_paths
from . import grace

from .connection_steps import step_drop_connection, step_wait_recovered
from .node_steps import (await_stream, step_leader_move, step_no_loss, step_node_kill, step_node_start,
                         step_node_stop, step_rolling_restart, step_stream)
from .state import Opened

if TYPE_CHECKING:
    from ..peers.client import PeerLink, PendingCall
    from .state import CellState
# A step's run function takes the cell's `CellState` (run/state.py); the engine sits above
# these and runs them, and they never call the engine.

EVENT_SLICE_S = 0.25
STRETCH = 2.0  # a wait for several events still arriving at its bound goes on to this x the bound
GRACE_S = 10.0  # on top of a request's own timeout, for the peer's bookkeeping
DEFAULT_TIMEOUT_MS = 30000  # RR-9.3: a request given no timeout
DEFAULT_WAIT_MS = 5000


def _mutant_for(spec: PeerSpec, op: str) -> str | None:
    """Only the side a mutant acts on is given it (the catalogue says which): of a spec with
    several (`go+native-only+native-first`), the one acting on `op`, or None."""
    known = mutants()
    return next((name for name in spec.mutants if name not in known or known[name].acts_on == op), None)


# -- steps ------------------------------------------------------------------------


def _step_queue(state: CellState, args: dict[str, Any]) -> None:
    probe = state.get_probe()
    name = probe.declare_queue(state.name(args["name"]), args.get("type", "quorum"))
    state.declared_queues.add(name)
    if "bind" in args:
        probe.bind(name, state.name(args["bind"]["exchange"]), args["bind"].get("routing_key", ""))


def _step_exchange(state: CellState, args: dict[str, Any]) -> None:
    state.get_probe().declare_exchange(state.name(args["name"]), args["type"])
    state.declared_exchanges.add(state.name(args["name"]))


def _step_pause(state: CellState, args: dict[str, Any]) -> None:
    # Part of a procedure (a reply sent late in a budget), never a wait for something to happen.
    time.sleep(args["ms"] / 1000)
    state.clock.waited("pause", args["ms"] / 1000)


def _step_hold_queue(state: CellState, args: dict[str, Any]) -> None:
    queue = state.queue_name(args["queue"])
    # The key: an exclusive queue on the probe's connection, whose deletion releases the hold
    # at once, and whose connection's end releases it whatever becomes of the cell.
    key = state.get_probe().declare_queue(state.name(f"hold-key.{len(state.held)}"), "classic", exclusive=True)
    # The hold is bounded on the broker: what the scenario publishes under it must not wait
    # for the probe's publishing connection to open (under load its handshake took 5 s).
    state.get_probe().connect_publisher()
    state.ctx.broker_control.hold(state.ctx.vhost, queue, key)
    state.held.append(HeldQueue(queue, key))
    state.note("hold_queue", queue=queue)


def _step_release_queue(state: CellState, args: dict[str, Any]) -> None:
    queue = state.queue_name(args["queue"])
    for held in [h for h in state.held if h.queue == queue]:
        state.release(held)  # one that ran long is weighed at the cell's end (state.long_holds)
    state.note("release_queue", queue=queue)


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
        queue = assertions.render(args["queue"], {**state.variables, "index": index + 1, "peer": f"{spec.name}-{index + 1}"})
        bind = None
        if "bind" in args:
            bind = {"exchange": state.name(args["bind"]["exchange"]), "routing_key": args["bind"].get("routing_key", "")}
        queue = queue if args["queue"].startswith("${") else state.name(queue)
        try:
            peer.start_responder(name, queue, args.get("behavior", {"reply": "echo"}), spec.profile,
                                 _mutant_for(spec, "responder.start"), bind, args.get("max_attempts"), note=state.noter(peer),
                                 connection_name=state.connection_name(name), **_first_node(state, args))
        except PeerError as exc:
            if not _refused_declaration(str(exc)):
                raise
            _judge_declaration(state, args, spec, queue, str(exc))
            return
        state.opened.append(Opened(peer, "responder.stop", name))
        state.declared_by.setdefault(queue, args["role"])
        state.declared_queues.update((queue, f"{queue}.dlq"))  # what a responder declares (RR-17)
        names.append(name)
        state.owners[name] = (peer, name)
    state.owners[args["as"]] = state.owners[names[0]]
    state.variables[args["as"]] = {"name": names[0], "names": names, "count": len(names)}


# How the broker refuses a declaration that differs from the queue's (AMQP 406): a responder
# whose request queue is not the durable quorum queue RR-17.1 asks for, or that meets one.
_DECLARATION_REFUSALS = ("PRECONDITION_FAILED", "inequivalent arg")


def _refused_declaration(error: str) -> bool:
    return any(sign in error for sign in _DECLARATION_REFUSALS)


def _judge_declaration(state: CellState, args: dict[str, Any], spec: PeerSpec, queue: str, error: str) -> None:
    """A responder.start the broker refused because the queue exists with other arguments:
    RR-17.1 is broken by whoever declared the queue otherwise than as a durable quorum queue.
    The management API says what the queue is: a durable quorum queue means the refused
    responder asked for something else; anything else means the responder that declared it
    first in the cell did. The responder never started: what needs it is not evaluated."""
    facts = state.ctx.management.queue(state.ctx.vhost, queue) or {}
    state.note("declaration_refused", queue=queue, peer=spec.label, error=error, facts=facts)
    kept = facts.get("type") == "quorum" and bool(facts.get("durable"))
    role = args["role"] if kept else state.declared_by.get(queue)
    if role is None:  # declared by the probe, or by nobody the cell knows: not a binding's break
        raise PeerError(f"peer '{spec.name}' refused responder.start: {error}")
    state.declaration_refusals.add(queue)
    state.fail(CheckFailed("RR-17.1", f"{queue} is declared a durable quorum queue by every responder",
                           expected={"type": "quorum", "durable": True},
                           observed={"type": facts.get("type"), "durable": facts.get("durable"), "refused": error}),
               f"step {state.step_index + 1} responder {args['as']}: the broker refused a declaration of {queue}",
               role=role)
    state.unavailable[str(args["as"])] = f"RR-17.1: the responder did not start ({error})"
    state.halted = f"needs responder {args['as']}, which did not start (RR-17.1: {queue} declared otherwise)"


def _first_node(state: CellState, args: dict[str, Any]) -> dict[str, Any]:
    """On a cluster, a role given `node: B` is sent the nodes' URLs from B's on."""
    if "node" not in args or len(state.ctx.amqp_urls) < 2:
        return {}
    from ..broker.cluster import LETTERS

    index = LETTERS.index(args["node"]) % len(state.ctx.amqp_urls)
    state.note("node", of=args["as"], first=args["node"])
    return {"amqp_urls": state.ctx.amqp_urls[index:] + state.ctx.amqp_urls[:index]}


def _step_requester(state: CellState, args: dict[str, Any]) -> None:
    spec = state.spec_of(args["role"])
    peer = state.ctx.peers[spec.name]
    name = state.name(args["as"])
    answer = peer.open_requester(name, spec.profile, _mutant_for(spec, "requester.open"), note=state.noter(peer),
                                 connection_name=state.connection_name(name), **_first_node(state, args))
    state.opened.append(Opened(peer, "requester.close", name))
    state.owners[args["as"]] = (peer, name)
    bound: dict[str, Any] = {"name": name}
    reply_queue = answer.get("reply_queue")
    if isinstance(reply_queue, str) and reply_queue:
        # Optional in the protocol: a binding that does not tell its reply queue leaves the
        # checks reading it "not evaluated", never a harness error.
        bound["reply_queue"] = reply_queue
    state.variables[args["as"]] = bound


def _target(state: CellState, args: dict[str, Any]) -> tuple[str, str]:
    if "queue" in args:
        return "", state.queue_name(args["queue"])
    exchange = args.get("exchange", "")
    return (state.name(exchange) if exchange else ""), assertions.render(args.get("routing_key", ""), state.variables)


def _started(state: CellState, args: dict[str, Any], peer: PeerLink, call: PendingCall, timeout_ms: int) -> None:
    # The call's deadline runs from when it was sent, not from its await: a call awaited
    # after another that took long is held to its own timeout all the same.
    # A call given no timeout is waited for twice the default: one that ends late is told from
    # one that never ends (a late timer, RR-9.6, from no default at all, RR-9.3).
    wait_s = timeout_ms / 1000 + GRACE_S if "timeout_ms" in args else 2 * DEFAULT_TIMEOUT_MS / 1000
    state.pending[args["as"]] = (peer, call, time.monotonic() + wait_s, bool(args.get("refusal_expected")))
    if not args.get("async"):
        _await(state, args["as"])


def _step_request(state: CellState, args: dict[str, Any]) -> None:
    exchange, routing_key = _target(state, args)
    peer, requester = state.owners[args["requester"]]
    # Where and when it went, for reading its path on the broker's transcript afterwards.
    state.calls[args["as"]] = {"t": round(time.monotonic() - state.variables["_t0"], 3), "exchange": exchange,
                               "routing_key": routing_key}
    call = peer.request(requester, exchange, routing_key, assertions.render(args["body"], state.variables),
                        args.get("timeout_ms"), note=state.noter(peer), message_type=args.get("type"))
    _started(state, args, peer, call, args.get("timeout_ms", DEFAULT_TIMEOUT_MS))


def _step_gather(state: CellState, args: dict[str, Any]) -> None:
    peer, requester = state.owners[args["requester"]]
    multi = args["mode"] == "multi"
    rendered = {key: assertions.render(args[key], state.variables) for key in ("correlation_id", "expected_reply_count") if key in args}
    count = rendered.get("expected_reply_count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        # A template can name any value; a peer handed a string or a list may crash on it.
        raise TemplateError(f"expected_reply_count {args['expected_reply_count']} is {assertions.shown(count)!r}, not a count of at least 1")
    call = peer.gather(requester, args["mode"], assertions.render(args["body"], state.variables), args["timeout_ms"],
                       endpoint=state.queue_name(args["endpoint"]) if multi else None,
                       exchange=None if multi else state.name(args["exchange"]), note=state.noter(peer),
                       message_type=args.get("type"), **rendered)
    _started(state, args, peer, call, args["timeout_ms"])


# The clause a call breaks that has not ended within its timeout plus the grace: the upper
# bound of a request's timeout (RR-9.6) or a gather's (SG-9.1); a request given no timeout,
# the 30 s default (RR-9.3). Whether it ends later or never, it did not end when it had to.
def _unended_clause(command: dict[str, Any]) -> str:
    if command.get("op") == "gather":
        return "SG-9.1"
    return "RR-9.6" if command.get("timeout_ms") is not None else "RR-9.3"  # no timeout given: the default's


def _await(state: CellState, name: str) -> None:
    peer, call, deadline, refusal_expected = state.pending.pop(name)
    timeout = call.command.get("timeout_ms")
    within = f"its timeout ({timeout} ms)" if timeout is not None else "the default timeout (30 s)"
    limit_ms = (timeout if timeout is not None else DEFAULT_TIMEOUT_MS) + GRACE_S * 1000
    waited_s = limit_ms / 1000 if timeout is not None else 2 * DEFAULT_TIMEOUT_MS / 1000
    try:
        with state.waiting("call"):
            answer = call.wait(max(0.0, deadline - time.monotonic()), abort=lambda: _broken(state))
    except CallNotEnded as exc:
        # The peer still answers other commands: its binding's call did not end when its
        # timeout said it must (late, or never: the harness stops waiting here).
        call.cancel()
        clause = _unended_clause(call.command)
        state.note("answer", peer=peer.name, of=name, never_ended=str(exc))
        state.fail(CheckFailed(clause, f"{name} ends within {within} plus {GRACE_S:.0f}s",
                               expected=f"an outcome within {limit_ms / 1000:.1f}s of the call",
                               observed=f"no outcome {waited_s:.1f}s after the call was made"),
                   f"step {state.step_index + 1} await {name}", role=state.cell.scenario.name_roles.get(name), direct=True)
        state.unavailable[name] = f"{clause}: the call had not ended {limit_ms / 1000:.1f}s after it was made"
        return
    state.note("answer", peer=peer.name, of=name, answer=answer)
    if not isinstance(answer, dict):
        raise PeerError(f"peer '{peer.name}' answered {call.command['op']} '{name}' with {answer!r}, not an object")
    _gather_resolved_short(state, name, call.command, answer)
    elapsed = answer.get("elapsed_ms")
    if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and elapsed > limit_ms:
        # Ended, but by its own measure later than its timeout and the grace allow (an answer
        # already there when a slow earlier await let this one be read).
        clause = _unended_clause(call.command)
        state.fail(CheckFailed(clause, f"{name} ends within {within} plus {GRACE_S:.0f}s",
                               expected=f"elapsed_ms <= {limit_ms:.0f}", observed=elapsed),
                   f"step {state.step_index + 1} await {name}", role=state.cell.scenario.name_roles.get(name))
    if not answer.get("ok") and not refusal_expected:
        # A call the binding ended with an error of its own: an outcome the checks judge
        # (a timeout surfaced as a refusal FAILs the timeout clause); unjudged, an ERROR.
        timeout = call.command.get("timeout_ms", 30000)
        state.refused[name] = (f"{answer.get('error')} (a {call.command.get('op')} with a {timeout} ms timeout; if this "
                               f"error is the binding's timeout, its adapter must answer outcome `timeout` (or "
                               f"`timeout_with_partial`), not ok: false: docs/peer-protocol.md, Outcomes)")
    state.variables[name] = answer if answer.get("ok") else {**answer, "outcome": "refused"}


def _gather_resolved_short(state: CellState, name: str, command: dict[str, Any], answer: dict[str, Any]) -> None:
    """A gather given a count that resolved with fewer replies than that: the earliest thing the
    gatherer's own timeline shows, and the root of what the scenario's later checks see (a reply
    left over, a short partial, a stray counted). Before its timeout it resolved early (SG-5.1:
    it resolves when that many arrived, not before); at its timeout it resolved a shortfall it
    had to reject (SG-6.1). Judged here, at the answer, so the cell's first failure is the root."""
    count, timeout = command.get("expected_reply_count"), command.get("timeout_ms")
    replies, elapsed = answer.get("replies"), answer.get("elapsed_ms")
    if command.get("op") != "gather" or answer.get("outcome") != "replies" or not isinstance(replies, list) \
            or not isinstance(count, int) or isinstance(count, bool) or len(replies) >= count or not isinstance(timeout, int):
        return
    early = isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and elapsed < 0.9 * timeout
    clause = "SG-5.1" if early else "SG-6.1"
    when = f"after {elapsed:.0f} ms, before its {timeout} ms timeout" if early else f"at its {timeout} ms timeout instead of rejecting"
    state.fail(CheckFailed(clause, f"{name} resolved with {len(replies)} of its expectedReplyCount {count} replies {when}",
                           expected=f"{count} replies" if early else "timeout_with_partial",
                           observed=f"replies: {len(replies)} of {count}"),
               f"step {state.step_index + 1} await {name}: the gather's outcome", index=-1,
               role=state.cell.scenario.name_roles.get(name), direct=True)


def _broken(state: CellState) -> str | None:
    """Why waiting on in this cell is pointless: one of its peers broke, or lost a connection
    (one the broker closed for a declaration the cell judged, RR-17.1, is no fault of the run)."""
    lost = state.lost_connections()
    for spec in state.cell.specs():
        peer = state.ctx.peers[spec.name]
        if peer.fault is not None:
            return peer.fault
        if peer.events_since(state.event_marks.get(spec.name, 0), lost):
            return f"peer '{peer.name}' lost a connection of the cell"
    return None


def _step_await(state: CellState, args: Any) -> None:
    for name in args if isinstance(args, list) else [args]:
        if name in state.streams:
            await_stream(state, name)
        else:
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
    # `of` a responder step that started several (`count: N`) on one peer: any of them.
    bound = state.variables.get(args["of"])
    group = bound.get("names") if isinstance(bound, dict) else None
    names = {name} | {n for n in group or () if state.owners.get(n, (None, ""))[0] is peer}

    def match(event: dict[str, Any]) -> bool:
        return (
            event.get("event") == wanted
            and (event.get("responder") in names or event.get("requester") in names)
            and all(event.get(k) == v for k, v in where.items())
        )

    since = state.event_marks.get(peer.name, 0)
    started = time.monotonic()
    deadline = started + bound_s
    stretched = False
    while True:
        # In slices: a peer of the cell that broke or lost a connection ends the wait (the
        # engine names the cause), instead of the bound.
        with state.waiting("event"):
            found = peer.wait_events(match, count, min(EVENT_SLICE_S, max(0.0, deadline - time.monotonic())),
                                     since=since, stop=state.lost_connections())
        broken = _broken(state) if len(found) < count else None
        if len(found) >= count or broken is not None:
            break
        now = time.monotonic()
        if now >= deadline:
            if _still_arriving(found, count, bound_s, now) and now < started + STRETCH * bound_s:
                # Several events still coming in, the last within two even shares of the
                # bound: a binding slowed by load (or slow by nature) is not a binding that
                # stopped. The wait goes on while they keep coming, up to STRETCH x the bound;
                # a binding that stopped short stays silent and ends the wait at the bound.
                stretched = True
                deadline = min(now + EVENT_SLICE_S, started + STRETCH * bound_s)
                continue
            break
    state.note("wait_event", peer=peer.name, event=wanted, where=where, seen=len(found),
               **({"waited_s": round(time.monotonic() - started, 3)} if stretched else {}))
    if broken is not None:
        raise PeerError(broken)
    if not found and _silent(peer):
        _judge_silent_wait(state, args, peer, names, wanted, where, count)
        return
    if len(found) < count:
        waited = f" (and on while they still came: {time.monotonic() - started:.1f}s in all)" if stretched else ""
        raise CheckFailed(
            args["rule"],
            f"{count} '{wanted}' event(s) from {args['of']}{' with ' + json.dumps(where) if where else ''} within {bound_s:.1f}s{waited}",
            expected=count,
            observed=len(found),
        )
    if "as" in args:
        state.variables[args["as"]] = [{k: v for k, v in e.items() if k != "_at"} for e in found]


def _silent(peer: PeerLink) -> bool:
    """Whether a peer has written no event (but a connection_lost) since it started."""
    return not peer.events_since(0, lambda e: e.get("event") != "connection_lost")


def _judge_silent_wait(state: CellState, args: dict[str, Any], peer: PeerLink, names: set[str], wanted: str,
                       where: dict[str, Any], count: int) -> None:
    """A wait that saw no event from a peer that has written none since it started. Where the
    broker delivered the awaited requester or responder messages in this cell, its binding has
    no hooks (an undeclared lack, shown by its silence): a `handled` count is read off the
    wire instead (each delivery of a request is one handling), and any other event is judged
    as a lack of events (no clause needs a hook). With nothing delivered, or no transcript to
    read, the wait is the FAIL it always was."""
    tracer = state.ctx.tracer
    if tracer is None:
        raise _short_wait(args, wanted, where, count, 0)
    t0 = state.variables["_t0"]
    message_id = where.get("message_id") if isinstance(where.get("message_id"), str) else None
    queues = [q for n in sorted(names) for q in state.consumed_by(n)]
    delivered = sum(tracer.deliveries(state.ns, queue, t0 + opened, message_id) for queue, opened in queues)
    state.note("wait_event_silent_peer", peer=peer.name, event=wanted, delivered=delivered,
               queues=[q for q, _ in queues])
    if not delivered:
        raise _short_wait(args, wanted, where, count, 0)
    silence = (f"peer '{peer.name}' has written no event since it started, though the broker delivered "
               f"{delivered} message(s) to {args['of']} in this cell")
    if wanted != "handled":
        raise Lacking("events", silence)
    if delivered < count:
        raise CheckFailed(args["rule"], f"{count} handling(s) by {args['of']}: the binding has no hooks, and the broker's "
                                        f"deliveries, one per handling, number {delivered}", expected=count, observed=delivered)
    if "as" in args:
        state.unavailable[str(args["as"])] = f"lacks: events ({silence}); the wire shows {delivered} delivery(ies)"


def _short_wait(args: dict[str, Any], wanted: str, where: dict[str, Any], count: int, seen: int) -> CheckFailed:
    return CheckFailed(args["rule"],
                       f"{count} '{wanted}' event(s) from {args['of']}{' with ' + json.dumps(where) if where else ''} "
                       f"within {args.get('timeout_ms', DEFAULT_WAIT_MS) / 1000:.1f}s", expected=count, observed=seen)


def _still_arriving(found: list[dict[str, Any]], count: int, bound_s: float, now: float) -> bool:
    """Whether a wait for `count` events that has seen some is still seeing them come: the
    last came less than STRETCH x bound_s / count ago (bound_s / count is the pace that
    would have met the bound; a binding at half that pace is slow, not stopped)."""
    if count < 2 or not found:
        return False
    last = max((e["_at"] for e in found if "_at" in e), default=None)
    return last is not None and now - last < STRETCH * bound_s / count


def _short_string(value: Any, what: str, none_ok: bool = False) -> None:
    """What the probe writes as an AMQP short string (an exchange, a routing key, a property)
    must be one: a peer's answer can hand over any string (a `reply_queue` or `request_id`
    of 20000 bytes) and pika would raise mid-publish, a harness error. The step is left out
    instead, its checks not evaluated, saying why."""
    if value is None and none_ok:
        return
    if not isinstance(value, str) or len(value.encode("utf-8")) > 255:
        size = f" ({len(value.encode('utf-8'))} bytes)" if isinstance(value, str) else ""
        raise TemplateError(f"{what} to be an AMQP short string (text of at most 255 bytes), "
                            f"not {assertions.shown(value)!r:.80}{size}")


def _step_probe_publish(state: CellState, args: dict[str, Any]) -> None:
    probe = state.get_probe()
    rendered = assertions.render(args, state.variables)
    exchange, routing_key = _target(state, args)
    _short_string(exchange, "exchange")
    _short_string(routing_key, "routing_key")
    properties = dict(rendered.get("properties", {}))
    properties.setdefault("content_type", "application/json")
    for key, value in properties.items():
        _short_string(value, f"properties.{key}", none_ok=True)
    published = []
    for _ in range(args.get("repeat", 1)):
        props = dict(properties)
        props.setdefault("message_id", f"{state.ns}-{uuid.uuid4().hex[:12]}")
        if props["message_id"] is None:
            del props["message_id"]  # `message_id: null`: a caller that sends none (the tutorial's)
        if "body_text" in rendered:
            body = rendered["body_text"].encode("utf-8")
        else:
            body = json.dumps(rendered.get("body", {})).encode("utf-8")
        routed = probe.publish(exchange, routing_key, body, props, rendered.get("headers", {}))
        published.append({"message_id": props.get("message_id"), "routed": routed})
    state.note("probe_publish", exchange=exchange, routing_key=routing_key, published=published,
               properties=properties, headers={k: repr(v) for k, v in rendered.get("headers", {}).items()})
    if "as" in args:
        state.variables[args["as"]] = published[0] if len(published) == 1 else {"messages": published}


def _step_probe_direct_request(state: CellState, args: dict[str, Any]) -> None:
    """The probe as a direct reply-to caller: consume amq.rabbitmq.reply-to (no-ack) and
    publish the request on that same channel; `gone` closes the channel after the publish."""
    probe = state.get_probe()
    rendered = assertions.render(args, state.variables)
    routing_key = state.queue_name(args["queue"])
    properties = dict(rendered.get("properties", {}))
    properties.setdefault("content_type", "application/json")
    properties.setdefault("message_id", f"{state.ns}-{uuid.uuid4().hex[:12]}")
    if properties["message_id"] is None:
        del properties["message_id"]
    for key, value in properties.items():
        _short_string(value, f"properties.{key}")
    if "body_text" in rendered:
        body = rendered["body_text"].encode("utf-8")
    else:
        body = json.dumps(rendered.get("body", {})).encode("utf-8")
    channel = probe.direct_request(routing_key, body, properties, rendered.get("headers", {}), gone=bool(args.get("gone")))
    state.note("probe_direct_request", routing_key=routing_key, properties=properties, channel=channel,
               gone=bool(args.get("gone")), headers={k: repr(v) for k, v in rendered.get("headers", {}).items()})
    state.variables[args["as"]] = {"message_id": properties.get("message_id"),
                                   "correlation_id": properties.get("correlation_id"), "channel": channel}


def _step_probe_direct_replies(state: CellState, args: dict[str, Any]) -> None:
    channel = state.variables[args["of"]]["channel"]
    with state.waiting("direct replies"):
        replies = state.get_probe().direct_replies(channel, args["timeout_ms"] / 1000)
    state.note("probe_direct_replies", channel=channel, got=replies)
    state.variables[args["as"]] = replies


def _step_probe_reply(state: CellState, args: dict[str, Any]) -> None:
    """The probe answers a request it took (`request:`) the way a responder must: to the
    requester's reply queue, correlation_id and responseMessageId set to its message_id."""
    message_id = assertions.lookup(state.variables, f"{args['request']}.properties.message_id")
    if assertions.is_missing(message_id) or message_id in (None, ""):
        # A request with no message_id cannot be answered so that its caller finds the reply:
        # that is the requester's RR-8.1, not a gap of the scenario.
        requester_role = state.cell.scenario.name_roles.get(args["requester"])
        state.fail(CheckFailed("RR-8.1", f"{args['request']}.properties.message_id is present (a reply finds its caller by it)",
                               expected="a message_id", observed=assertions.shown(message_id)),
                   f"step {state.step_index + 1} probe_reply: {args['request']}.properties.message_id", role=requester_role)
        raise TemplateError(f"{args['request']}.properties.message_id (the request has none)")
    reply_queue = assertions.lookup(state.variables, f"{args['requester']}.reply_queue")
    if args.get("to") == "request" or assertions.is_missing(reply_queue):
        # Asked to (`to: request`), or the requester did not say which queue it declared:
        # answer where the request says, as a responder would (the header first, then reply_to).
        for where in ("headers.acemq-reply-to", "properties.reply_to"):
            found = assertions.lookup(state.variables, f"{args['request']}.{where}")
            if isinstance(found, str) and found:
                reply_queue = found
                break
        else:
            raise TemplateError(f"${{{args['requester']}.reply_queue}} names nothing and {args['request']} carries no reply address")
    publish: dict[str, Any] = {
        "routing_key": reply_queue,
        "properties": {"correlation_id": args.get("correlation_id", message_id)},
        "headers": {**args.get("headers", {}), "responseMessageId": message_id},
    }
    for key in ("body", "body_text", "as"):
        if key in args:
            publish[key] = args[key]
    _step_probe_publish(state, publish)


POLL_S = 0.02  # how often a bounded wait on a broker or peer fact looks again


def _raw_getter(state: CellState) -> tuple[Callable[[str, float], dict[str, Any] | None], Callable[[], None]]:
    """A `get(queue, bound_s)` through the raw client, which keeps header type codes (WF-2),
    and its close: one connection for one step."""
    connection = raw_amqp.RawConnection(state.ctx.amqp_url, connection_name=f"acemq-interop probe {state.ns} (raw)", ca_file=state.ctx.ca_file)
    try:
        connection.open()
    except raw_amqp.RawAmqpError as exc:
        raise BrokerError(f"the raw probe could not connect: {exc}") from exc
    state.probe_connections += [connection.local_address] if connection.local_address else []

    def get(queue: str, bound_s: float) -> dict[str, Any] | None:
        try:
            message = connection.get_within(queue, bound_s, POLL_S)
        except raw_amqp.RawAmqpError as exc:
            raise BrokerError(f"the raw probe could not take a message off {queue}: {exc}") from exc
        return None if message is None else raw_record(message)

    return get, connection.close


def _obliged_queue(state: CellState, queue: str, kind: str) -> None:
    """Before the probe reads `{queue}.dlq` of a responder the cell started: the queue RR-17.2
    obliges that responder to declare before it subscribes must be there. Asked without risk
    to the probe's channel (a passive declare; a 404 closes only the channel it ran on). A
    missing one is the responder's RR-17.2 (once a cell), and the step is judged as a lack of
    dead-lettering: the checks that needed the queue's contents are not evaluated."""
    base = queue[: -len(".dlq")] if queue.endswith(".dlq") else None
    role = state.declared_by.get(base) if base else None
    if role is None or state.get_probe().depth(queue) is not None:
        return
    if not any(f.clause == "RR-17.2" and f.role == role for f in state.failures):
        state.fail(CheckFailed("RR-17.2", f"{queue} is declared (a durable quorum queue) before the responder subscribes",
                               expected={"exists": True, "type": "quorum", "durable": True}, observed={"exists": False}),
                   f"step {state.step_index + 1} {kind}: {queue} (passive declare: 404 NOT_FOUND)", index=-1, role=role,
                   direct=True)
    raise Lacking("dead_lettering", f"{queue} does not exist: the peer playing {role} never declared it", role=role)


def _step_probe_get(state: CellState, args: dict[str, Any]) -> None:
    _obliged_queue(state, state.queue_name(args["queue"]), "probe_get")
    if args.get("wire_types"):
        get, close = _raw_getter(state)
    else:
        get, close = state.get_probe().get, lambda: None
    try:
        _probe_get(state, args, get)
    finally:
        close()


def _probe_get(state: CellState, args: dict[str, Any], get: Callable[[str, float], dict[str, Any] | None]) -> None:
    queue = state.queue_name(args["queue"])
    bound_s = args.get("timeout_ms", DEFAULT_WAIT_MS) / 1000
    if args.get("absent"):
        with state.waiting("nothing arrives"):
            got = get(queue, bound_s)
        state.note("probe_get", queue=queue, absent_expected=True, got=got)
        if got is not None:
            raise CheckFailed(args["rule"], f"no message on {queue} within {bound_s:.1f}s", expected="nothing", observed=got)
        state.variables[args["as"]] = None
        return
    records = []
    for _ in range(args.get("count", 1)):
        with state.waiting("message"):
            got = get(queue, bound_s)
        if got is None:
            break
        records.append(got)
    state.note("probe_get", queue=queue, got=records)
    if len(records) < args.get("count", 1):
        message = f"{args.get('count', 1)} message(s) on {queue} within {bound_s:.1f}s"
        if "rule" in args:
            raise CheckFailed(args["rule"], message, expected=args.get("count", 1), observed=len(records))
        raise NotProduced(f"expected {message}; got {len(records)}")
    state.variables[args["as"]] = records[0] if "count" not in args else records


def _step_probe_count(state: CellState, args: dict[str, Any]) -> None:
    """Waits (bounded) until the queue holds `messages` ready messages (and `consumers`
    consumers, when given), as a passive queue.declare counts them: the broker decides."""
    probe = state.get_probe()
    queue = state.queue_name(args["queue"])
    _obliged_queue(state, queue, "probe_count")
    bound_s = args.get("timeout_ms", DEFAULT_WAIT_MS) / 1000
    wanted = {"messages": args["messages"], **({"consumers": args["consumers"]} if "consumers" in args else {})}
    deadline = time.monotonic() + bound_s
    while True:
        depth = probe.depth(queue)
        seen: dict[str, Any] = {"exists": False} if depth is None else {"messages": depth[0], "consumers": depth[1]}
        if all(seen.get(k) == v for k, v in wanted.items()) or time.monotonic() >= deadline:
            break
        with state.waiting("queue depth"):
            time.sleep(POLL_S)
    state.note("probe_count", queue=queue, wanted=wanted, seen=seen)
    if not all(seen.get(k) == v for k, v in wanted.items()):
        what = " and ".join(f"{v} {k}" for k, v in wanted.items())
        raise CheckFailed(args["rule"], f"{what} on {queue} within {bound_s:.1f}s", expected=wanted, observed=seen)
    if "as" in args:
        state.variables[args["as"]] = seen


def _step_wait_counters(state: CellState, args: dict[str, Any]) -> None:
    """Reads a requester's or responder's counters until each named one has its value (bounded).

    For a count the spec says must come to be, read where no instant matters: a counter that
    is late (RR-15) gets there, one that never counts (RR-16) does not; the peer decides."""
    peer, name = state.owners[args["of"]]
    until = assertions.render(args["until"], state.variables)
    bound_s = args.get("timeout_ms", DEFAULT_WAIT_MS) / 1000
    deadline = time.monotonic() + bound_s
    reads = 0
    while True:
        counters = peer.counters(name)
        reads += 1
        if all(counters.get(k) == v for k, v in until.items()) or time.monotonic() >= deadline:
            break
        with state.waiting("counters"):
            time.sleep(POLL_S)
    state.note("wait_counters", peer=peer.name, of=name, until=until, counters=counters, reads=reads)
    wrong = {k: counters.get(k, assertions.ABSENT) for k, v in until.items() if counters.get(k) != v}
    if wrong:
        raise CheckFailed(args["rule"], f"counters of {args['of']} reach {json.dumps(until)} within {bound_s:.1f}s",
                          expected=until, observed=wrong)
    if "as" in args:
        state.variables[args["as"]] = counters


def _step_queue_facts(state: CellState, args: dict[str, Any]) -> None:
    queue = state.queue_name(args["queue"])
    if not isinstance(queue, str) or not queue:
        # A template can name a value that is no queue name (a request's reply_to of None):
        # urllib cannot quote None (a TypeError), and an empty name asks the API for every
        # queue. There is no queue to ask about: the step is not run, its checks not evaluated.
        raise TemplateError(f"queue {args['queue']} to name a queue, not {assertions.shown(queue)!r:.80}")
    facts = state.ctx.management.queue(state.ctx.vhost, queue)
    state.note("queue_facts", queue=queue, facts=facts)
    state.variables[args["as"]] = {**facts, "exists": True} if facts is not None else {"exists": False}


def _step_stop_responder(state: CellState, name: str) -> None:
    names = set(state.variables[name]["names"])
    for opened in [o for o in state.opened if o.op == "responder.stop" and o.name in names]:
        opened.peer.stop_responder(opened.name, note=state.noter(opened.peer))
        state.opened.remove(opened)


def _step_close_requester(state: CellState, name: str) -> None:
    peer, peer_name = state.owners[name]
    # Closing is the binding's own behaviour under test: a close its binding fails (an error
    # of its client) or never returns from (the peer still answers other commands: the close
    # hangs in the binding) is evidence, and the calls it left pending are judged by their
    # outcomes (RR-9.5), never an ERROR of the cell by itself.
    try:
        answer = peer.close_requester(peer_name, check=False, note=state.noter(peer))
    except CallNotEnded as exc:
        state.note("close_never_ended", peer=peer.name, requester=name, error=str(exc))
        # Not closed again at cleanup: that close would hang the same way.
        state.opened = [o for o in state.opened if not (o.op == "requester.close" and o.name == peer_name)]
        return
    if not answer.get("ok"):
        state.note("close_refused", peer=peer.name, requester=name, error=answer.get("error"))
        return
    state.opened = [o for o in state.opened if not (o.op == "requester.close" and o.name == peer_name)]


def lack_failure(state: CellState, role: str, part: str, clause: str, check: str, sub: int | None = None,
                 evidence: str | None = None) -> None:
    """A check of the peer whose binding has no `part` (declared in hello `lacks`, or shown by
    its own answer: `evidence`): a FAIL when the part's absence itself breaks the clause (the
    catalogue's `parts`: a MUST that something be counted, dead-lettered, declared), else not
    evaluated: a binding without counters cannot count wrongly, and one without a dead-letter
    queue writes no dead-letter to judge."""
    known = catalogue().parts.get(part)
    shown = evidence if evidence is not None and not evidence.startswith("declared:") else None
    if known is not None and clause not in known.breaks:
        why = f"the binding of {role} has no {part}, so it cannot be judged on {clause}"
        state.skip(clause, check, f"lacks: {why} ({shown.removeprefix('lacks: ')})" if shown else f"declared: {why}")
        return
    if shown:
        failed = CheckFailed(clause, f"the binding has no {part} ({shown.removeprefix('lacks: ')}): {clause} cannot be met",
                             expected=part, observed="lacking")
    else:
        failed = CheckFailed(clause, f"the binding declares no {part} (hello lacks): {clause} cannot be met",
                             expected=part, observed="declared lacking")
    if sub is None:
        state.fail(failed, check, role=role, direct=True)
    else:
        state.fail(failed, check, sub=sub, direct=True)


# What a call's answer must say for a later step to use it, and the clause each stands for:
# `request_id` is the message_id the request went out with (RR-8.1), a gather's requestMessageId
# (SG-1.1). A peer that does not give it FAILs that clause once, charged to the caller; the
# checks needing it are not evaluated.
ANSWER_FIELDS = {("request", "request_id"): "RR-8.1", ("gather", "request_id"): "SG-1.1"}


def unreported(state: CellState, path: str | None) -> None:
    head, _, rest = (path or "").partition(".")
    field = rest.split(".")[0]
    answer = state.variables.get(head)
    if not isinstance(answer, dict) or not answer.get("ok") or field in answer:
        return
    op = next((step.kind for step in state.cell.scenario.steps if step.bound_name == head), None)
    clause = ANSWER_FIELDS.get((op, field)) if op else None
    if clause is None or any(f.check.endswith(f"{head}.{field} (unreported)") for f in state.failures):
        return
    state.fail(CheckFailed(clause, f"{head}.{field} is given: the peer's answer does not say the id its "
                                   f"{op} went out with", expected=f"{head}.{field}", observed=assertions.ABSENT),
               f"step {state.step_index + 1}: {head}.{field} (unreported)", index=-1,
               role=state.cell.scenario.name_roles.get(head))


# The outcomes only a reply makes: a check expecting one reads the reply's whole path (the
# request, the responder, the reply), so a failure of it may be any side's on the wire.
_REPLY_OUTCOMES = frozenset({"reply", "responder_failed", "decode_error"})


def _reads_the_reply(expectation: dict[str, Any]) -> bool:
    """Whether a check of a call needs its reply: its outcome expected to be one a reply makes,
    or a part of the reply or failure read. A check expecting `timeout`, `closed` or `refused`
    judges the requester alone."""
    head, _, rest = str(expectation["that"]).partition(".")
    if rest == "outcome":
        wanted = expectation.get("equals", expectation.get("one_of"))
        return bool(set(wanted if isinstance(wanted, list) else [wanted]) & _REPLY_OUTCOMES)
    return rest.split(".")[0] in ("reply", "failure")


# A check of a header's AMQP type (`reply.header_types.acemq-error`, `m.wire_types.x`).
_TYPE_PATH = re.compile(r"(^|\.)(?:header_types|wire_types)\.([^.]+)$")


def _step_expect(state: CellState, args: list[dict[str, Any]]) -> None:
    """Every check of the list, each on its own: a failure is recorded and the next one is
    judged; a check reading what an earlier step could not produce, or a value an earlier
    check found broken, is "not evaluated"."""
    state.variables[assertions.GRACE_VARIABLE] = grace.of_trace(state.trace, since=state.variables.get("_t0"))
    for sub, expectation in enumerate(args):
        that = expectation["that"]
        clause = str(expectation.get("consequence_of") or expectation["rule"])
        described = f"step {state.step_index + 1} expect: {that}"
        why = state.blocked([that, *template_paths(expectation, NOT_CHECKED_KEYS)])
        typed = _TYPE_PATH.search(that)
        if why is None and typed and assertions.missing(assertions.lookup(state.variables, that)):
            # The type of a header that is not there: its absence is the clause that requires
            # the header (RR-1.2, RR-10.1, SG-3.1...), judged by its own check, not a type.
            why = f"needs header {typed.group(2)}, which the message does not carry"
        failure = None
        if why is None:
            try:
                failure = assertions.check(expectation, state.variables)
            except TemplateError as exc:
                why = f"needs {exc}"
                unreported(state, exc.path)
        head = that.split(".")[0]
        if why is not None and head in state.lacking_names and state.lacking_names[head][0] == \
                state.cell.scenario.charges.get((state.step_index, sub)):
            # The peer this check judges said it has no such part: the clause is not met.
            role, part = state.lacking_names[head]
            state.note("expect", that=that, rule=expectation["rule"], ok=False, not_evaluated=why)
            lack_failure(state, role, part, clause, described, sub=sub, evidence=state.unavailable.get(head))
            continue
        if why is not None:
            state.note("expect", that=that, rule=expectation["rule"], ok=None, not_evaluated=why)
            state.skip(clause, described, why)
            continue
        state.note("expect", that=that, rule=expectation["rule"], ok=failure is None,
                   **({"consequence_of": expectation["consequence_of"]} if "consequence_of" in expectation else {}),
                   observed=assertions.shown(assertions.lookup(state.variables, that)) if failure else None)
        if failure is not None:
            state.fail(failure, f"{described} {failure.message}", sub=sub,
                       seen_by=state.cell.scenario.name_roles.get(that.split(".")[0]))
            if that.split(".")[0] in state.calls and _reads_the_reply(expectation):
                state.call_checks[len(state.failures) - 1] = that.split(".")[0]
            state.refused.pop(that.split(".")[0], None)  # a refused call, judged
            state.spoil(that, failure.rule)
            for guarded in expectation.get("guards", ()):  # what this failure explains downstream
                state.spoil(str(guarded), f"{failure.rule}: {that}")
            head, _, rest = that.partition(".")
            if rest == "outcome":  # the wrong outcome: the rest of the answer is another shape
                state.spoil(head, f"{failure.rule}: {head}.outcome")
        elif that.split(".")[0] in state.refused and that.endswith(".outcome"):
            state.refused.pop(that.split(".")[0], None)


# Every step kind's run function, by the kind's name (a test holds it to the registry).
RUNS: dict[str, Callable[["CellState", Any], None]] = {
    "await": _step_await,
    "close_requester": _step_close_requester,
    "counters": _step_counters,
    "drop_connection": step_drop_connection,
    "no_loss": step_no_loss,
    "node_kill": step_node_kill,
    "node_start": step_node_start,
    "node_stop": step_node_stop,
    "rolling_restart": step_rolling_restart,
    "leader_move": step_leader_move,
    "stream": step_stream,
    "exchange": _step_exchange,
    "expect": _step_expect,
    "gather": _step_gather,
    "hold_queue": _step_hold_queue,
    "pause": _step_pause,
    "probe_count": _step_probe_count,
    "probe_direct_replies": _step_probe_direct_replies,
    "probe_direct_request": _step_probe_direct_request,
    "probe_get": _step_probe_get,
    "probe_inbox": _step_probe_inbox,
    "probe_publish": _step_probe_publish,
    "probe_reply": _step_probe_reply,
    "queue": _step_queue,
    "queue_facts": _step_queue_facts,
    "release_queue": _step_release_queue,
    "request": _step_request,
    "requester": _step_requester,
    "responder": _step_responder,
    "stop_responder": _step_stop_responder,
    "wait_counters": _step_wait_counters,
    "wait_event": _step_wait_event,
    "wait_recovered": step_wait_recovered,
}
