"""The steps of a cluster's cells (`--cluster N`): faults put to its nodes, a stream of
requests across them, and the no-loss account at the end.

- `node_stop`, `node_kill`, `node_start`, `rolling_restart`, `leader_move` act on the run's NodeCluster
  (broker/cluster.py), each bounded and noted in the cell's timeline. A fault takes down every
  connection of the node, so from its instant on a `connection_lost` of any role of the cell is
  expected (the roles on other nodes simply report none); a node left down is started again at
  the cell's end (engine cleanup).
- `stream` sends `count` requests, one every `every_ms`, from a thread of its own, so the
  faults happen while they are under way; its `await` waits for each call.
- `no_loss` follows every request of a stream to where its trail ends (Jepsen's RabbitMQ
  analyses count the same): answered to its caller, its reply counted Unmatched after the
  caller gave up, dead-lettered, or still queued. A request that reached the broker and ends
  nowhere is lost; one answered to its caller twice is a duplicate. The trail is read from the
  responder's and requester's events and the queues as the broker holds them at the end
  (results/loss.py judges it).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..broker.cluster import LETTERS, letter
from ..core.errors import BrokerError, CheckFailed, PeerError
from ..results.loss import Trail, account

if TYPE_CHECKING:
    from ..peers.client import PendingCall
    from .state import CellState

JUDGES = ("RR-20.4", "RR-20.1")  # what no_loss judges (spec/steps.py), in its checks' order
NOT_HERE = "needs a cluster of {n} nodes: run it with --cluster {n} (a private cluster the harness starts)"


def _cluster(state: CellState) -> Any:
    cluster = state.ctx.cluster
    if cluster is None:  # the loader's `nodes:` makes such a cell a SKIP before it starts
        raise BrokerError("a node step needs the run's cluster (--cluster N)")
    return cluster


def _node_index(state: CellState, args: Any) -> int:
    """The node a step names: `B`, or `{node: B}`, or `{leader_of: queue}` (where the queue's
    leader is now, asked of the broker)."""
    cluster = _cluster(state)
    if isinstance(args, str):
        args = {"node": args}
    if "leader_of" in args:
        queue = state.queue_name(args["leader_of"])
        index = cluster.leader_of(state.ctx.vhost, queue)
        state.note("leader_of", queue=queue, node=letter(index))
        return index
    index = LETTERS.index(args["node"])
    if index >= cluster.size:
        raise BrokerError(f"node {args['node']}: the cluster has {cluster.size} nodes ({LETTERS[:cluster.size]})")
    return index


def _expect_losses(state: CellState) -> None:
    """From now on a lost connection of any role of the cell is the cell's doing."""
    now = time.monotonic()
    for opened in state.opened:
        state.dropped.setdefault(opened.name, now)


def _fault(state: CellState, what: str, index: int, act: Any) -> None:
    _expect_losses(state)
    started = time.monotonic()
    with state.waiting("broker"):
        act(index)
    state.note(what, node=letter(index), took_s=round(time.monotonic() - started, 3))


def step_node_stop(state: CellState, args: Any) -> None:
    cluster = _cluster(state)
    _fault(state, "node_stop", _node_index(state, args), cluster.stop_node)


def step_node_kill(state: CellState, args: Any) -> None:
    cluster = _cluster(state)
    _fault(state, "node_kill", _node_index(state, args), cluster.kill_node)


def step_node_start(state: CellState, args: Any) -> None:
    """Starts one node (`node_start: B`) or every node taken down (`node_start: all`)."""
    cluster = _cluster(state)
    started = time.monotonic()
    targets = sorted(cluster.down) if args == "all" else [_node_index(state, args)]
    with state.waiting("broker"):
        for index in targets:
            cluster.start_node(index, state.ctx.vhost)
            _trace_on(state, index)
    state.note("node_start", nodes=[letter(i) for i in targets], took_s=round(time.monotonic() - started, 3))


def step_rolling_restart(state: CellState, args: dict[str, Any]) -> None:
    """Each node in turn: stopped (or killed), started, and the next only once the cluster
    lists it running and every quorum queue has its members online again."""
    cluster = _cluster(state)
    order = [LETTERS.index(n) for n in args.get("order", LETTERS[:cluster.size])]
    act = cluster.kill_node if args.get("how") == "kill" else cluster.stop_node
    for index in order:
        _fault(state, "rolling_restart", index, act)
        started = time.monotonic()
        with state.waiting("broker"):
            cluster.start_node(index, state.ctx.vhost)
            _trace_on(state, index)
        state.note("node_start", nodes=[letter(index)], took_s=round(time.monotonic() - started, 3))
        _expect_losses(state)  # roles that moved to this node meanwhile


def step_leader_move(state: CellState, args: dict[str, Any]) -> None:
    """Moves a quorum queue's leadership (`leader_move: {queue, to?}`) to node `to`, or to the
    next node after its leader now; no node goes down and no connection is closed, so no
    `connection_lost` is expected of the cell's roles."""
    cluster = _cluster(state)
    queue = state.queue_name(args["queue"])
    started = time.monotonic()
    with state.waiting("broker"):
        now = cluster.leader_of(state.ctx.vhost, queue)
        to = _node_index(state, args["to"]) if "to" in args else \
            next(i % cluster.size for i in range(now + 1, now + cluster.size) if i % cluster.size not in cluster.down)
        cluster.move_leader(state.ctx.vhost, queue, to)
    state.note("leader_move", queue=queue, node=letter(to), was=letter(now), took_s=round(time.monotonic() - started, 3))


def _trace_on(state: CellState, index: int) -> None:
    """The firehose is a node's own setting, gone with a restart: on again where the run traces."""
    if state.ctx.tracer is None:
        return
    try:
        state.ctx.management.at_each_node()[index].set_tracing(state.ctx.vhost, True)
    except BrokerError as exc:
        state.note("trace_on", node=letter(index), error=str(exc))


def restore(state: CellState) -> list[str]:
    """At the cell's end: every node the cell left down is started again."""
    cluster = state.ctx.cluster
    if cluster is None or not cluster.down:
        return []
    down = sorted(cluster.down)
    cluster.restore(state.ctx.vhost)
    for index in down:
        _trace_on(state, index)
    return [letter(i) for i in down]


# -- a stream of requests ------------------------------------------------------------------


@dataclass
class Stream:
    """Requests sent one every `every_s` by a thread, while the cell's next steps run."""

    requester: str
    peer: Any
    calls: list["PendingCall"] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    thread: threading.Thread | None = None


def step_stream(state: CellState, args: dict[str, Any]) -> None:
    from .steps import _target

    peer, requester = state.owners[args["requester"]]
    exchange, routing_key = _target(state, args)
    stream = Stream(requester, peer)
    count, every_s, timeout_ms = args["count"], args.get("every_ms", 200) / 1000, args.get("timeout_ms", 10000)
    note = state.noter(peer)

    def send() -> None:
        for n in range(count):
            try:
                stream.calls.append(peer.request(requester, exchange, routing_key, {"n": n}, timeout_ms, note=note))
            except PeerError as exc:
                stream.errors.append(str(exc))
                return
            if every_s:
                time.sleep(every_s)  # the stream's pace, as the scenario asks: not a wait for anything

    stream.thread = threading.Thread(target=send, name=f"acemq-interop-stream-{state.ns}", daemon=True)
    state.streams[args["as"]] = stream
    if not every_s:  # `every_ms: 0`: a burst, all sent before the next step
        send()
        stream.thread = threading.Thread(target=lambda: None)
    state.calls[args["as"]] = {"t": round(time.monotonic() - state.variables["_t0"], 3), "exchange": exchange,
                               "routing_key": routing_key, "count": count}
    stream.thread.start()


def await_stream(state: CellState, name: str) -> None:
    """Waits for the stream's thread and each of its calls (each bounded by its timeout and a grace)."""
    stream = state.streams.pop(name)
    assert stream.thread is not None
    with state.waiting("call"):
        stream.thread.join()
        answers = []
        for call in stream.calls:
            timeout_s = (call.command.get("timeout_ms") or 30000) / 1000
            try:
                answers.append(call.wait(timeout_s + 10.0))
            except Exception as exc:  # a call that never ended: its own answer says so
                call.cancel()
                answers.append({"ok": False, "outcome": "never_ended", "error": str(exc),
                                "request_id": call.command.get("request_id")})
    if stream.errors:
        raise PeerError(f"peer {stream.peer.name} refused to send the stream's requests: {stream.errors[0]}")
    outcomes: dict[str, int] = {}
    for answer in answers:
        outcome = str(answer.get("outcome") if answer.get("ok") else answer.get("outcome", "refused"))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    state.note("answer", peer=stream.peer.name, of=name, outcomes=outcomes)
    state.variables[name] = {"answers": answers, "outcomes": outcomes, "sent": len(answers),
                             "replies": outcomes.get("reply", 0)}


# -- the no-loss account -------------------------------------------------------------------


def step_no_loss(state: CellState, args: dict[str, Any]) -> None:
    """Every request of `of` (a stream) followed to where its trail ends; a lost or twice
    answered one is a FAIL of `rule`, naming the request and where its trail ends."""
    answers = state.variables[args["of"]]["answers"]
    queue = state.queue_name(args["queue"])
    requester_peer, requester = state.owners[args["requester"]]
    responders = set(state.variables[args["responder"]]["names"])
    events = []
    for peer in {state.owners[name][0].name: state.owners[name][0] for name in responders}.values():
        events += peer.events_since(state.event_marks.get(peer.name, 0), lambda e: e.get("responder") in responders)
    unmatched = requester_peer.events_since(state.event_marks.get(requester_peer.name, 0),
                                            lambda e: e.get("event") == "unmatched" and e.get("requester") == requester)
    queued: dict[str, str] = {}
    for name in (queue, f"{queue}.dlq"):
        for message in state.ctx.management.messages(state.ctx.vhost, name, count=1000):
            message_id = (message.get("properties") or {}).get("message_id")
            if message_id:
                queued[str(message_id)] = name
    trails = [Trail.of(answer, events, unmatched, queued) for answer in answers]
    summary = account(trails)
    figures = summary.figures()
    if "as" in args:
        state.variables[args["as"]] = figures
    state.note("no_loss", **figures)
    roles = {"requester": state.cell.scenario.name_roles.get(args["requester"]),
             "responder": state.cell.scenario.name_roles.get(args["responder"])}
    seen: set[tuple[str, str]] = set()
    for clause, side, what in summary.problems():
        if (clause, side) in seen:  # one failure per clause and side: the first request named, the rest counted
            continue
        seen.add((clause, side))
        more = sum(1 for c, s, _ in summary.problems() if (c, s) == (clause, side)) - 1
        state.fail(CheckFailed(clause, f"every request of {args['of']} ends answered once, Unmatched, dead-lettered or queued",
                               expected="no request lost, none answered twice",
                               observed=what + (f" (and {more} more like it)" if more else "")),
                   f"step {state.step_index + 1} no_loss {args['of']}", sub=JUDGES.index(clause), role=roles[side], direct=True)
