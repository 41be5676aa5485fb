"""Typos are usage errors (exit 2) found before any broker starts, with the valid choices.

Each run points at a broker that cannot exist (port 1): if the harness got as far as the
broker, it would exit 3 (infrastructure), so exit 2 proves the check came first.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

NO_BROKER = ["--broker", "amqp://guest:guest@127.0.0.1:1/"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acemq_interop", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, says", [
    (["--peers", "nosuchpeer"], "unknown peer 'nosuchpeer'"),
    (["--peers", "go@9.9"], "unknown profile '9.9'; profiles: current"),
    (["--peers", "node@0.3.0"], "no profile '0.3.0' for node; profiles for node: current"),
    (["--peers", "go+no-such-mutant"], "unknown mutant 'no-such-mutant'; mutants: acks-on-delivery, acks-undeliverable"),
    (["--peers", ""], "the peer list is empty"),
    (["--peers", "go", "--scenarios", "rr-pair-*,no-such-*"], "no scenario id matches 'no-such-*'"),
    (["--peers", "go", "--cell", "rr-pair-round-trip[requester=go,responder=ruby]"], "no planned cell has that id"),
    (["--peers", "go", "--concurrency", "0"], "--concurrency 0: must be at least 1"),
    (["--peers", "go", "--op-timeout", "0"], "--op-timeout 0: must be more than 0"),
    (["--peers", "go", "--shard", "4/3"], "K must be between 1 and N"),
    (["--peers", "go", "--shard", "x"], "write K/N"),
    (["--peers", "go", "--peer-dir", "/nonexistent/peer"], "no such peer folder"),
])
def test_a_typo_exits_2_before_any_broker_starts(args: list[str], says: str, tmp_path) -> None:
    started = time.monotonic()
    done = cli("run", *args, *NO_BROKER, "--no-build", "--out", str(tmp_path / "out"))  # never the checkout's out/
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30  # nothing was built or started


def test_an_unreachable_broker_is_infrastructure_exit_3(tmp_path) -> None:
    done = cli("run", "--peers", "python", "--scenarios", "rr-pair-round-trip", *NO_BROKER, "--no-build",
               "--out", str(tmp_path / "out"))
    assert done.returncode == 3, done.stderr[-2000:]
    assert "guest:guest" not in done.stderr + done.stdout  # the password is never printed


def test_version_and_exit_codes_in_help() -> None:
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("acemq-interop ")
    helptext = cli("run", "--help").stdout
    assert "exit codes: 0" in helptext and "3 infrastructure" in " ".join(helptext.split())


def test_list_into_a_closed_pipe_is_quiet() -> None:
    done = subprocess.run(f"{sys.executable} -m acemq_interop list | head -1", shell=True, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
