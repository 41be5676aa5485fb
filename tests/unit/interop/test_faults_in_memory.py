"""A fault is never a FAIL: the engine and the runner over in-memory peers.

Pure logic: which result a cell gets when a peer reported a lost connection, stopped
answering or is out of the run. The same faults on a real broker with real peers are in
tests/broker/test_faults_peers.py.
"""
from __future__ import annotations

from acemq_interop.run.engine import run_cell
from acemq_interop.peers.manifests import PeerSpec
from acemq_interop.results.model import PeerStatus, Status
from acemq_interop.run.request import RunRequest
from acemq_interop.run.runner import Runner
from fake_peers import FakeBroker, FakePeer, Hellos
from test_engine_in_memory import ROUND_TRIP, context, pair_cell

FORCED = "320 CONNECTION_FORCED - Closed via management plugin"


class LosingPeer(FakePeer):
    """Reports a lost connection for its requester when it opens it (as a binding's hook would)."""

    def __init__(self, *args, lost_name: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lost_name = lost_name

    def open_requester(self, name: str, *args, **kwargs):
        answer = super().open_requester(name, *args, **kwargs)
        self.events.append({"event": "connection_lost", "requester": self.lost_name or name, "reason": FORCED})
        return answer


def test_a_lost_connection_makes_the_cell_an_error_even_when_a_check_failed() -> None:
    broker = FakeBroker()
    a = LosingPeer("a", broker, defects={"wrong-reply-to"})  # its check fails too: RR-6
    b = FakePeer("b", broker)
    result = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0001", context(a, b))
    assert result.status == Status.ERROR and result.rule is None
    assert result.message.splitlines()[0] == f"connection lost: peer a requester c0001.q: {FORCED}"
    assert "RR-6.2 failed after it" in result.message, "the check that failed is kept in the message"
    (noted,) = [s for s in result.trace if s["step"] == "connection_lost"]
    assert (noted["peer"], noted["requester"], noted["reason"]) == ("a", "c0001.q", FORCED), "the loss is evidence"
    assert result.stderr, "an ERROR keeps the peers' stderr"


def test_a_lost_connection_of_another_cell_is_not_this_cells() -> None:
    broker = FakeBroker()
    a, b = LosingPeer("a", broker, lost_name="c0099.q"), FakePeer("b", broker)
    result = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0002", context(a, b))
    assert result.status == Status.PASS, result.message


def test_a_fail_with_a_peer_that_no_longer_answers_is_an_error_naming_it() -> None:
    broker = FakeBroker()
    a, b = FakePeer("a", broker, defects={"wrong-reply-to"}), FakePeer("b", broker)
    b.stopped = True
    result = run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0003", context(a, b))
    assert result.status == Status.ERROR and result.rule is None
    assert result.message.startswith("peer 'b' unresponsive: no answer to counters"), result.message


def test_a_pass_does_not_ask_the_peers_whether_they_answer() -> None:
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    b.stopped = True  # only a FAIL is checked against the peers' liveness: a PASS costs nothing more
    assert run_cell(pair_cell(ROUND_TRIP, "a", "b"), "c0004", context(a, b)).status == Status.PASS


def test_the_runner_errors_every_cell_of_a_peer_out_of_the_run_at_once_and_runs_the_others() -> None:
    broker = FakeBroker()
    a, b = FakePeer("a", broker), FakePeer("b", broker)
    b.alive = False  # exited, unresponsive or out of protocol earlier in the run
    runner = Runner(RunRequest(manifests={}, specs=(PeerSpec("a"), PeerSpec("b")), scenarios=(ROUND_TRIP,),
                               concurrency=2, log=lambda line: None))
    hellos = Hellos().of("a", "b")
    statuses = {n: PeerStatus(n, "in-memory", hello=hellos[n]) for n in ("a", "b")}
    ran, _interrupted = runner._run_cells(context(a, b), statuses)
    results = {r.id: r for r in ran}
    assert {i: r.status for i, r in results.items()} == {
        "rr-pair-round-trip[requester=a,responder=a]": Status.PASS,
        "rr-pair-round-trip[requester=a,responder=b]": Status.ERROR,
        "rr-pair-round-trip[requester=b,responder=a]": Status.ERROR,
        "rr-pair-round-trip[requester=b,responder=b]": Status.ERROR,
    }
    for result in results.values():
        if result.status == Status.ERROR:
            assert result.message == "peer 'b' exited (code 1)" and result.stderr == {"b": "b: in-memory peer"}
            assert result.rerun, "the cell still has its rerun line"
    assert b.log == [], "no command was sent to the peer out of the run"


def test_the_probe_names_the_brokers_reason_and_never_an_empty_text() -> None:
    import pika.exceptions
    from pika.adapters.utils.connection_workflow import AMQPConnectorSocketConnectError

    from acemq_interop.amqp.probe import cause

    forced = pika.exceptions.ConnectionClosedByBroker(320, "CONNECTION_FORCED - Closed via management plugin")
    assert cause(forced) == "320 CONNECTION_FORCED - Closed via management plugin"
    refused = pika.exceptions.AMQPConnectionError(AMQPConnectorSocketConnectError(ConnectionRefusedError(111, "Connection refused")))
    assert str(refused) == "", "what the harness printed before: nothing"
    assert "Connection refused" in cause(refused)
    assert cause(pika.exceptions.StreamLostError()) == "StreamLostError"
