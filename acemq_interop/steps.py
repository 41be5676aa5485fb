"""One definition per step kind: its schema, what it binds and uses, what it needs and asserts, how it runs.

Everything that knows a step kind reads it here: the scenario loader (the JSON schema, the
capability each role needs, the names bound before use, the rules a step may check), the
engine (the run function), scenarios/scenario.schema.json and docs/scenarios.md's step
table (both generated from this registry: `python -m acemq_interop.steps` rewrites them,
and a test checks they are current).
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from . import assertions, raw_amqp
from .catalogue import mutants
from .errors import BrokerError, CheckFailed, PeerError, TemplateError
from .manifests import PeerSpec
from .probe import TYPE_WORDS, raw_record

if TYPE_CHECKING:
    from .peer_client import PeerLink, PendingCall
# A step's run function takes the engine's `CellState` (named as a string, not imported:
# the engine sits above this registry and runs it; the registry never calls the engine).

@dataclass
class Opened:
    """A requester or responder a cell opened: closed at the cell's end unless a step closed it."""

    peer: "PeerLink"
    op: str  # the command that closes it: requester.close | responder.stop
    name: str


GRACE_S = 10.0  # on top of a request's own timeout, for the peer's bookkeeping
DEFAULT_WAIT_MS = 5000


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
        queue = assertions.render(args["queue"], {**state.variables, "index": index + 1, "peer": f"{spec.name}-{index + 1}"})
        bind = None
        if "bind" in args:
            bind = {"exchange": state.name(args["bind"]["exchange"]), "routing_key": args["bind"].get("routing_key", "")}
        peer.start_responder(name, queue if args["queue"].startswith("${") else state.name(queue), args.get("behavior", {"reply": "echo"}), spec.profile,
                             _mutant_for(spec, "responder.start"), bind, args.get("max_attempts"), note=state.noter(peer))
        state.opened.append(Opened(peer, "responder.stop", name))
        names.append(name)
        state.owners[name] = (peer, name)
    state.owners[args["as"]] = state.owners[names[0]]
    state.variables[args["as"]] = {"name": names[0], "names": names, "count": len(names)}


def _step_requester(state: CellState, args: dict[str, Any]) -> None:
    spec = state.spec_of(args["role"])
    peer = state.ctx.peers[spec.name]
    name = state.name(args["as"])
    answer = peer.open_requester(name, spec.profile, _mutant_for(spec, "requester.open"), note=state.noter(peer))
    state.opened.append(Opened(peer, "requester.close", name))
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
                        args.get("timeout_ms"), note=state.noter(peer), message_type=args.get("type"))
    _started(state, args, peer, call, args.get("timeout_ms", 30000))


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


def _step_probe_reply(state: CellState, args: dict[str, Any]) -> None:
    """The probe answers a request it took (`request:`) the way a responder must: to the
    requester's reply queue, correlation_id and responseMessageId set to its message_id."""
    message_id = assertions.lookup(state.variables, f"{args['request']}.properties.message_id")
    if assertions.is_missing(message_id):
        raise TemplateError(f"${{{args['request']}.properties.message_id}} names nothing")
    reply_queue = assertions.lookup(state.variables, f"{args['requester']}.reply_queue")
    if assertions.is_missing(reply_queue):
        raise TemplateError(f"${{{args['requester']}.reply_queue}} names nothing")
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
    connection = raw_amqp.RawConnection(state.ctx.amqp_url, connection_name="acemq-interop probe (raw)", ca_file=state.ctx.ca_file)
    try:
        connection.open()
    except raw_amqp.RawAmqpError as exc:
        raise BrokerError(f"the raw probe could not connect: {exc}") from exc

    def get(queue: str, bound_s: float) -> dict[str, Any] | None:
        try:
            message = connection.get_within(queue, bound_s, POLL_S)
        except raw_amqp.RawAmqpError as exc:
            raise BrokerError(f"the raw probe could not take a message off {queue}: {exc}") from exc
        return None if message is None else raw_record(message)

    return get, connection.close


def _step_probe_get(state: CellState, args: dict[str, Any]) -> None:
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
        got = get(queue, bound_s)
        state.note("probe_get", queue=queue, absent_expected=True, got=got)
        if got is not None:
            raise CheckFailed(args.get("rule", "RR-1"), f"no message on {queue} within {bound_s:.1f}s", expected="nothing", observed=got)
        state.variables[args["as"]] = None
        return
    records = []
    for _ in range(args.get("count", 1)):
        got = get(queue, bound_s)
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


def _step_probe_count(state: CellState, args: dict[str, Any]) -> None:
    """Waits (bounded) until the queue holds `messages` ready messages (and `consumers`
    consumers, when given), as a passive queue.declare counts them: the broker decides."""
    probe = state.get_probe()
    queue = state.queue_name(args["queue"])
    bound_s = args.get("timeout_ms", DEFAULT_WAIT_MS) / 1000
    wanted = {"messages": args["messages"], **({"consumers": args["consumers"]} if "consumers" in args else {})}
    deadline = time.monotonic() + bound_s
    while True:
        depth = probe.depth(queue)
        seen: dict[str, Any] = {"exists": False} if depth is None else {"messages": depth[0], "consumers": depth[1]}
        if all(seen.get(k) == v for k, v in wanted.items()) or time.monotonic() >= deadline:
            break
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
                   observed=assertions.shown(assertions.lookup(state.variables, expectation["that"])) if failure else None)
        if failure is not None:
            raise failure


# -- the registry -----------------------------------------------------------------------

NAME = {"$ref": "#/$defs/name"}  # a queue or exchange name (the cell's namespace is added)
AS = {"$ref": "#/$defs/as"}  # a name a step binds with `as:`, and a reference to one
MS = {"$ref": "#/$defs/ms"}
# The `type` argument of a request or gather (protocol 3): the AMQP type property, a short string.
TYPE = {"type": "string", "minLength": 1, "maxLength": 255}
RULE = {"$ref": "#/$defs/clause"}  # a step's `rule:`: a clause id, or a whole rule
TEMPLATE = {"$ref": "#/$defs/template"}
HEADERS = {"type": "object", "additionalProperties": {"$ref": "#/$defs/header_value"}}
BIND = {"type": "object", "required": ["exchange"], "additionalProperties": False,
        "properties": {"exchange": {"type": "string"}, "routing_key": {"type": "string"}}}


def _int_or_template(minimum: int) -> dict[str, Any]:
    """A count written as a number or as one `${...}` that holds one (a template is rendered before use)."""
    return {"anyOf": [{"type": "integer", "minimum": minimum}, TEMPLATE],
            "errorMessage": f"an integer of at least {minimum}, or one ${{...}} naming one"}


def _excludes(a: str, b: str) -> dict[str, Any]:
    return {"not": {"required": [a, b]}, "errorMessage": f"{a} and {b} exclude each other: keep one"}


# Where a request or a probe's message goes: a queue (through the default exchange), or an
# exchange and/or a routing key. Both would silently drop the exchange; neither publishes nowhere.
TARGET = (
    {"anyOf": [{"required": ["queue"]}, {"required": ["exchange"]}, {"required": ["routing_key"]}],
     "errorMessage": "say where it goes: queue, or exchange and/or routing_key"},
    {"if": {"required": ["queue"]},
     "then": {"not": {"anyOf": [{"required": ["exchange"]}, {"required": ["routing_key"]}]},
              "errorMessage": "queue goes through the default exchange: give queue, or exchange+routing_key, not both"}},
)
GATHER_TARGET = (
    {"if": {"required": ["mode"], "properties": {"mode": {"const": "multi"}}},
     "then": {"required": ["endpoint"], "not": {"required": ["exchange"]},
              "errorMessage": "mode: multi sends to endpoint (a queue): give endpoint, not exchange"}},
    {"if": {"required": ["mode"], "properties": {"mode": {"const": "publish"}}},
     "then": {"required": ["exchange"], "not": {"required": ["endpoint"]},
              "errorMessage": "mode: publish publishes to exchange: give exchange, not endpoint"}},
)


def _obj(required: list[str], *constraints: dict[str, Any], **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if required:
        schema["required"] = required
    schema["properties"] = properties
    if constraints:
        schema["allOf"] = list(constraints)
    return schema


@dataclass(frozen=True)
class StepKind:
    """A step kind, once: everything the loader, the engine and the docs know of it."""

    name: str
    schema: dict[str, Any]  # the JSON-schema fragment of its argument
    run: Callable[["CellState", Any], None]
    usage: str  # how it is written (the docs table's first column)
    does: str  # what it does (the docs table)
    names: str = ""  # what its `as:` names (the docs table); "" when it names nothing
    binds: bool = False  # it takes `as:` and binds that name for later steps
    # argument keys naming earlier steps' `as:` ("*": the argument itself, a name or a list),
    # each with the step kinds whose names it takes (the run looks them up as those)
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # argument keys whose `${...}` the run expands, each with the names bound only there;
    # a `${` anywhere else would reach the broker or the peer as it is written
    templates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fields: tuple[str, ...] = ()  # the fields of what `as:` names when they are fixed ((): open, e.g. a peer's answer)
    deferred_by: str | None = None  # this boolean argument, when true, binds `as:` only at its `await`
    role: bool = False  # it takes `role:`, a role of the scenario that a peer must play
    plays: tuple[str, ...] = ("peer",)  # the role kinds a `role:` of it may name
    capability: str | None = None  # what the peer playing its role must offer
    capability_via: str | None = None  # the capability lands on the role of the step this key names
    asserts: str | None = None  # "rule": a `rule:` field it FAILs with; "expectations": a list of them


def _uses_of(kind: StepKind, args: Any) -> list[tuple[list[Any], str, tuple[str, ...]]]:
    """(path below the step, name, kinds it may name) of every earlier name this step uses (the head of a dotted path)."""
    found = []
    for key, kinds in kind.uses.items():
        if key == "*":
            names = args if isinstance(args, list) else [args]
            found += [([i] if isinstance(args, list) else [], str(n), kinds) for i, n in enumerate(names)]
        elif isinstance(args, dict) and key in args:
            found.append(([key], str(args[key]).split(".")[0], kinds))
    return found


CALLS = ("request", "gather")
OPENED = ("requester", "responder")

STEP_KINDS: dict[str, StepKind] = {k.name: k for k in [
    StepKind("queue", _obj(["name"], name=NAME, type={"enum": ["quorum", "classic"]}, bind=BIND), _step_queue,
             "`queue: {name, type?, bind?}`",
             "the probe declares a queue (quorum by default), optionally bound to an exchange"),
    StepKind("exchange", _obj(["name", "type"], name=NAME, type={"enum": ["fanout", "topic", "direct"]}), _step_exchange,
             "`exchange: {name, type}`", "the probe declares a fanout, topic or direct exchange"),
    StepKind("probe_inbox", _obj(["as"], **{"as": AS}), _step_probe_inbox, "`probe_inbox: {as}`",
             "the probe declares an exclusive classic queue of its own to receive replies", "`{name}`", binds=True,
             fields=("name",)),
    StepKind("responder", _obj(["as", "role", "queue"], **{
        "as": AS, "role": AS, "queue": NAME, "count": {"type": "integer", "minimum": 1, "maximum": 10}, "bind": BIND,
        "behavior": {"type": "object", "additionalProperties": False,
                     "properties": {"reply": {"enum": ["echo", "fail"]}, "delay_ms": MS, "error_message": {"type": "string"}}},
        "max_attempts": {"type": "integer", "minimum": 1, "maximum": 10}}), _step_responder,
             "`responder: {as, role, queue, behavior?, bind?, count?, max_attempts?}`",
             "`responder.start` on the role's peer; `count: N` starts N competing responders; an `all-peers` role starts "
             "one per peer; `${index}` and `${peer}` in `queue` make one queue each",
             "`{name, names, count}`", binds=True, templates={"queue": ("index", "peer")}, fields=("name", "names", "count"),
             role=True, plays=("peer", "all-peers"), capability="respond"),
    StepKind("requester", _obj(["as", "role"], **{"as": AS, "role": AS}), _step_requester, "`requester: {as, role}`",
             "`requester.open` on the role's peer", "`{name, reply_queue}`", binds=True, fields=("name", "reply_queue"),
             role=True, capability="request"),
    StepKind("request", _obj(["as", "requester", "body"], *TARGET, **{
        "as": AS, "requester": AS, "queue": NAME, "exchange": {"type": "string"}, "routing_key": {"type": "string"},
        "body": {}, "timeout_ms": MS, "type": TYPE, "async": {"type": "boolean"}, "refusal_expected": {"type": "boolean"}}), _step_request,
             "`request: {as, requester, queue \\| exchange+routing_key, body, type?, timeout_ms?, async?, refusal_expected?}`",
             "one request; `async: true` does not wait (use `await`)",
             "the peer's answer: `outcome`, `reply`, `failure`, `elapsed_ms`, `request_id`", binds=True,
             uses={"requester": ("requester",)}, templates={"queue": (), "routing_key": (), "body": ()}, deferred_by="async"),
    StepKind("gather", _obj(["as", "requester", "mode", "body", "timeout_ms"], *GATHER_TARGET, **{
        "as": AS, "requester": AS, "mode": {"enum": ["multi", "publish"]}, "endpoint": NAME,
        "exchange": {"type": "string"}, "body": {}, "correlation_id": {"type": "string"}, "type": TYPE,
        "expected_reply_count": _int_or_template(1), "timeout_ms": MS,
        "async": {"type": "boolean"}, "refusal_expected": {"type": "boolean"}}), _step_gather,
             "`gather: {as, requester, mode, endpoint \\| exchange, body, correlation_id?, expected_reply_count?, timeout_ms, async?}`",
             "sendRequestMulti (`multi`, to `endpoint`) or publishRequest (`publish`, to `exchange`)",
             "`outcome`, `replies`, `request_id`, `elapsed_ms`", binds=True, uses={"requester": ("requester",)},
             templates={"endpoint": (), "body": (), "correlation_id": (), "expected_reply_count": ()}, deferred_by="async",
             capability="gather", capability_via="requester"),
    StepKind("await", {"oneOf": [AS, {"type": "array", "minItems": 1, "items": AS}]}, _step_await, "`await: name` or `[names]`",
             "waits for async calls (bounded by their timeout plus a grace)", uses={"*": CALLS}),
    StepKind("counters", _obj(["as", "of"], **{"as": AS, "of": AS}), _step_counters, "`counters: {as, of}`",
             "reads a requester's or responder's counters, no wait", "the counters", binds=True, uses={"of": OPENED}),
    StepKind("wait_counters", _obj(["of", "until", "rule"], **{
        "as": AS, "of": AS, "until": {"type": "object", "minProperties": 1,
                                          "additionalProperties": {"type": ["integer", "string"]}},
        "timeout_ms": MS, "rule": RULE}), _step_wait_counters,
             "`wait_counters: {of, until: {counter: value}, timeout_ms?, rule, as?}`",
             "reads a requester's or responder's counters until each named one has its value (bounded); "
             "not reaching them is a FAIL of `rule`", "the counters last read", binds=True, uses={"of": OPENED}, templates={"until": ()}, asserts="rule"),
    StepKind("wait_event", _obj(["of", "event", "rule"], **{
        "as": AS, "of": AS,
        "event": {"enum": ["handled", "replied", "reply_failed", "dead_lettered", "unanswerable", "unmatched"]},
        "count": {"type": "integer", "minimum": 1}, "timeout_ms": MS, "where": {"type": "object"}, "rule": RULE}),
             _step_wait_event, "`wait_event: {of, event, count?, where?, timeout_ms?, rule, as?}`",
             "waits (bounded) for events from a requester or responder; too few is a FAIL of `rule`", "the events",
             binds=True, uses={"of": OPENED}, templates={"where": ()}, asserts="rule"),
    StepKind("probe_publish", _obj([], *TARGET, _excludes("body", "body_text"), **{
        "as": AS, "queue": NAME, "exchange": {"type": "string"}, "routing_key": {"type": "string"},
        "body": {}, "body_text": {"type": "string"},
        "properties": {"type": "object", "additionalProperties": False,
                       "properties": {"message_id": {"type": "string"}, "correlation_id": {"type": "string"},
                                      "reply_to": {"type": "string"}, "content_type": {"type": "string"},
                                      "type": {"type": "string"}}},
        "headers": HEADERS, "repeat": {"type": "integer", "minimum": 1, "maximum": 50}}), _step_probe_publish,
             "`probe_publish: {queue \\| exchange+routing_key, body \\| body_text, properties?, headers?, repeat?, as?}`",
             "publishes exactly this; header values may be typed: `{bytes: ..}`, `{long: ..}`, `{int: ..}`, `{byte: ..}`, "
             "`{bool: ..}`, `{double: ..}`, `{table: {..}}`, `{array: [..]}`", "`{message_id, routed}`", binds=True,
             templates={k: () for k in ("queue", "routing_key", "body", "body_text", "properties", "headers")},
             fields=("message_id", "routed", "messages")),
    StepKind("probe_reply", _obj(["requester", "request"], _excludes("body", "body_text"), **{
        "as": AS, "requester": AS, "request": NAME, "body": {}, "body_text": {"type": "string"},
        "headers": HEADERS, "correlation_id": {"type": "string"}}), _step_probe_reply,
             "`probe_reply: {requester, request, body \\| body_text, headers?, correlation_id?, as?}`",
             "the probe replies to a request it took with `probe_get` (`request`: its record, or a path such as "
             "`copies.0`) as a responder must: to the requester's `reply_queue`, `correlation_id` and "
             "`responseMessageId` set to the request's `message_id`; `headers` (typed as in `probe_publish`) are "
             "added, e.g. `acemq-error`; `correlation_id` forges another (a gather's replies carry the gather's)",
             "`{message_id, routed}`", binds=True, uses={"requester": ("requester",), "request": ("probe_get",)},
             templates={k: () for k in ("body", "body_text", "headers", "correlation_id")},
             fields=("message_id", "routed", "messages")),
    StepKind("probe_get", _obj(["as", "queue"], **{
        "as": AS, "queue": NAME, "timeout_ms": MS, "count": {"type": "integer", "minimum": 1, "maximum": 50},
        "rule": RULE, "absent": {"type": "boolean"}, "wire_types": {"type": "boolean"}}), _step_probe_get,
             "`probe_get: {as, queue, count?, timeout_ms?, rule?, absent?, wire_types?}`",
             "takes messages off a queue: `properties`, `headers`, `header_types` (`longstr`, `bytes`, ...), `body`, "
             "`body_text`, `body_length`; too few is a FAIL of `rule`; `absent: true` asserts nothing arrives; "
             "`wire_types: true` reads with the raw client (acemq_interop/raw_amqp.py), which adds each header's "
             "AMQP type code (`wire_types`: header -> `S`, `x`, `l`, `I`, `b`, `B`, `u`, `i`...) and "
             "`wire_types_by_code` (code -> the dotted paths of every value with it, nested ones included)",
             "the record (a list with `count`)", binds=True, templates={"queue": ()}, asserts="rule"),
    StepKind("probe_count", _obj(["queue", "messages", "rule"], **{
        "as": AS, "queue": NAME, "messages": {"type": "integer", "minimum": 0},
        "consumers": {"type": "integer", "minimum": 0}, "timeout_ms": MS, "rule": RULE}), _step_probe_count,
             "`probe_count: {queue, messages, consumers?, timeout_ms?, rule, as?}`",
             "waits (bounded) until a passive `queue.declare` counts `messages` ready messages (and `consumers`); "
             "not reaching it is a FAIL of `rule`", "`{messages, consumers}`", binds=True, templates={"queue": ()}, asserts="rule"),
    StepKind("queue_facts", _obj(["as", "queue"], **{"as": AS, "queue": NAME}), _step_queue_facts,
             "`queue_facts: {as, queue}`",
             "asks the management API: `type`, `durable`, `exclusive`, `auto_delete`, `arguments`", "the facts", binds=True,
             templates={"queue": ()}),
    StepKind("stop_responder", AS, _step_stop_responder, "`stop_responder: name`",
             "stops a responder (every one a `count` or `all-peers` step started) before the cell ends",
             uses={"*": ("responder",)}),
    StepKind("close_requester", AS, _step_close_requester, "`close_requester: name`",
             "closes a requester before the cell ends", uses={"*": ("requester",)}),
    StepKind("expect", {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/expectation"}}, _step_expect,
             "`expect: [{that, rule, <comparison>: value, because?}]`",
             "checks paths into what steps named; the first that does not hold is the cell's FAIL, naming `rule`",
             asserts="expectations"),
]}

STEPS: dict[str, Callable[["CellState", Any], None]] = {k.name: k.run for k in STEP_KINDS.values()}

RULE_PATTERN = "^(RR|SG|WF)-[0-9]+$"
BUILT_INS = ("ns",)  # bound in every cell: its namespace (engine.run_cell)
CLAUSE_PATTERN = "^(RR|SG|WF)-[0-9]+(\\.[0-9]+)?$"  # what a step FAILs with: a clause (RR-4.2), or a whole rule
COMPARISONS = ("equals", "not_equals", "one_of", "contains", "excludes", "present", "matches", "starts_with",
               "gte", "lte", "gt", "lt", "length", "all_equal", "distinct", "each_equals")
_NUMBER_OR_TEMPLATE = {"anyOf": [{"type": "number"}, TEMPLATE], "errorMessage": "a number, or one ${...} naming one"}
_COMPARISON_SCHEMA = {"one_of": {"type": "array"}, "present": {"type": "boolean"}, "matches": {"type": "string"},
                      "starts_with": {"type": "string"}, "all_equal": {"type": "boolean"}, "distinct": {"type": "boolean"},
                      "length": _int_or_template(0), "gte": _NUMBER_OR_TEMPLATE, "lte": _NUMBER_OR_TEMPLATE,
                      "gt": _NUMBER_OR_TEMPLATE, "lt": _NUMBER_OR_TEMPLATE}
_INT64 = {"type": "integer", "minimum": -(2 ** 63), "maximum": 2 ** 63 - 1}


def _typed_int(bits: int) -> dict[str, Any]:
    return {"anyOf": [{"type": "integer", "minimum": -(2 ** (bits - 1)), "maximum": 2 ** (bits - 1) - 1}, TEMPLATE]}


# What the probe can write as a header (probe.header_value and pika's encoder): plain text,
# integers, booleans, null, lists and tables, or one of the typed forms. A float, or an
# integer out of range, would fail inside the probe in the middle of a cell.
_HEADER_VALUE = {
    "errorMessage": "a header value is text, an integer, a boolean, null, a list, a table, or typed: {bytes: text}, "
                    "{long: n}, {int: n}, {byte: n}, {bool: b}, {double: x}, {table: {..}}, {array: [..]}",
    "anyOf": [
        {"type": ["string", "boolean", "null"]},
        _INT64,
        {"type": "array", "items": {"$ref": "#/$defs/header_value"}},
        {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False, "properties": {
            "bytes": {"type": "string"}, "long": _typed_int(64), "int": _typed_int(32), "byte": _typed_int(8),
            "bool": {"anyOf": [{"type": "boolean"}, TEMPLATE]}, "double": {"anyOf": [{"type": "number"}, TEMPLATE]},
            "table": HEADERS, "array": {"type": "array", "items": {"$ref": "#/$defs/header_value"}}}},
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/header_value"},
         "not": {"minProperties": 1, "maxProperties": 1, "propertyNames": {"enum": [*TYPE_WORDS, "table", "array"]}}},
    ],
}


def scenario_schema() -> dict[str, Any]:
    """The scenario file's JSON schema, its steps from the registry."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "acemq-interop scenario (docs/scenarios.md)",
        "$comment": "generated from acemq_interop/steps.py by `python -m acemq_interop.steps`: edit that, not this; "
                    "`errorMessage` is the loader's message for what fails under it",
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "title", "rules", "roles", "procedure", "steps"],
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
            "title": {"type": "string", "minLength": 5},
            "rules": {"type": "array", "minItems": 1, "uniqueItems": True, "items": RULE},
            "roles": {"type": "object", "minProperties": 1, "propertyNames": {"pattern": "^[a-z][a-z0-9_-]*$"},
                      "additionalProperties": {"enum": ["peer", "probe", "all-peers"]}},
            "catches": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                        "description": "mutants this scenario must catch"},
            "min_protocol": {"enum": [1, 2, 3], "description": "the oldest peer protocol the steps need"},
            "tags": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
            "procedure": {"type": "string", "minLength": 10},
            "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
        },
        "$defs": {
            "name": {"type": "string", "minLength": 1},
            "as": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]*$",
                   "errorMessage": "a step's name is a word (letters, digits, _ and -), no dots or spaces"},
            "template": {"type": "string", "pattern": "^\\$\\{[^}]+\\}$"},
            "ms": {"type": "integer", "minimum": 0, "maximum": 120000},
            "rule": {"type": "string", "pattern": RULE_PATTERN},
            "header_value": _HEADER_VALUE,
            "clause": {"type": "string", "pattern": CLAUSE_PATTERN},
            "expectation": {
                "type": "object", "required": ["that", "rule"], "additionalProperties": False, "minProperties": 3,
                "properties": {"that": {"type": "string", "minLength": 1}, "rule": RULE, "because": {"type": "string"},
                               **{c: _COMPARISON_SCHEMA.get(c, {}) for c in COMPARISONS}},
            },
            "step": {
                "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                "properties": {k.name: k.schema for k in STEP_KINDS.values()},
            },
        },
    }


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=1) + "\n"


DOCS_BEGIN = "<!-- step table: generated from acemq_interop/steps.py by `python -m acemq_interop.steps` -->"
DOCS_END = "<!-- end of step table -->"


def docs_table() -> str:
    lines = ["| step | what it does | names (`as:`) |", "| --- | --- | --- |"]
    lines += [f"| {k.usage} | {k.does} | {k.names} |" for k in STEP_KINDS.values()]
    return "\n".join(lines)


def with_docs_table(doc: str) -> str:
    begin, end = doc.index(DOCS_BEGIN) + len(DOCS_BEGIN), doc.index(DOCS_END)
    return doc[:begin] + "\n" + docs_table() + "\n" + doc[end:]


if __name__ == "__main__":
    from .paths import DOCS_DIR, SCENARIOS_DIR

    (SCENARIOS_DIR / "scenario.schema.json").write_text(schema_text(), encoding="utf-8")
    doc = DOCS_DIR / "scenarios.md"
    doc.write_text(with_docs_table(doc.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {SCENARIOS_DIR / 'scenario.schema.json'} and the step table of {doc}")
