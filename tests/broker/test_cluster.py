"""A cluster of three private nodes (`run --cluster 3`), through the CLI as a user runs it: the
cluster scenarios on the Python binding, clean and with the mutants they catch, every verdict
naming its clause and the side that broke it; the no-loss account's figures of the clean
rolling restart; a queue's leadership moved by the broker; nothing left running afterwards.

Sized for CI (a cluster cell faults its nodes, so it runs alone, 15 to 45 s each): the clean
binding on three scenarios and each mutant on the one scenario that catches it first.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acemq_interop.broker.node import NODE_DIR_PREFIX, node_dir_roots

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
CLEAN = ("cl-responder-node-dies", "cl-requester-node-dies", "cl-queue-leader-moves", "cl-rolling-restart")
# mutant -> (the scenario it meets, the clause its FAIL must name, the side charged)
MUTANTS = {
    "acks-on-delivery": ("cl-responder-node-dies", "RR-20.4", "responder"),
    "lost-calls-wait": ("cl-requester-node-dies", "RR-20.1", "requester"),
    "requester-no-recovery": ("cl-requester-node-dies", "RR-20.3", "requester"),
}


def _cell(scenario: str, spec: str) -> str:
    responders = "responders" if scenario == "cl-rolling-restart" else "responder"  # one per peer of the run there
    return f"{scenario}[requester={spec},{responders}={spec}]"


def _nodes_running() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"beam" in command and b"acemq-interop-" in command:
                found.append(entry.name)
    return found


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str]:
    out = tmp_path_factory.mktemp("cluster")
    specs = ["python", *(f"python+{m}" for m in MUTANTS)]
    cells = [_cell(s, "python") for s in CLEAN] + [_cell(s, f"python+{m}") for m, (s, _, _) in MUTANTS.items()]
    argv = [sys.executable, "-m", "acemq_interop", "run", "--cluster", "3", "--peers", ",".join(specs), "--diagonal",
            "--out", str(out), *[a for c in cells for a in ("--cell", c)]]
    before = {p for root in node_dir_roots() for p in root.glob(f"{NODE_DIR_PREFIX}*")}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    after = {p for root in node_dir_roots() for p in root.glob(f"{NODE_DIR_PREFIX}*")}
    assert after <= before, f"node dirs left: {sorted(after - before)}"
    assert not _nodes_running(), f"cluster nodes still running after the run: pids {_nodes_running()}"
    results = json.loads((out / "results.json").read_text())
    return done.returncode, {c["id"]: c for c in results["cells"]}, done.stdout + done.stderr


def test_the_clean_binding_passes_every_cluster_scenario_it_meets(cluster_run) -> None:
    code, cells, output = cluster_run
    assert "cluster of 3 nodes ready" in output
    for scenario in CLEAN:
        cell = cells[_cell(scenario, "python")]
        assert cell["status"] == "PASS", f"{cell['id']}: {cell.get('message')}\n{output[-3000:]}"


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_each_mutant_fails_naming_its_clause_and_the_side_that_broke_it(cluster_run, mutant: str) -> None:
    code, cells, output = cluster_run
    scenario, clause, side = MUTANTS[mutant]
    cell = cells[_cell(scenario, f"python+{mutant}")]
    assert cell["status"] == "FAIL", f"{cell['id']}: {cell['status']} {cell.get('message')}"
    assert any(f["clause"] == clause and f["role"] == side for f in cell["failures"]), cell["failures"]
    assert code == 1  # FAILs and no fault: exit 1, not 3 or 4


def test_the_rolling_restart_loses_nothing_and_answers_nothing_twice(cluster_run) -> None:
    _, cells, _ = cluster_run
    cell = cells[_cell("cl-rolling-restart", "python")]
    account = next(t for t in cell["trace"] if t["step"] == "no_loss")
    assert account["requests"] == 100
    assert account["lost"] == 0 and account["answered_twice"] == 0, account
    restarted = [t["node"] for t in cell["trace"] if t["step"] == "rolling_restart"]
    assert restarted == ["C", "B", "A"]
    assert account["answered"] >= 50, account  # the stream went on through the restarts


def test_a_leadership_move_goes_where_it_is_sent_and_every_request_is_answered(cluster_run) -> None:
    _, cells, _ = cluster_run
    cell = cells[_cell("cl-queue-leader-moves", "python")]
    moved = next(t for t in cell["trace"] if t["step"] == "leader_move")
    assert moved["was"] == "B" and moved["node"] == "C", moved  # declared on B by its responder; the next node is C
    account = next(t for t in cell["trace"] if t["step"] == "no_loss")
    assert account["requests"] == 30 and account["answered"] == 30 and account["lost"] == 0, account
