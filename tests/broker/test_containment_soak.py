"""Issue 34 on a real broker: a peer cannot escape, exhaust or outlive the run, and repeated
runs leak nothing.

- an escaping peer (tests/fixtures/hostile: a `setsid` child and a double-forked daemon,
  each sleeping 600 s) beside the Python peer: every cell as in a clean run, and after the
  run no process with its marker exists;
- a peer that allocates memory until it is killed: its cells that finished keep their
  verdicts, the rest are ERROR naming its memory limit, never FAIL, and the run ends;
- a peer spinning two cores beside the Python peer, on timing-sensitive scenarios: the
  Python peer's cells keep their verdicts (PASS), and the spinner is lowered to nice 19;
- `run --repeat 4`: the soak's figures of every run recorded (soak.json, the console, the
  summary) and flat.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from acemq_interop.broker.endpoint import BrokerEndpoint
from acemq_interop.commands.run import write_outputs
from acemq_interop.peers.manifests import Manifest, discover, load_manifest
from acemq_interop.results.model import RunResult, Status
from acemq_interop.results.soak import FIGURES
from acemq_interop.run.session import run_session
from acemq_interop.spec import scenarios
from support import describe, log, run_request

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "fixtures" / "hostile"


def hostile(name: str, **env: str) -> dict[str, Manifest]:
    manifest = load_manifest(HOSTILE / name / "peer.yaml")
    return {"python": discover()["python"], manifest.name: dataclasses.replace(manifest, env={**manifest.env, **env})}


def run(broker: BrokerEndpoint, out: Path, peers: list[str], scenario_ids: list[str], manifests: dict[str, Manifest],
        concurrency: int = 4, bound_s: float = 120) -> RunResult:
    """A run as the CLI makes it (on the session's broker), its results files written to `out`."""
    chosen = scenarios.select(scenarios.load_all(), scenario_ids)
    request = run_request(broker, peers, chosen, manifests, concurrency=concurrency, build=False,
                          op_bound_s=10.0, out_dir=out)
    started = time.monotonic()
    report = run_session(request).report
    assert time.monotonic() - started < bound_s, f"the run took {time.monotonic() - started:.0f}s"
    write_outputs(report, out)
    return report


def with_marker(marker: str) -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in argv and state != "Z":
                found[int(entry.name)] = argv.replace(b"\0", b" ").decode(errors="replace")
    return found


def involves(result, peer: str) -> bool:
    return any(label.split("@")[0].split("+")[0] == peer for label in result.peers)


def test_an_escaping_peer_leaves_no_process_after_the_run(broker, tmp_path) -> None:
    marker = f"hostile-escape-{uuid.uuid4().hex}"
    try:
        report = run(broker, tmp_path, ["hostile-escape", "python"], ["rr-pair-round-trip"],
                     hostile("escape", HOSTILE_MARKER=marker))
        assert [r.status for r in report.results] == [Status.PASS] * 4, describe(report.results)
        assert not with_marker(marker), f"left after the run: {with_marker(marker)}"
        record = json.loads((tmp_path / "results.json").read_text())["containment"]
        assert record["subreaper"] is True and record["left"] == []
        # The setsid child went with its peer; the daemon (no pipe, no environment) with the session.
        assert [line for line in record["ended"] if marker in line], record
    finally:
        for pid in with_marker(marker):  # whatever the assertions say, nothing is left running
            os.kill(pid, 9)


def test_a_peer_past_its_memory_limit_errors_its_unfinished_cells_and_the_run_ends(broker, tmp_path) -> None:
    # Cells one at a time: the peer's first cells finish before it starts allocating (after
    # 12 answers), and they keep their verdicts.
    report = run(broker, tmp_path, ["hostile-memory", "python"], ["rr-pair-timeout-late-reply", "rr-pair-round-trip"],
                 hostile("memory", HOSTILE_AFTER="12"), concurrency=1)
    mine = [r for r in report.results if involves(r, "hostile-memory")]
    others = [r for r in report.results if not involves(r, "hostile-memory")]
    assert not [r for r in report.results if r.status == Status.FAIL], describe(report.results)
    assert others and all(r.status == Status.PASS for r in others), describe(report.results)
    errors = [r for r in mine if r.status == Status.ERROR]
    assert errors and [r for r in mine if r.status == Status.PASS], f"some finished before it blew:\n{describe(mine)}"
    for result in errors:
        assert result.message.startswith("peer 'hostile-memory' exceeded its memory limit (160 MiB)"), result.message
    usage = report.peers["hostile-memory"].usage
    assert usage is not None and usage["peak_rss_mib"] > 160 and report.peers["hostile-memory"].limits["memory_mib"] == 160
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["peers"]["hostile-memory"]["limits"]["memory_mib"] == 160
    assert data["peers"]["python"]["usage"]["peak_rss_mib"] < 1024


SENSITIVE = ["rr-requester-timeout-bound", "rr-pair-timeout-late-reply", "sg-gatherer-budget-bound",
             "rr-pair-reply-to-closed-requester", "rr-pair-one-reply-queue"]


def test_a_spinning_peer_leaves_the_verdicts_of_the_other_peer_as_they_are(broker, tmp_path) -> None:
    report = run(broker, tmp_path, ["hostile-spin", "python"], SENSITIVE, hostile("spin"), bound_s=180)
    python_only = [r for r in report.results if not involves(r, "hostile-spin")]
    assert len(python_only) == len(SENSITIVE)
    assert all(r.status == Status.PASS for r in python_only), describe(python_only)
    spinner = report.peers["hostile-spin"]
    assert spinner.usage is not None and spinner.usage["demoted"] is True, spinner.usage
    assert spinner.usage["peak_cpu_share"] > 0.25 and spinner.unavailable is None


def test_a_repeat_records_the_soak_and_it_is_flat(tmp_path) -> None:
    """Each run a whole one, its own private node (the default): what a node's start and
    stop leave in the harness (epmd's daemonizing left two zombies a run) shows here."""
    command = [sys.executable, "-m", "acemq_interop", "run", "--repeat", "4", "--peers", "python", "--scenarios",
               "rr-pair-round-trip,rr-requester-timeout-bound", "--no-build", "-q", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=400)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    soak = json.loads((tmp_path / "soak.json").read_text())
    assert [r["run"] for r in soak["runs"]] == [1, 2, 3, 4]
    for run_figures in soak["runs"]:
        missing = [name for name in FIGURES if run_figures.get(name) is None]
        assert not missing, f"not recorded: {missing} in {run_figures}"
        assert run_figures["connections"] == 0 and run_figures["vhosts"] == 0 and run_figures["temp"] == 0, run_figures
    assert soak["growth"] == [] and soak["summary"] == "soak: every figure flat after the first 3 runs (4 runs)"
    assert soak["summary"] in output and "RSS MiB" in output
    assert "## Soak: what each run left" in (tmp_path / "summary.md").read_text()
    for k in range(1, 5):
        data = json.loads((tmp_path / f"run-{k}" / "results.json").read_text())
        left = data["broker_left"]
        assert (left["connections"], left["connections_left"], left["vhosts"]) == (0, [], 0), left
        assert isinstance(left["stale_connection_rows"], list) and data["containment"]["left"] == []
