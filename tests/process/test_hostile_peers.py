"""Issue 20's hostile peers, as real processes (no broker): one that forks a child keeping its
pipes, one behind `sh -c`, one that writes JSON nested 100000 deep, one that logs the URL it
was given, one that floods its stderr, one that looks for credentials in its environment.
Each bounded in time; nothing is left running.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from acemq_interop.core import redact
from acemq_interop.peers import process as process_mod
from acemq_interop.peers.manifests import Manifest
from acemq_interop.peers.process import PeerProcess, group_members

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "scripted_peer.py"
PASSWORD = "hostile-peer-pw-7731"
URL = f"amqp://tester:{PASSWORD}@127.0.0.1:1/vhost"


def manifest(run: tuple[str, ...], env: dict[str, str] | None = None) -> Manifest:
    return Manifest(name="scripted", language="Python", description="", folder=SCRIPT.parent, cwd=SCRIPT.parent,
                    run=run, build=(), test=(), env=env or {}, requires=())


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def child_of(process: PeerProcess, bound_s: float = 10) -> int:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        for line in process.stderr_tail().splitlines():
            if line.startswith("child "):
                return int(line.split()[1])
        time.sleep(0.02)
    raise AssertionError(f"no child reported: {process.stderr_tail()}")


@pytest.mark.parametrize("wrapped", [False, True], ids=["direct", "sh -c"])
def test_a_peer_that_forks_leaves_no_process_behind(tmp_path: Path, wrapped: bool) -> None:
    argv = (sys.executable, str(SCRIPT), "fork")
    run = ("sh", "-c", " ".join(argv)) if wrapped else argv  # sh forks python: the peer is a grandchild
    peer = PeerProcess(manifest(run), tmp_path)
    peer.handshake(URL, bound_s=30)
    child = child_of(peer)
    assert alive(child)
    assert os.getpgid(child) == peer.pid, "the peer and its children are one process group of their own"
    started = time.monotonic()
    peer.shutdown(bound_s=2)
    assert time.monotonic() - started < 15
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child), f"the peer's child {child} survived the run"
    assert not group_members(peer.pid)


def test_a_killed_peer_takes_its_group_with_it(tmp_path: Path) -> None:
    peer = PeerProcess(manifest(("sh", "-c", f"{sys.executable} {SCRIPT} fork")), tmp_path)
    peer.handshake(URL, bound_s=30)
    child = child_of(peer)
    peer._die("killed on purpose", kill=True)
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child)
    peer.shutdown(bound_s=2)


def test_deeply_nested_json_is_out_of_protocol_and_the_reader_survives(tmp_path: Path) -> None:
    peer = PeerProcess(manifest((sys.executable, str(SCRIPT), "nested")), tmp_path)
    peer.handshake(URL, bound_s=30)
    deadline = time.monotonic() + 20
    while peer.fault is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert peer.fault is not None and "out of protocol" in peer.fault and "nested 100000 levels deep" in peer.fault, peer.fault
    assert "unresponsive" not in peer.fault, "the cause, not a symptom"
    peer.shutdown(bound_s=2)


def test_what_a_peer_logs_is_redacted_like_the_results(tmp_path: Path) -> None:
    redact.remember(PASSWORD)
    peer = PeerProcess(manifest((sys.executable, str(SCRIPT), "log-url")), tmp_path)
    peer.handshake(URL, bound_s=30)
    peer.shutdown(bound_s=2)
    log = peer.log_path.read_text()
    assert "connecting to amqp://tester:***@127.0.0.1:1/vhost" in log, log
    assert PASSWORD not in log and PASSWORD not in peer.stderr_tail()


def test_a_peer_inherits_no_credential(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(redact.BROKER_ENV, URL)
    monkeypatch.setenv("SOME_OTHER_URL", f"https://ci:{PASSWORD}@example.org/")
    peer = PeerProcess(manifest((sys.executable, str(SCRIPT), "env"), env={"FROM_MANIFEST": "yes"}), tmp_path)
    peer.handshake(URL, bound_s=30)
    peer.shutdown(bound_s=2)
    seen = [line for line in peer.log_path.read_text().splitlines() if line.startswith("ENV ")]
    assert any(line == "ENV FROM_MANIFEST=yes" for line in seen)
    assert not [line for line in seen if redact.BROKER_ENV in line or "SOME_OTHER_URL" in line], seen


def test_a_flooding_peer_s_log_is_capped_with_a_marker(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(process_mod, "STDERR_LOG_BYTES", 1024 * 1024)
    peer = PeerProcess(manifest((sys.executable, str(SCRIPT), "flood:20")), tmp_path)
    peer.handshake(URL, bound_s=30)
    deadline = time.monotonic() + 60
    while "flood done" not in peer.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    peer.shutdown(bound_s=2)
    size = peer.log_path.stat().st_size
    text = peer.log_path.read_text()
    assert size <= 1024 * 1024, size
    assert text.startswith("[acemq-interop: ") and "dropped" in text and text.rstrip().endswith("flood done")
