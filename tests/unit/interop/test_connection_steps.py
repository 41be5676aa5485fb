"""drop_connection and wait_recovered (RR-20, peer protocol 5), in memory: how they parse, what a
dropped role's lost connection is, and what a FAIL of a recovery names. The wire behaviour
(a real broker closing a real binding's connection) is tests/broker/test_connection_recovery.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acemq_interop.core.errors import BrokerError, UsageError
from acemq_interop.peers.client import PeerClient
from acemq_interop.results.model import Status
from acemq_interop.run import connection_steps
from acemq_interop.run.engine import RunContext, run_cell
from acemq_interop.run.state import connection_lost_in
from acemq_interop.spec.scenarios import load_file
from acemq_interop.run import cells
from acemq_interop.peers.manifests import PeerSpec
from fake_peers import FakeBroker, FakeManagement, FakePeer, no_probe

FORCED = "CONNECTION_FORCED - Closed via management plugin"


class ConnectionsManagement(FakeManagement):
    """The management API's connections and consumers, kept by the in-memory peers below."""

    def __init__(self, refuse: str | None = None) -> None:
        super().__init__()
        self.refuse = refuse
        self.open: dict[str, dict[str, Any]] = {}  # the broker's connection name -> row
        self.consuming: list[dict[str, Any]] = []
        self.closed: list[str] = []
        self.peers: dict[str, "RecoveringPeer"] = {}
        self._n = 0

    def connect(self, peer: "RecoveringPeer", role: str, connection_name: str | None, queue: str) -> None:
        self._n += 1
        name = f"127.0.0.1:{40000 + self._n} -> 127.0.0.1:5672"
        self.open[name] = {"name": name, "state": "running", "connection_name": connection_name, "role": role}
        self.consuming.append({"queue": queue, "connection": name})
        self.peers[name] = peer

    def connections(self, vhost: str, bound_s: float = 10.0) -> list[dict[str, Any]]:
        if self.refuse:
            raise BrokerError(self.refuse)
        return [{k: v for k, v in row.items() if k != "role"} for row in self.open.values()]

    def consumers(self, vhost: str, bound_s: float = 10.0) -> list[dict[str, Any]]:
        return [c for c in self.consuming if c["connection"] in self.open]

    def close_connection(self, name: str, reason: str) -> None:
        row = self.open.pop(name)
        self.closed.append(name)
        self.peers[name].lost(row["role"], row["connection_name"])


class RecoveringPeer(FakePeer):
    """A protocol-5 binding: one named connection per role; on a loss it writes
    connection_lost and, unless told not to, comes back on a new connection (and, unless told
    not to, consumes again)."""

    protocol = 5

    def __init__(self, name: str, broker: FakeBroker, management: ConnectionsManagement, recovers: bool = True,
                 consumes_again: bool = True, names_connection: bool = True) -> None:
        super().__init__(name, broker)
        self.management = management
        self.recovers, self.consumes_again, self.names_connection = recovers, consumes_again, names_connection
        self.queues: dict[str, str] = {}

    def open_requester(self, name: str, profile: str = "current", mutant: str | None = None, note: Any = None,
                       connection_name: str | None = None) -> dict[str, Any]:
        answer = super().open_requester(name, profile, mutant, note, connection_name)
        self.queues[name] = answer["reply_queue"]
        self.management.connect(self, name, connection_name if self.names_connection else None, answer["reply_queue"])
        return answer

    def start_responder(self, name: str, queue: str, *args: Any, connection_name: str | None = None, **kwargs: Any) -> dict[str, Any]:
        answer = super().start_responder(name, queue, *args, **kwargs)
        self.queues[name] = queue
        self.management.connect(self, name, connection_name if self.names_connection else None, queue)
        return answer

    def lost(self, role: str, connection_name: str | None) -> None:
        side = "responder" if role in self.responders else "requester"
        self.events.append({"event": "connection_lost", side: role, "reason": FORCED})
        if self.recovers:
            queue = self.queues[role] if side == "responder" else f"amq.gen-again-{role}"
            self.management.connect(self, role, connection_name, queue if self.consumes_again else "")
            if not self.consumes_again:
                self.management.consuming.pop()
            self.events.append({"event": "recovered", side: role})


def context(management: ConnectionsManagement, *peers: FakePeer) -> RunContext:
    return RunContext(amqp_url="amqp://in-memory/", vhost="acemq-interop-0badc0de", management=management,  # type: ignore[arg-type]
                      peers={p.name: p for p in peers}, op_bound_s=1.0, broker="memory", probe_factory=no_probe)


def scenario(tmp_path: Path, steps: str, min_protocol: int = 5) -> Any:
    path = tmp_path / "demo.yaml"
    path.write_text(f"id: demo\ntitle: An in-memory demo\nmin_protocol: {min_protocol}\n"
                    "roles: {requester: peer, responder: peer}\n"
                    f"procedure: Demo steps for the engine.\nsteps:\n{steps}", encoding="utf-8")
    return load_file(path)


def cell_of(s: Any, requester: str, responder: str) -> cells.Cell:
    return next(c for c in cells.plan([s], [PeerSpec(requester), PeerSpec(responder)])
                if c.roles["requester"].name == requester and c.roles["responder"].name == responder)


RESPONDER_DROPPED = """\
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - drop_connection: r
  - wait_recovered: {of: r, within_ms: 600, rule: RR-20.2}
"""


# -- the loader ----------------------------------------------------------------------


def test_a_connection_step_needs_protocol_5_said_in_the_scenario(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"demo.yaml:\d+: drop_connection needs peer protocol 5 .*add `min_protocol: 5`"):
        scenario(tmp_path, RESPONDER_DROPPED, min_protocol=3)


def test_the_connection_lost_outcome_needs_protocol_5_said_in_the_scenario(tmp_path: Path) -> None:
    steps = ("  - responder: {as: r, role: responder, queue: requests}\n"
             "  - requester: {as: q, role: requester}\n"
             "  - request: {as: call, requester: q, queue: requests, body: {}, timeout_ms: 1000}\n"
             "  - expect:\n      - {that: call.outcome, equals: connection_lost, rule: RR-20.1}\n")
    with pytest.raises(UsageError, match=r"the outcome `connection_lost` needs peer protocol 5"):
        scenario(tmp_path, steps, min_protocol=4)


def test_a_wait_recovered_names_a_clause_and_judges_the_role_it_watches(tmp_path: Path) -> None:
    s = scenario(tmp_path, RESPONDER_DROPPED)
    assert s.connection_control and s.min_protocol == 5
    assert s.clauses == ("RR-20.2",)
    assert s.charges[(3, 0)] == "responder", "a responder's recovery is judged on the responder's peer"


# -- a dropped role ---------------------------------------------------------------------


def test_a_dropped_role_losing_its_connection_is_expected_and_its_recovery_passes(tmp_path: Path) -> None:
    management, broker = ConnectionsManagement(), FakeBroker()
    a, b = RecoveringPeer("a", broker, management), RecoveringPeer("b", broker, management)
    result = run_cell(cell_of(scenario(tmp_path, RESPONDER_DROPPED), "a", "b"), "c0001", context(management, a, b))
    assert result.status == Status.PASS, result.message
    assert len(management.closed) == 1, "the responder's connection, and nothing else"
    dropped = next(n for n in result.trace if n["step"] == "drop_connection")
    assert dropped["connection_name"] == "acemq-interop 0badc0de c0001.r", "unique per role per run, no credentials"
    assert any(e["event"] == "connection_lost" for e in b.events)


def test_a_connection_lost_of_a_role_the_cell_did_not_drop_is_still_a_fault(tmp_path: Path) -> None:
    class LosingPeer(RecoveringPeer):
        def start_responder(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
            answer = super().start_responder(name, *args, **kwargs)
            self.events.append({"event": "connection_lost", "responder": name, "reason": FORCED})
            return answer

    management, broker = ConnectionsManagement(), FakeBroker()
    a, b = RecoveringPeer("a", broker, management), LosingPeer("b", broker, management)
    steps = RESPONDER_DROPPED.replace("drop_connection: r", "drop_connection: q").replace("of: r", "of: q").replace("RR-20.2", "RR-20.3")
    result = run_cell(cell_of(scenario(tmp_path, steps), "a", "b"), "c0002", context(management, a, b))
    assert result.status == Status.ERROR
    assert result.message.startswith(f"connection lost: peer b responder c0002.r: {FORCED}")
    assert "c0002.q" not in result.message, "the dropped requester's loss was expected"


def test_the_matcher_excuses_a_dropped_role_only_from_its_drop_on() -> None:
    lost = connection_lost_in("c0003", expected={"c0003.r": 100.0})
    assert not lost({"event": "connection_lost", "responder": "c0003.r", "reason": FORCED, "_at": 100.5})
    assert lost({"event": "connection_lost", "responder": "c0003.r", "reason": FORCED, "_at": 99.0}), "before the drop: a fault"
    assert lost({"event": "connection_lost", "requester": "c0003.q", "reason": FORCED, "_at": 100.5})


def test_a_role_that_does_not_recover_fails_the_clause_naming_its_peer_and_what_is_missing(tmp_path: Path) -> None:
    management, broker = ConnectionsManagement(), FakeBroker()
    a, b = RecoveringPeer("a", broker, management), RecoveringPeer("b", broker, management, recovers=False)
    result = run_cell(cell_of(scenario(tmp_path, RESPONDER_DROPPED), "a", "b"), "c0004", context(management, a, b))
    assert (result.status, result.rule) == (Status.FAIL, "RR-20.2")
    failure = result.failures[0]
    assert (failure.role, failure.peer) == ("responder", "b")
    assert "of peer b" in failure.message
    assert str(failure.observed).startswith("no connection named 'acemq-interop 0badc0de c0004.r'")


def test_a_connection_back_without_its_consumer_is_named_so(tmp_path: Path) -> None:
    management, broker = ConnectionsManagement(), FakeBroker()
    a, b = RecoveringPeer("a", broker, management), RecoveringPeer("b", broker, management, consumes_again=False)
    result = run_cell(cell_of(scenario(tmp_path, RESPONDER_DROPPED), "a", "b"), "c0005", context(management, a, b))
    assert (result.status, result.rule) == (Status.FAIL, "RR-20.2")
    assert "no consumer on c0005.requests" in str(result.failures[0].observed)


def test_a_role_with_no_connection_of_its_name_is_an_error_of_its_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection_steps, "DROP_BOUND_MS", 300)
    management, broker = ConnectionsManagement(), FakeBroker()
    a, b = RecoveringPeer("a", broker, management), RecoveringPeer("b", broker, management, names_connection=False)
    result = run_cell(cell_of(scenario(tmp_path, RESPONDER_DROPPED), "a", "b"), "c0006", context(management, a, b))
    assert result.status == Status.ERROR
    assert result.message.startswith("peer b names no connection `acemq-interop 0badc0de c0006.r`: protocol 5 asks")


def test_a_broker_that_does_not_show_its_connections_skips_saying_why(tmp_path: Path) -> None:
    management, broker = ConnectionsManagement(refuse="management API GET /api/vhosts/v/connections: HTTP 401"), FakeBroker()
    a, b = RecoveringPeer("a", broker, management), RecoveringPeer("b", broker, management)
    result = run_cell(cell_of(scenario(tmp_path, RESPONDER_DROPPED), "a", "b"), "c0007", context(management, a, b))
    assert result.status == Status.SKIP
    assert "needs the management API's connections" in result.reason and "HTTP 401" in result.reason
    assert not a.log and not b.log, "nothing was started"


# -- what a peer is sent ----------------------------------------------------------------


class Recorder:
    """A PeerProcess stand-in that records each command and answers ok."""

    def __init__(self, protocol: int) -> None:
        self.protocol, self.sent = protocol, []
        self.hello: dict[str, Any] = {"peer": "x"}
        self.manifest = type("M", (), {"name": "x", "image": None})()

    def call(self, command: dict[str, Any], bound_s: float) -> dict[str, Any]:
        self.sent.append(command)
        return {"ok": True}


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_a_role_is_named_and_given_the_nodes_only_from_protocol_5(protocol: int) -> None:
    process = Recorder(protocol)
    client = PeerClient(process)  # type: ignore[arg-type]
    client.amqp_urls = ["amqp://a/v", "amqp://b/v"]
    client.open_requester("c0001.q", connection_name="acemq-interop run c0001.q")
    client.start_responder("c0001.r", "c0001.requests", connection_name="acemq-interop run c0001.r")
    client.start_responder("c0001.raw", "c0001.requests", client="raw")
    for command in process.sent[:2]:
        if protocol >= 5:
            assert command["connection_name"] == f"acemq-interop run {command['name']}"
            assert command["amqp_urls"] == ["amqp://a/v", "amqp://b/v"]
        else:
            assert "connection_name" not in command and "amqp_urls" not in command, "an older peer gets what it always got"
    assert "connection_name" not in process.sent[2], "the raw client is no binding role"


@pytest.mark.parametrize("protocol, ended", [(4, True), (5, False)])
def test_a_requesters_lost_connection_fails_its_calls_for_it_only_before_protocol_5(protocol: int, ended: bool) -> None:
    # Before protocol 5 a call on a requester whose connection is gone cannot end well, so the
    # harness ends it with the cause; from 5 the binding ends it (RR-20.1), and that is judged.
    import threading
    from concurrent.futures import Future

    from acemq_interop.peers.process import PeerProcess

    process = object.__new__(PeerProcess)
    process.manifest = type("M", (), {"name": "x"})()
    process.protocol = protocol
    process._lock, process._events, process._events_changed = threading.Lock(), [], threading.Condition()
    call: Future = Future()
    call.command = {"op": "request", "requester": "c0001.q"}  # type: ignore[attr-defined]
    process._pending = {7: call}
    process._event({"event": "connection_lost", "requester": "c0001.q", "reason": FORCED})
    assert call.done() is ended
    if ended:
        assert "connection lost: peer x requester c0001.q" in str(call.exception())


def test_before_any_drop_a_wait_recovered_waits_for_the_first_connection_and_a_nameless_one_is_an_error(tmp_path: Path) -> None:
    steps = ("  - responder: {as: r, role: responder, queue: requests}\n"
             "  - requester: {as: q, role: requester}\n"
             "  - wait_recovered: {of: r, within_ms: 300, rule: RR-20.2}\n")
    for names, status in ((True, Status.PASS), (False, Status.ERROR)):
        management, broker = ConnectionsManagement(), FakeBroker()
        a, b = RecoveringPeer("a", broker, management), RecoveringPeer("b", broker, management, names_connection=names)
        result = run_cell(cell_of(scenario(tmp_path, steps), "a", "b"), "c0008", context(management, a, b))
        assert result.status == status, result.message
        if not names:
            assert result.message.startswith("peer b names no connection `acemq-interop 0badc0de c0008.r` consuming")
