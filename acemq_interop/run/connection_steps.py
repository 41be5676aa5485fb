"""The steps that end one role's connection and watch it come back (RR-20, peer protocol 5).

A protocol-5 peer gives each requester and responder a connection of its own, carrying the
client-provided name the harness chose (`CellState.connection_name`). The management API
finds it by that name and closes it as an operator would (320 CONNECTION_FORCED), which ends
that role's connection and nothing else; it then shows whether a connection of that name is
back and consuming. Recovery is judged from the broker, never from a peer's `recovered` event.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..core.errors import CheckFailed, PeerError
from ..spec.steps import DROP_BOUND_MS, RECOVERY_BOUND_MS

if TYPE_CHECKING:
    from .state import CellState

POLL_S = 0.25  # between two looks at the management API (it refreshes its lists every second)
GONE_STATES = frozenset({"closing", "closed"})


def _named(state: CellState, connection_name: str) -> list[dict[str, Any]]:
    """The open connections of the run's vhost carrying `connection_name`, but those the cell
    closed (the broker may list a closed one for a moment)."""
    return [c for c in state.ctx.management.connections(state.ctx.vhost)
            if c.get("connection_name") == connection_name and c.get("name") not in state.dropped_connections
            and c.get("state") not in GONE_STATES]


def _is_responder(state: CellState, name: str) -> bool:
    return any(o.name == name and o.op == "responder.stop" for o in state.opened)


def step_drop_connection(state: CellState, args: Any) -> None:
    """Closes every connection named as the role's; from then on its `connection_lost` is expected."""
    peer, name = state.owners[str(args)]
    wanted = state.connection_name(name)
    deadline = time.monotonic() + DROP_BOUND_MS / 1000
    with state.waiting("broker"):
        found = _named(state, wanted)
        while not found and time.monotonic() < deadline:
            time.sleep(POLL_S)  # a poll with a bound: the management API lists a new connection within a second
            found = _named(state, wanted)
    if not found:
        raise PeerError(f"peer {peer.name} names no connection `{wanted}`: protocol 5 asks each role's connection to "
                        f"carry its connection_name (none in vhost {state.ctx.vhost} within {DROP_BOUND_MS // 1000} s)")
    # Before the close: the peer's `connection_lost` comes after it, and is the cell's doing.
    state.dropped.setdefault(name, time.monotonic())
    for connection in found:
        state.dropped_connections.add(str(connection["name"]))
        state.ctx.management.close_connection(str(connection["name"]), f"acemq-interop: drop_connection {args} ({state.ns})")
    state.note("drop_connection", peer=peer.name, of=name, connection_name=wanted, closed=[c["name"] for c in found])


def _missing(state: CellState, name: str, wanted: str, queues: list[str]) -> str | None:
    """What is not back yet: None once a connection of that name is open and consumes (the
    responder's queue; for a requester, any queue: its new reply queue)."""
    back = _named(state, wanted)
    if not back:
        return f"no connection named '{wanted}'"
    on = {str(c["name"]) for c in back}
    consumed = {str(c.get("queue")) for c in state.ctx.management.consumers(state.ctx.vhost) if c.get("connection") in on}
    if queues:
        if not consumed & set(queues):
            return f"connection back ({', '.join(sorted(on))}), no consumer on {' or '.join(queues)}"
    elif not consumed:
        return f"connection back ({', '.join(sorted(on))}), no queue consumed on it (no reply queue)"
    return None


def step_wait_recovered(state: CellState, args: dict[str, Any]) -> None:
    """Polls the broker until the role is back and consuming; past the bound, a FAIL of `rule`.
    Of a responder step that started several (`count`, an `all-peers` role): each of them."""
    bound = state.variables.get(args["of"])
    names = bound.get("names") if isinstance(bound, dict) and bound.get("names") else None
    for name in names or [None]:
        peer, own = state.owners[args["of"] if name is None else name]
        _wait_recovered(state, args, peer, own)


def _wait_recovered(state: CellState, args: dict[str, Any], peer: Any, name: str) -> None:
    wanted = state.connection_name(name)
    within_s = args.get("within_ms", RECOVERY_BOUND_MS) / 1000
    since = state.dropped.get(name, time.monotonic())  # the bound runs from the loss
    queues = [q for q, _ in state.consumed_by(name)] if _is_responder(state, name) else []
    started = time.monotonic()
    with state.waiting("broker"):
        missing = _missing(state, name, wanted, queues)
        while missing is not None and time.monotonic() < since + within_s:
            time.sleep(POLL_S)  # a poll with a bound (RR-20.2, RR-20.3: within 10 s)
            missing = _missing(state, name, wanted, queues)
    after = time.monotonic() - since
    state.note("wait_recovered", peer=peer.name, of=name, connection_name=wanted, missing=missing,
               after_s=round(after, 3), waited_s=round(time.monotonic() - started, 3))
    if missing is not None and name not in state.dropped:
        # Before any drop it waits for the role's first connection (so a drop later finds it
        # at once, the management API listing a new connection only after a second or more):
        # a role not connected under its name is no recovery failed, but protocol 5 unmet.
        raise PeerError(f"peer {peer.name} names no connection `{wanted}` consuming: protocol 5 asks each role's "
                        f"connection to carry its connection_name ({missing} within {within_s:.0f} s)")
    if missing is not None:
        what = "responder" if queues else "requester"
        raise CheckFailed(args["rule"],
                          f"{what} {args['of']} of peer {peer.name} is back and consuming within {within_s:.0f} s of the loss",
                          expected=f"a connection named '{wanted}' consuming {' or '.join(queues) or 'a reply queue'}",
                          observed=f"{missing} {after:.1f} s after the loss")
