"""One definition per step kind: its schema, what it binds and uses, what it needs and asserts.

Everything that knows a step kind reads it here: the scenario loader (the JSON schema, the
capability each role needs, the names bound before use, the rules a step may check), the
engine (which runs each kind with its function in run/steps.py), and spec/schema.py, which
generates scenarios/scenario.schema.json and docs/scenarios.md's step table from it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..amqp.codec import TYPE_WORDS
from ..broker.cluster import MEMBERS_BOUND_S
from ..broker.control import HOLD_BOUND_MS, HOLD_TRUSTED_MS

# -- what a step reads ----------------------------------------------------------------

DROP_BOUND_MS = 10000  # drop_connection: finding the role's connection on the broker and closing it
RECOVERY_BOUND_MS = 10000  # wait_recovered's default bound (RR-20.2, RR-20.3: back within 10 s)

NOT_CHECKED_KEYS = ("that", "rule", "because", "consequence_of", "charges", "guards")
_TEMPLATE_PATH = __import__("re").compile(r"\$\{([^}]+)\}")


def template_paths(value: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """Every `${path}` in a step argument (keys in `skip` left out at the top level)."""
    found: list[str] = []
    if isinstance(value, str):
        found += _TEMPLATE_PATH.findall(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            if key not in skip:
                found += template_paths(inner)
    elif isinstance(value, list):
        for inner in value:
            found += template_paths(inner)
    return found


def inputs_of(kind: "StepKind", args: Any) -> list[str]:
    """The paths a step reads: the earlier names it uses and every `${...}` it expands."""
    paths = [name for _, name, _ in _uses_of(kind, args)]
    if kind.name == "probe_reply" and isinstance(args, dict):
        paths = [str(args.get("request", ""))]  # its requester's reply queue is optional
    return paths + template_paths(args)


# -- the registry -----------------------------------------------------------------------

NAME = {"$ref": "#/$defs/name"}  # a queue or exchange name (the cell's namespace is added)
AS = {"$ref": "#/$defs/as"}  # a name a step binds with `as:`, and a reference to one
MS = {"$ref": "#/$defs/ms"}
# The `type` argument of a request or gather (protocol 3): the AMQP type property, a short string.
TYPE = {"type": "string", "minLength": 1, "maxLength": 1024}  # over 255 bytes only to see it refused (RR-18)
RULE = {"$ref": "#/$defs/rule"}
CLAUSE = {"$ref": "#/$defs/clause"}  # what a check names: the clause it asserts
# The role whose peer a check judges, where the loader cannot tell (scenarios._charges).
CHARGES = {"type": "string", "pattern": "^[a-z][a-z0-9_-]*$"}
# Values a check vouches for: when it fails they carry its consequence, and a check reading
# them (or a step binding one of those names) is not evaluated.
GUARDS = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
          "description": "values this check vouches for: when it fails, they carry its consequence and are not judged again"}
TEMPLATE = {"$ref": "#/$defs/template"}
HEADERS = {"type": "object", "additionalProperties": {"$ref": "#/$defs/header_value"}}
BIND = {"type": "object", "required": ["exchange"], "additionalProperties": False,
        "properties": {"exchange": {"type": "string"}, "routing_key": {"type": "string"}}}


NODE = {"type": "string", "pattern": "^[A-I]$", "errorMessage": "a node of the cluster: A, B, C..."}


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


# A node step's argument: a node by its letter, or the one leading a queue now.
NODE_OR_LEADER = {"anyOf": [NODE, _obj(["leader_of"], leader_of=NAME)],
                  "errorMessage": "a node (A, B, C...) or {leader_of: QUEUE}"}


@dataclass(frozen=True)
class StepKind:
    """A step kind, once: everything the loader, the engine and the docs know of it."""

    name: str
    schema: dict[str, Any]  # the JSON-schema fragment of its argument
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
    asserts: str | None = None  # "rule": a `rule:` field (a clause id) it FAILs with; "expectations": a list of them
    rule_when: tuple[str, ...] = ()  # with asserts="rule" and an optional `rule`: the keys that make it a check (then `rule` is required)
    judges: tuple[str, ...] = ()  # the clauses it judges by itself, whatever its arguments (no_loss)

    def checks(self, args: Any) -> list[tuple[list[Any], dict[str, Any]]]:
        """(path below the step, the check) of every check this step makes: each names the
        clause it asserts (`rule`) and, for an expectation, maybe `consequence_of`."""
        if self.asserts == "rule" and isinstance(args, dict) and "rule" in args:
            return [(["rule"], {"rule": args["rule"]})]
        if self.asserts == "expectations" and isinstance(args, list):
            return [([i], e) for i, e in enumerate(args) if isinstance(e, dict) and "rule" in e]
        return [([], {"rule": clause}) for clause in self.judges]


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


CALLS = ("request", "gather", "stream")
# What a request's or a gather's answer holds (schemas/peer-protocol.schema.json, an answer;
# `refused` stands in the outcome of an answer that is not ok): a check naming anything else
# (`call.outcom`) is a typo, refused at load instead of failing every binding at run time.
ANSWER_FIELDS = ("outcome", "reply", "replies", "failure", "elapsed_ms", "request_id", "ok", "error")
OPENED = ("requester", "responder")

STEP_KINDS: dict[str, StepKind] = {k.name: k for k in [
    StepKind("queue", _obj(["name"], name=NAME, type={"enum": ["quorum", "classic"]}, bind=BIND),
             "`queue: {name, type?, bind?}`",
             "the probe declares a queue (quorum by default), optionally bound to an exchange"),
    StepKind("exchange", _obj(["name", "type"], name=NAME, type={"enum": ["fanout", "topic", "direct"]}),
             "`exchange: {name, type}`", "the probe declares a fanout, topic or direct exchange"),
    StepKind("pause", _obj(["ms"], ms={"type": "integer", "minimum": 1, "maximum": 10000}),
             "`pause: {ms}`", "lets this much time pass, as the procedure says (a reply sent late in a budget); "
             "never a wait for something to happen: a wait is bounded and checked (`wait_event`, `counters: until`)"),
    StepKind("hold_queue", _obj(["queue"], queue=NAME), "`hold_queue: {queue}`",
             "holds a queue on the broker: a message published to it is routed but neither enqueued nor confirmed "
             f"until `release_queue` (or the cell's end), and never longer than {HOLD_BOUND_MS // 1000} s (a hold that "
             f"lasted {HOLD_TRUSTED_MS // 1000} s or more voids what was judged after that: a failure judged before, or a wait for "
             "an event that never came, still stands, and a cell whose checks all came before keeps its verdict; otherwise the cell "
             "is an ERROR, no verdict); needs a broker "
             "the harness runs (a SKIP on a `--broker` URL)",
             templates={"queue": ()}),
    StepKind("release_queue", _obj(["queue"], queue=NAME), "`release_queue: {queue}`",
             "releases a held queue: what was published to it is enqueued and confirmed", templates={"queue": ()}),
    StepKind("probe_inbox", _obj(["as"], **{"as": AS}), "`probe_inbox: {as}`",
             "the probe declares an exclusive classic queue of its own to receive replies", "`{name}`", binds=True,
             fields=("name",)),
    StepKind("responder", _obj(["as", "role", "queue"], **{
        "as": AS, "role": AS, "queue": NAME, "count": {"type": "integer", "minimum": 1, "maximum": 10}, "bind": BIND,
        "node": NODE,
        "behavior": {"type": "object", "additionalProperties": False,
                     "properties": {"reply": {"enum": ["echo", "fail"]}, "delay_ms": MS, "error_message": {"type": "string"}}},
        "max_attempts": {"type": "integer", "minimum": 1, "maximum": 10}}),
             "`responder: {as, role, queue, behavior?, bind?, count?, max_attempts?, node?}`",
             "`responder.start` on the role's peer; `count: N` starts N competing responders; an `all-peers` role starts "
             "one per peer; `${index}` and `${peer}` in `queue` make one queue each; on a cluster, `node: B` makes that "
             "node the first of its `amqp_urls`",
             "`{name, names, count}`", binds=True, templates={"queue": ("index", "peer")}, fields=("name", "names", "count"),
             role=True, plays=("peer", "all-peers"), capability="respond"),
    StepKind("requester", _obj(["as", "role"], **{"as": AS, "role": AS, "node": NODE}), "`requester: {as, role, node?}`",
             "`requester.open` on the role's peer; on a cluster, `node: B` makes that node the first of its `amqp_urls`", "`{name, reply_queue}`", binds=True, fields=("name", "reply_queue"),
             role=True, capability="request"),
    StepKind("request", _obj(["as", "requester", "body"], *TARGET, **{
        "as": AS, "requester": AS, "queue": NAME, "exchange": {"type": "string"}, "routing_key": {"type": "string"},
        "body": {}, "timeout_ms": MS, "type": TYPE, "async": {"type": "boolean"}, "refusal_expected": {"type": "boolean"}}),
             "`request: {as, requester, queue \\| exchange+routing_key, body, type?, timeout_ms?, async?, refusal_expected?}`",
             "one request; `async: true` does not wait (use `await`)",
             "the peer's answer: `outcome`, `reply`, `failure`, `elapsed_ms`, `request_id`", binds=True,
             uses={"requester": ("requester",)}, templates={"queue": (), "routing_key": (), "body": ()}, deferred_by="async",
             fields=ANSWER_FIELDS),
    StepKind("gather", _obj(["as", "requester", "mode", "body", "timeout_ms"], *GATHER_TARGET, **{
        "as": AS, "requester": AS, "mode": {"enum": ["multi", "publish"]}, "endpoint": NAME,
        "exchange": {"type": "string"}, "body": {}, "correlation_id": {"type": "string"}, "type": TYPE,
        "expected_reply_count": _int_or_template(1), "timeout_ms": MS,
        "async": {"type": "boolean"}, "refusal_expected": {"type": "boolean"}}),
             "`gather: {as, requester, mode, endpoint \\| exchange, body, correlation_id?, expected_reply_count?, timeout_ms, async?}`",
             "sendRequestMulti (`multi`, to `endpoint`) or publishRequest (`publish`, to `exchange`)",
             "`outcome`, `replies`, `request_id`, `elapsed_ms`", binds=True, uses={"requester": ("requester",)},
             templates={"endpoint": (), "body": (), "correlation_id": (), "expected_reply_count": ()}, deferred_by="async",
             capability="gather", capability_via="requester", fields=ANSWER_FIELDS),
    StepKind("await", {"oneOf": [AS, {"type": "array", "minItems": 1, "items": AS}]}, "`await: name` or `[names]`",
             "waits for async calls (bounded by their timeout plus a grace)", uses={"*": CALLS}),
    StepKind("counters", _obj(["as", "of"], **{"as": AS, "of": AS}), "`counters: {as, of}`",
             "reads a requester's or responder's counters once, no wait (to wait until they hold values: `wait_counters`)",
             "the counters", binds=True, uses={"of": OPENED}),
    StepKind("wait_counters", _obj(["of", "until", "rule"], **{
        "as": AS, "of": AS, "until": {"type": "object", "minProperties": 1,
                                          "additionalProperties": {"type": ["integer", "string"]}},
        "timeout_ms": MS, "rule": CLAUSE, "charges": CHARGES, "guards": GUARDS}),
             "`wait_counters: {of, until: {counter: value}, timeout_ms?, rule, as?}`",
             "reads a requester's or responder's counters until each named one has its value (bounded); "
             "not reaching them is a FAIL of `rule`", "the counters last read", binds=True, uses={"of": OPENED}, templates={"until": ()}, asserts="rule"),
    StepKind("wait_event", _obj(["of", "event", "rule"], **{
        "as": AS, "of": AS,
        "event": {"enum": ["handled", "replied", "reply_failed", "dead_lettered", "unanswerable", "unmatched"]},
        "count": {"type": "integer", "minimum": 1}, "timeout_ms": MS, "where": {"type": "object"}, "rule": CLAUSE, "charges": CHARGES, "guards": GUARDS}), "`wait_event: {of, event, count?, where?, timeout_ms?, rule, as?}`",
             "waits (bounded) for events from a requester or responder (every one a `count: N` responder step "
             "started on its peer); too few is a FAIL of the clause `rule` (none at all from a peer that has written no "
             "event since it started, while the broker delivered it messages, is its lack of events: `handled` is then "
             "counted from the broker's deliveries, any other event not evaluated); a wait for several that are still coming "
             "at its bound (the last within 2 x `timeout_ms` / `count`) goes on while they come, up to twice the bound; "
             "its `as:` holds every matching event seen by then (more than `count` when more came)", "the events",
             binds=True, uses={"of": OPENED}, templates={"where": ()}, asserts="rule"),
    StepKind("probe_publish", _obj([], *TARGET, _excludes("body", "body_text"), **{
        "as": AS, "queue": NAME, "exchange": {"type": "string"}, "routing_key": {"type": "string"},
        "body": {}, "body_text": {"type": "string"},
        "properties": {"type": "object", "additionalProperties": False,
                       "properties": {"message_id": {"type": ["string", "null"]}, "correlation_id": {"type": "string"},
                                      "reply_to": {"type": "string"}, "content_type": {"type": "string"},
                                      "type": {"type": "string"}}},
        "headers": HEADERS, "repeat": {"type": "integer", "minimum": 1, "maximum": 50}}),
             "`probe_publish: {queue \\| exchange+routing_key, body \\| body_text, properties?, headers?, repeat?, as?}`",
             "publishes exactly this (a fresh `message_id` unless given; `message_id: null` sends none, as a tutorial "
             "caller does); header values may be typed: `{bytes: ..}`, `{long: ..}`, `{int: ..}`, `{byte: ..}`, "
             "`{bool: ..}`, `{double: ..}`, `{table: {..}}`, `{array: [..]}`", "`{message_id, routed}`", binds=True,
             templates={k: () for k in ("queue", "routing_key", "body", "body_text", "properties", "headers")},
             fields=("message_id", "routed", "messages")),
    StepKind("probe_direct_request", _obj(["as", "queue"], _excludes("body", "body_text"), **{
        "as": AS, "queue": NAME, "body": {}, "body_text": {"type": "string"},
        "properties": {"type": "object", "additionalProperties": False,
                       "properties": {"message_id": {"type": ["string", "null"]}, "correlation_id": {"type": "string"},
                                      "content_type": {"type": "string"}, "type": {"type": "string"}}},
        "headers": HEADERS, "gone": {"type": "boolean"}}),
             "`probe_direct_request: {as, queue, body \\| body_text, properties?, headers?, gone?}`",
             "the probe as a direct reply-to caller (RabbitMQ's `amq.rabbitmq.reply-to`: the tutorial's, the Java "
             "`RpcClient`'s, NestJS's): a channel of its own consumes `amq.rabbitmq.reply-to` with no-ack and publishes "
             "the request on that same channel, `reply_to: amq.rabbitmq.reply-to` (the broker gives the responder "
             "`amq.rabbitmq.reply-to.<token>`), not mandatory; a fresh `message_id` unless given (`null`: none); "
             "`gone: true` closes the channel right after the publish (the caller is gone before any reply)",
             "`{message_id, correlation_id, channel}`", binds=True,
             templates={k: () for k in ("queue", "body", "body_text", "properties", "headers")},
             fields=("message_id", "correlation_id", "channel")),
    StepKind("probe_direct_replies", _obj(["as", "of", "timeout_ms"], **{"as": AS, "of": AS, "timeout_ms": MS}),
             "`probe_direct_replies: {as, of, timeout_ms}`",
             "every reply that reached the direct reply-to caller `of` (a `probe_direct_request`) by the end of "
             "`timeout_ms`, the whole of which is waited (a second reply is what it looks for; keep it short)",
             "the list of replies, each as `probe_get` records one", binds=True, uses={"of": ("probe_direct_request",)}),
    StepKind("probe_reply", _obj(["requester", "request"], _excludes("body", "body_text"), **{
        "as": AS, "requester": AS, "request": NAME, "body": {}, "body_text": {"type": "string"},
        "headers": HEADERS, "correlation_id": {"type": "string"}, "to": {"enum": ["requester", "request"]}}),
             "`probe_reply: {requester, request, body \\| body_text, headers?, correlation_id?, to?, as?}`",
             "the probe replies to a request it took with `probe_get` (`request`: its record, or a path such as "
             "`copies.0`) as a responder must: to the requester's `reply_queue` (`to: request`: to the address the request "
             "names, `acemq-reply-to` first, then `reply_to`, as a responder reads it), `correlation_id` and "
             "`responseMessageId` set to the request's `message_id`; `headers` (typed as in `probe_publish`) are "
             "added, e.g. `acemq-error`; `correlation_id` forges another (a gather's replies carry the gather's)",
             "`{message_id, routed}`", binds=True, uses={"requester": ("requester",), "request": ("probe_get",)},
             templates={k: () for k in ("body", "body_text", "headers", "correlation_id")},
             fields=("message_id", "routed", "messages")),
    StepKind("probe_get", _obj(["as", "queue"], **{
        "as": AS, "queue": NAME, "timeout_ms": MS, "count": {"type": "integer", "minimum": 1, "maximum": 50},
        "rule": CLAUSE, "charges": CHARGES, "guards": GUARDS, "absent": {"type": "boolean"}, "wire_types": {"type": "boolean"}}),
             "`probe_get: {as, queue, count?, timeout_ms?, rule?, absent?, wire_types?}`",
             "takes messages off a queue: `properties`, `headers`, `header_types` (`longstr`, `bytes`, ...), `body`, "
             "`body_text`, `body_length`, `exchange` and `routing_key` it was published with; too few is a FAIL of the "
             "clause `rule` (an ERROR without one); `absent: true` asserts nothing arrives (`rule` required); "
             "`wire_types: true` reads with the raw client (acemq_interop/amqp/raw_client.py), which adds each header's "
             "AMQP type code (`wire_types`: header -> `S`, `x`, `l`, `I`, `b`, `B`, `u`, `i`...) and "
             "`wire_types_by_code` (code -> the dotted paths of every value with it, nested ones included)",
             "the record (a list with `count`)", binds=True, templates={"queue": ()}, asserts="rule", rule_when=("absent",)),
    StepKind("probe_count", _obj(["queue", "messages", "rule"], **{
        "as": AS, "queue": NAME, "messages": {"type": "integer", "minimum": 0},
        "consumers": {"type": "integer", "minimum": 0}, "timeout_ms": MS, "rule": CLAUSE, "charges": CHARGES, "guards": GUARDS}),
             "`probe_count: {queue, messages, consumers?, timeout_ms?, rule, as?}`",
             "waits (bounded) until a passive `queue.declare` counts `messages` ready messages (and `consumers`); "
             "not reaching it is a FAIL of `rule`", "`{messages, consumers}`", binds=True, templates={"queue": ()}, asserts="rule"),
    StepKind("queue_facts", _obj(["as", "queue"], **{"as": AS, "queue": NAME}),
             "`queue_facts: {as, queue}`",
             "asks the management API: `exists`, `type`, `durable`, `exclusive`, `auto_delete`, `arguments`", "the facts", binds=True,
             templates={"queue": ()}),
    StepKind("stop_responder", AS, "`stop_responder: name`",
             "stops a responder (every one a `count` or `all-peers` step started) before the cell ends",
             uses={"*": ("responder",)}),
    StepKind("close_requester", AS, "`close_requester: name`",
             "closes a requester before the cell ends", uses={"*": ("requester",)}),
    StepKind("drop_connection", AS, "`drop_connection: name`",
             "ends a requester's or responder's own connection on the broker (protocol 5): closes, through the management "
             f"API, every connection of the run's vhost whose client property `connection_name` is the role's (bounded, "
             f"{DROP_BOUND_MS // 1000} s); a role with no such connection is an ERROR of its peer; from then on a "
             "`connection_lost` of that role is expected, not a fault; needs the management API's connections (a SKIP "
             "saying why where the API does not offer them)",
             uses={"*": OPENED}),
    StepKind("wait_recovered", _obj(["of", "rule"], **{
        "of": AS, "within_ms": MS, "rule": CLAUSE, "charges": CHARGES, "guards": GUARDS}),
             "`wait_recovered: {of, within_ms?, rule}`",
             "polls the management API until a connection named as the role's (not one the cell dropped) is open again "
             "and consumes: a responder its queue, a requester any queue (its new reply queue); not within `within_ms` "
             f"({RECOVERY_BOUND_MS // 1000} s by default) of the drop is a FAIL of `rule`, charged to the role's peer, "
             "saying what was missing; before any drop of the role it waits for its first connection (so a later drop finds it "
             "at once: the management API lists a new connection only after a second or more), a role not connected under "
             "its name then being an ERROR of its peer",
             uses={"of": OPENED}, asserts="rule"),
    StepKind("node_stop", NODE_OR_LEADER, "`node_stop: B` or `{leader_of: queue}`",
             "stops a node of the run's cluster cleanly (`rabbitmqctl stop`: its clients are told 320) and waits until the "
             f"others list it gone (bounded, {MEMBERS_BOUND_S:.0f} s); from then on a `connection_lost` of the cell's roles is "
             "expected; a node left down is started at the cell's end", templates={"leader_of": ()}),
    StepKind("node_kill", NODE_OR_LEADER, "`node_kill: B` or `{leader_of: queue}`",
             "SIGKILLs a node's VM (a crash: no goodbye to its clients), as `node_stop` otherwise; `leader_of` picks the node "
             "leading that quorum queue now", templates={"leader_of": ()}),
    StepKind("node_start", {"anyOf": [NODE, {"const": "all"}]}, "`node_start: B` or `all`",
             "starts a node taken down (or every one) and waits until the cluster lists it running and every quorum "
             f"queue of the run has its members online (bounded, {MEMBERS_BOUND_S:.0f} s)"),
    StepKind("rolling_restart", _obj([], order={"type": "array", "minItems": 1, "items": NODE},
                                     how={"enum": ["stop", "kill"]}),
             "`rolling_restart: {order?, how?}`",
             "each node in turn (A, B, C by default): stopped (or killed), started, the next one only once the cluster lists "
             "it running with every quorum queue's members online"),
    StepKind("leader_move", _obj(["queue"], queue=NAME, to=NODE), "`leader_move: {queue, to?}`",
             "moves a quorum queue's leadership to node `to` (by default the next node after its leader now) as maintenance "
             "mode does (`rabbit_quorum_queue:transfer_leadership` through `rabbitmqctl eval`; RabbitMQ 3.8 on) and waits "
             f"until the broker names it the leader (bounded, {MEMBERS_BOUND_S:.0f} s); no node goes down and no connection "
             "is closed", templates={"queue": ()}),
    StepKind("stream", _obj(["as", "requester", "queue", "count"], **{
        "as": AS, "requester": AS, "queue": NAME, "count": {"type": "integer", "minimum": 1, "maximum": 1000},
        "every_ms": MS, "timeout_ms": MS}),
             "`stream: {as, requester, queue, count, every_ms?, timeout_ms?}`",
             "sends `count` requests (`{n}` bodies), one every `every_ms` (200 by default), from a thread of its own while the "
             "next steps run (`every_ms: 0`: all at once, before the next step); `await` waits for every call", "`answers`, `outcomes` (outcome -> count), `sent`, `replies`",
             binds=True, uses={"requester": ("requester",)}, templates={"queue": ()},
             deferred_by="as",  # always: a stream is awaited, its answers bound then
             fields=("answers", "outcomes", "sent", "replies")),
    StepKind("no_loss", _obj(["of", "requester", "responder", "queue"], **{
        "as": AS, "of": AS, "requester": AS, "responder": AS, "queue": NAME}),
             "`no_loss: {of, requester, responder, queue, as?}`",
             "follows every request of the stream `of` to where its trail ends (responder and requester events, `queue` and "
             "`{queue}.dlq` as the broker holds them): answered once, Unmatched after its caller gave up, answered to a caller "
             "whose connection died, dead-lettered, still queued, or never sent; a request handled and then found nowhere "
             "is a FAIL of RR-20.4 charged to the responder, one reported sent (`timeout`) and found nowhere a FAIL of RR-20.1 "
             "charged to the requester, one answered twice without a redelivery a FAIL of RR-20.4 (one answered again after a "
             "redelivery is at-least-once, counted apart)",
             "the figures: `requests` and each end's count, `answered_twice`, `answered_again_after_redelivery`",
             binds=True, uses={"of": ("stream",), "requester": ("requester",), "responder": ("responder",)},
             templates={"queue": ()}, judges=("RR-20.4", "RR-20.1"),
             fields=("requests", "answered", "unmatched", "to_gone_caller", "dead_lettered", "queued", "not_sent", "lost",
                     "answered_twice", "answered_again_after_redelivery")),
    StepKind("expect", {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/expectation"}},
             "`expect: [{that, rule, <comparison>: value, because?, consequence_of?, guards?, charges?}]`",
             "checks paths into what steps named, each on its own: every one that does not hold is a failure of the cell "
             "naming the clause `rule`, or with `consequence_of: CLAUSE` naming that clause as broken and `rule` as what it "
             "was seen as; a check reading a value an earlier failure explains (its path, a wrong `outcome`'s answer, or "
             "a failed check's `guards: [paths]`) is not evaluated; `charges: ROLE` names whose side it judges where the "
             "loader cannot tell",
             asserts="expectations"),
]}

BROKER_CONTROL_STEPS = ("hold_queue", "release_queue")
# Steps that fault the run's cluster (--cluster): its cells run one at a time, alone.
NODE_STEPS = ("node_stop", "node_kill", "node_start", "rolling_restart", "leader_move")
# Steps that end and watch a role's connection through the management API (RR-20); they need
# peer protocol 5, where each role's connection carries a name the harness gave it.
CONNECTION_STEPS = ("drop_connection", "wait_recovered")

RULE_PATTERN = "^(RR|SG|WF)-[0-9]+$"
BUILT_INS = ("ns",)  # bound in every cell: its namespace (engine.run_cell)
# A check's `rule:` names a clause; the schema lets a bare rule id through so that the loader
# can refuse it with a message naming the rule's clauses.
CHECK_PATTERN = "^(RR|SG|WF)-[0-9]+([.][0-9]+)?$"
COMPARISONS = ("equals", "not_equals", "one_of", "contains", "excludes", "present", "matches", "starts_with",
               "gte", "lte", "gt", "lt", "no_later_than", "length", "all_equal", "distinct", "each_equals")
_NUMBER_OR_TEMPLATE = {"anyOf": [{"type": "number"}, TEMPLATE], "errorMessage": "a number, or one ${...} naming one"}
_COMPARISON_SCHEMA = {"one_of": {"type": "array"}, "present": {"type": "boolean"}, "matches": {"type": "string"},
                      "starts_with": {"type": "string"}, "all_equal": {"type": "boolean"}, "distinct": {"type": "boolean"},
                      "length": _int_or_template(0), "gte": _NUMBER_OR_TEMPLATE, "lte": _NUMBER_OR_TEMPLATE,
                      "gt": _NUMBER_OR_TEMPLATE, "lt": _NUMBER_OR_TEMPLATE, "no_later_than": _NUMBER_OR_TEMPLATE}
_INT64 = {"type": "integer", "minimum": -(2 ** 63), "maximum": 2 ** 63 - 1}


def _typed_int(bits: int) -> dict[str, Any]:
    return {"anyOf": [{"type": "integer", "minimum": -(2 ** (bits - 1)), "maximum": 2 ** (bits - 1) - 1}, TEMPLATE]}


# What the probe can write as a header (amqp/codec.py's header_value): plain text,
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
