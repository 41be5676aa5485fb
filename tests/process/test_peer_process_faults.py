"""The peer's pipes under faults: every bound holds, every fault is marked once with its cause.

Pure logic of acemq_interop.peers.process against a scripted process (scripted_peer.py): no
broker, no binding. What real peers do when they are killed, stopped or write junk is in
tests/broker/test_faults_peers.py.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from acemq_interop.core.errors import PeerError
from acemq_interop.peers.manifests import Manifest
from acemq_interop.peers.process import MAX_LINE_BYTES, PeerProcess, excerpt, exit_text

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "scripted_peer.py"
URL = "amqp://guest:guest@127.0.0.1:1/unused"


def start(tmp_path: Path, *rules: str) -> PeerProcess:
    manifest = Manifest(name="scripted", language="Python", description="", folder=SCRIPT.parent, cwd=SCRIPT.parent,
                        run=(sys.executable, str(SCRIPT), *rules), build=(), test=(), env={}, requires=())
    process = PeerProcess(manifest, tmp_path)
    process.handshake(URL, bound_s=30)
    return process


@pytest.fixture
def peers(tmp_path: Path):
    started: list[PeerProcess] = []

    def make(*rules: str) -> PeerProcess:
        started.append(start(tmp_path, *rules))
        return started[-1]

    yield make
    for process in started:
        process.shutdown(bound_s=2)
        assert process._proc.poll() is not None, "no process is left"


def wait_fault(process: PeerProcess, bound_s: float = 10) -> str:
    deadline = time.monotonic() + bound_s
    while process.fault is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.fault is not None
    return process.fault


def test_excerpt_and_exit_text() -> None:
    assert excerpt(b"short") == "'short'"
    long = excerpt(b"x" * 5000)
    assert long.startswith("'" + "x" * 200 + "'") and long.endswith("(5000 bytes)") and len(long) < 230
    assert excerpt("a\x00b\nc") == "'a?b?c'", "control characters never reach a report"
    assert (exit_text(3), exit_text(-9), exit_text(-19)) == ("code 3", "signal 9, SIGKILL", "signal 19, SIGSTOP")


def test_a_peer_that_exits_fails_the_command_under_way_and_every_later_one_at_once(peers) -> None:
    process = peers("exit:counters")
    with pytest.raises(PeerError, match=r"peer 'scripted' exited \(code 3\); last stderr lines:\nscripted peer: going away"):
        process.call({"op": "counters", "of": "x"}, 10)
    started = time.monotonic()
    with pytest.raises(PeerError, match="exited"):
        process.call({"op": "counters", "of": "x"}, 10)
    assert time.monotonic() - started < 0.5


def test_a_killed_peer_is_named_with_its_signal(peers) -> None:
    process = peers()
    os.kill(process.pid, signal.SIGKILL)
    assert wait_fault(process).startswith("peer 'scripted' exited (signal 9, SIGKILL)")


def test_a_stopped_peer_is_unresponsive_after_one_bound_and_killed(peers) -> None:
    process = peers()
    os.kill(process.pid, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(PeerError, match=r"peer 'scripted' unresponsive: no answer to counters \(id \d+\) within 0\.5s"):
        process.call({"op": "counters", "of": "x"}, 0.5)
    assert time.monotonic() - started < 0.5 + 5 + 1, "one bound and one liveness check"
    assert process._proc.wait(timeout=5) == -signal.SIGKILL, "the harness kills what it cannot use"


def test_a_command_that_hangs_in_a_peer_that_still_answers_fails_alone(peers) -> None:
    process = peers("hang:request")
    with pytest.raises(PeerError, match=r"did not answer request \(id \d+\) within 0\.3s \(it still answers other commands\)"):
        process.call({"op": "request", "requester": "c1.q"}, 0.3)
    assert process.fault is None, "the peer stays in the run"
    assert process.call({"op": "counters", "of": "c1.q"}, 5)["ok"] is True


def test_a_lost_connection_ends_the_calls_of_that_requester_at_once(peers) -> None:
    process = peers("lose:request")
    started = time.monotonic()
    with pytest.raises(PeerError, match="connection lost: peer scripted requester c1.q: 320 CONNECTION_FORCED"):
        process.call({"op": "request", "requester": "c1.q"}, 30)
    assert time.monotonic() - started < 5, "not its own bound"
    assert process.fault is None, "a lost connection is the cell's fault, not the peer's"


@pytest.mark.parametrize("rules, words", [
    (["write:not json\\n"], "is out of protocol: it wrote not JSON (Expecting value): 'not json'"),
    (["write:\\xff\\xfe\\n"], "is out of protocol: it wrote not UTF-8: '\ufffd\ufffd'"),
    (['write:{"id": 4242, "ok": true}\\n'], "it wrote an answer to id 4242, which no command is waiting on"),
    (['write:{"event": "handled"}\\n'], "is out of protocol: it wrote (top): 'responder' is a required property"),
    (["huge"], f"it wrote a line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB: '{{\"event\": \"handled\""),
])
def test_a_peer_out_of_protocol_is_marked_with_a_bounded_excerpt_and_killed(peers, rules, words) -> None:
    process = peers(*rules)
    fault = wait_fault(process)
    assert words in fault, fault
    assert len(fault.splitlines()[0]) < 400
    assert process._proc.wait(timeout=5) == -signal.SIGKILL
    with pytest.raises(PeerError, match="out of protocol"):
        process.call({"op": "counters", "of": "x"}, 5)


def test_a_peer_that_stops_reading_never_blocks_the_sender(peers) -> None:
    process = peers("deaf")
    started = time.monotonic()
    futures = [process.send({"op": "counters", "of": "x" * 1000}) for _ in range(500)]  # more than a pipe holds
    assert time.monotonic() - started < 1, "send queues, it never waits on the pipe"
    with pytest.raises(PeerError, match="unresponsive"):
        process.wait(futures[0], 0.5)
