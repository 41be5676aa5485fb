"""The harness on a real broker when peers or inputs are broken: clear results, no hangs."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import jsonschema
import pytest

import acemq_interop

from acemq_interop.run.cells import ERROR
from support import describe, fixture_manifest, run

pytestmark = pytest.mark.broker


@pytest.mark.parametrize(
    "mode, words",
    [
        ("crash", "exited (code 3)"),
        ("silent", "unresponsive: no answer to responder.start"),
    ],  # a peer writing garbage: tests/broker/test_faults_peers.py (the same fault peer)
)
def test_a_broken_peer_gives_error_cells_with_the_reason(broker, mode: str, words: str) -> None:
    started = time.monotonic()
    report = run(broker, [f"broken-{mode}"], ["rr-responder-native-only", "rr-pair-round-trip"],
                 manifests=fixture_manifest(mode), op_bound_s=3.0)
    assert time.monotonic() - started < 60, "a broken peer must not make the run hang"
    assert [r.status for r in report.results] == [ERROR, ERROR], describe(report.results)
    assert any(words in r.message for r in report.results), describe(report.results)
    crashed = [r for r in report.results if "fault peer: crashing on purpose" in str(r.stderr)]
    assert mode != "crash" or crashed, "the peer's stderr tail is kept for the report"


def test_a_peer_offering_what_the_catalogue_lacks_gives_error_cells_with_the_reason(broker) -> None:
    report = run(broker, ["broken-offer"], ["rr-responder-native-only", "rr-pair-round-trip"],
                 manifests=fixture_manifest("offer"), op_bound_s=3.0)
    assert [r.status for r in report.results] == [ERROR, ERROR], describe(report.results)
    for r in report.results:
        assert "offers mutant 'made-up', which the catalogue does not have" in r.message, r.message
        assert "offers profile '9.9.9', which the catalogue does not have" in r.message, r.message


def test_nothing_is_left_on_the_broker_after_a_run(broker) -> None:
    report = run(broker, ["python"], ["rr-pair-round-trip", "rr-responder-failure-reply", "sg-pair-publish-shortfall"])
    assert report.ok, describe(report.results)
    assert report.vhost.startswith("acemq-interop-")
    assert report.vhost not in broker.management().vhosts(), "the run's vhost (and every queue in it) is deleted"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acemq_interop", *args], capture_output=True, text=True, timeout=120)


def test_cli_unknown_peer_is_a_usage_error() -> None:
    done = cli("run", "--peers", "python,fortran", "--broker", "amqp://guest:guest@127.0.0.1:1/")
    assert done.returncode == 2
    assert "unknown peer 'fortran'" in done.stderr


def test_cli_unreachable_broker_says_so() -> None:
    done = cli("run", "--peers", "python", "--broker", "amqp://guest:guest@127.0.0.1:1/", "--management-url", "http://127.0.0.1:1")
    assert done.returncode == 3  # infrastructure, not bad input
    assert "management API at http://127.0.0.1:1 does not answer" in done.stderr


def test_cli_run_of_one_cell_writes_reports_and_exits_zero(broker, tmp_path) -> None:
    url = broker.amqp_url("/").rsplit("/", 1)[0] + "/"
    done = cli("run", "--peers", "python", "--cell", "rr-pair-round-trip[requester=python,responder=python]",
               "--broker", url, "--management-url", broker.mgmt_url, "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 cells: 1 PASS" in done.stdout
    for name in ("results.json", "junit.xml", "report.html"):
        assert (tmp_path / name).stat().st_size > 0


def test_run_repeat_runs_the_selection_each_time_and_reports_the_verdicts_across_runs(broker, tmp_path) -> None:
    url = broker.amqp_url("/").rsplit("/", 1)[0] + "/"
    cell = "rr-pair-round-trip[requester=python,responder=python]"
    done = cli("run", "--peers", "python", "--cell", cell, "--repeat", "2",
               "--broker", url, "--management-url", broker.mgmt_url, "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 runs of 1 cells: 0 cell(s) whose verdict varied" in done.stdout
    for k in (1, 2):
        ran = json.loads((tmp_path / f"run-{k}" / "results.json").read_text())
        assert [(c["id"], c["status"]) for c in ran["cells"]] == [(cell, "PASS")]
    top = json.loads((tmp_path / "results.json").read_text())
    schema = json.loads((Path(acemq_interop.__file__).parent / "schemas" / "results.schema.json").read_text())
    jsonschema.validate(top, schema)
    assert top["repeat"]["cells"] == 1 and top["repeat"]["varying"] == []
    assert [r["counts"]["PASS"] for r in top["repeat"]["runs"]] == [1, 1]
    assert "run-2/results.json" in (tmp_path / "summary.md").read_text()


def test_the_default_run_starts_a_private_node_and_leaves_nothing_behind(tmp_path) -> None:
    done = cli("run", "--peers", "python", "--cell", "rr-pair-round-trip[requester=python,responder=python]", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 cells: 1 PASS" in done.stdout
    node = next(line.split()[5] for line in done.stderr.splitlines() if line.startswith("starting a private RabbitMQ node"))
    left = subprocess.run(["pgrep", "-f", node], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"the node {node} is still running: {left.stdout}"


def test_sigterm_stops_a_run_promptly_and_cleans_up(tmp_path) -> None:
    run = subprocess.Popen([sys.executable, "-m", "acemq_interop", "run", "--peers", "python", "--out", str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    node = None
    for line in run.stderr:
        if line.startswith("starting a private RabbitMQ node"):
            node = line.split()[5]
        if line.startswith("[1/"):
            break
    run.terminate()
    try:
        run.wait(timeout=90)
    finally:
        run.kill()
    assert node is not None
    assert run.returncode == 130, run.returncode
    left = subprocess.run(["pgrep", "-f", node], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"the node {node} is still running after SIGTERM"
