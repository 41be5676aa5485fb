"""Faults of peers and of the probe, injected on a real broker with real peers.

Every fault is an ERROR naming its cause, never a FAIL, and no fault costs more than about
one bound: a peer killed, a peer stopped (SIGSTOP), connections force-closed by the broker
(the management API's DELETE /api/connections/NAME, for every peer and for the probe), and
a peer writing junk on its stdout (the real Python peer wrapped by
tests/fixtures/peers/fault_peer.py). Each test asserts the cells' statuses, the cause in
their messages, the exit code where it goes through the CLI, that the results files were
written, and that no peer process is left.
"""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from acemq_interop.spec import scenarios
from acemq_interop.broker.endpoint import BrokerEndpoint
from acemq_interop.commands.run import write_outputs
from acemq_interop.peers.manifests import Manifest, discover, load_manifest
from acemq_interop.results.model import RunResult, Status
from acemq_interop.peers.builds import build_peer
from acemq_interop.run.session import run_session
from support import FIXTURE_PEERS, describe, log, run_request

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
EVERY_PEER = ["python", "go", "node", "ruby", "java", "dotnet"]
OUTPUTS = ("results.json", "junit.xml", "report.html", "summary.md")
FORCED = "CONNECTION_FORCED"
HARNESS_CONNECTIONS = ("acemq-interop probe", "acemq-interop tracer")  # the harness's own, by their client names' start


# -- the broker's side: the management API, as a test uses it ------------------------


class Api:
    """Just what these tests need of the management API: reads that take a 404 as empty."""

    def __init__(self, broker: BrokerEndpoint):
        self.base = broker.mgmt_url.rstrip("/")
        self.auth = "Basic " + base64.b64encode(f"{broker.username}:{broker.password}".encode()).decode()

    def call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.base + path, method=method)
        request.add_header("Authorization", self.auth)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # a vhost or connection that went away meanwhile
                return []
            raise
        return json.loads(raw) if raw else None

    def vhosts(self) -> set[str]:
        return {v["name"] for v in self.call("GET", "/api/vhosts")}

    def connections(self, vhost: str) -> list[dict[str, Any]]:
        return self.call("GET", f"/api/vhosts/{urllib.parse.quote(vhost, safe='')}/connections") or []

    def consumers(self, vhost: str) -> list[dict[str, Any]]:
        return self.call("GET", f"/api/consumers/{urllib.parse.quote(vhost, safe='')}") or []

    def close(self, connection: str) -> None:
        self.call("DELETE", f"/api/connections/{urllib.parse.quote(connection, safe='')}")


def _client_name(connection: dict[str, Any]) -> str:
    return str((connection.get("client_properties") or {}).get("connection_name") or "")


def poll(what: str, bound_s: float, check: Callable[[], Any]) -> Any:
    """`check()` until it gives something truthy; the test fails when the bound passes."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)  # a poll interval, not a wait for a race: the condition is checked
    raise AssertionError(f"{what} did not happen within {bound_s:.0f}s")


def run_vhost(api: Api, before: set[str], bound_s: float = 120) -> str:
    """The vhost the run under test created (the session's broker runs one run at a time)."""
    # Not the pre-flight's scratch vhost (acemq-interop-preflight-*), made and deleted before the run's.
    return poll("the run's vhost", bound_s, lambda: next(iter(sorted(
        v for v in api.vhosts() - before if not v.startswith("acemq-interop-preflight-"))), None))


def peer_connections(api: Api, vhost: str) -> list[dict[str, Any]]:
    """The vhost's connections that are not the harness's own (probe, tracer)."""
    return [c for c in api.connections(vhost) if not _client_name(c).startswith(HARNESS_CONNECTIONS)]


def cell_consumers(api: Api, vhost: str) -> dict[str, str]:
    """queue name -> connection name of every consumer the peers hold."""
    # Only connections listed as a peer's count: the listing of connections and that of
    # consumers are read apart, and the tracer's consumer must never be taken for a peer's.
    peers = {c["name"] for c in peer_connections(api, vhost)}
    found = {}
    for consumer in api.consumers(vhost):
        channel = consumer.get("channel_details")
        if isinstance(channel, dict) and channel.get("connection_name") in peers:  # [] while it closes
            found[consumer["queue"]["name"]] = channel["connection_name"]
    return found


# -- the machine's side: the processes a run started ----------------------------------


def children(pid: int) -> dict[int, str]:
    """pid -> command line of the live processes whose parent is `pid`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry.name)] = cmdline
    return found


# -- runs ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built() -> dict[str, Manifest]:
    """Every peer built once for the module (the runs below do not build again)."""
    manifests = discover()
    for name in EVERY_PEER:
        took, failure = build_peer(manifests[name], log)
        assert failure is None, f"{name}: {failure}"
    return manifests


def run_in_process(broker: BrokerEndpoint, out: Path, peers: list[str], scenario_ids: list[str],
                   manifests: dict[str, Manifest], inject: Callable[[str], None], op_bound_s: float = 10.0,
                   diagonal: bool = True, concurrency: int = 4, bound_s: float = 90) -> RunResult:
    """A run as the CLI makes it (minus the broker's start) of real scenarios or those of
    tests/fixtures/scenarios, `inject` called with its vhost while it runs; its results
    files are written to `out` and checked."""
    real = {sc.id: sc for sc in scenarios.load_all()}
    chosen = [real[name] if name in real else scenarios.load_file(FIXTURE_SCENARIOS / f"{name}.yaml") for name in scenario_ids]
    request = run_request(broker, peers, chosen, manifests, concurrency=concurrency, build=False,
                          diagonal=diagonal, op_bound_s=op_bound_s, out_dir=out)
    api = Api(broker)
    before_vhosts, before_children = api.vhosts(), set(children(os.getpid()))
    done: dict[str, Any] = {}

    def go() -> None:
        try:
            done["report"] = run_session(request).report
        except BaseException as exc:  # shown by the assertion below
            done["error"] = exc

    runner = threading.Thread(target=go, daemon=True)
    started = time.monotonic()
    runner.start()
    inject(run_vhost(api, before_vhosts))
    runner.join(bound_s - (time.monotonic() - started))
    assert not runner.is_alive(), f"the run did not end within {bound_s}s"
    assert "error" not in done, repr(done.get("error"))
    report: RunResult = done["report"]
    for path in write_outputs(report, out):
        assert path.stat().st_size > 0, path
    left = set(children(os.getpid())) - before_children
    assert not left, f"peer processes left behind: {children(os.getpid())}"
    return report


def cli_run(broker: BrokerEndpoint, out: Path, peers: str, scenario_ids: str, op_timeout: float,
            when: str, then: Callable[[int], None], bound_s: float = 150) -> tuple[int, dict[str, Any], str]:
    """`acemq-interop run --concurrency 1` on the session's broker; once it prints a line
    starting with `when`, `then` is called with its pid. Its exit code, its results.json and
    its output; checks that its results files were written and no peer process outlived it."""
    url = f"amqp://{broker.username}:{broker.password}@{broker.host}:{broker.port}/"
    command = [sys.executable, "-m", "acemq_interop", "run", "--peers", peers, "--scenarios", scenario_ids,
               "--broker", url, "--management-url", broker.mgmt_url, "--out", str(out), "--no-build",
               "--concurrency", "1", "--op-timeout", str(op_timeout), "--no-known-failures"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    peers_seen: dict[int, str] = {}
    deadline = time.monotonic() + bound_s
    try:
        for line in proc.stdout:  # the CLI prints a line per cell as each ends
            lines.append(line)
            if not peers_seen and line.startswith(when):
                peers_seen = children(proc.pid)
                then(proc.pid)
            assert time.monotonic() < deadline, f"the run did not end within {bound_s}s:\n{''.join(lines)}"
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = {pid: cmd for pid, cmd in peers_seen.items() if Path(f"/proc/{pid}").exists()}
        for pid in left:  # leave nothing behind, whatever the assertion says
            os.kill(pid, signal.SIGKILL)
    output = "".join(lines)
    assert peers_seen, f"no line started with {when!r}:\n{output}"
    assert not left, f"peer processes left behind: {left}"
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, f"{name} not written:\n{output}"
    return proc.returncode, json.loads((out / "results.json").read_text(encoding="utf-8")), output


def peer_pid(cli_pid: int, marker: str) -> int:
    """The pid of the peer process the CLI started whose command line contains `marker`."""
    return poll(f"a peer process with {marker!r}", 60,
                lambda: next((pid for pid, cmd in children(cli_pid).items() if marker in cmd), None))


def statuses(cells: list[dict[str, Any]]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in cells}


def involves(cell: dict[str, Any], peer: str) -> bool:
    return peer in json.dumps(cell["roles"])


# -- a peer killed, a peer stopped --------------------------------------------------------

# go first: the first cell is go x go, the second has the Python peer as its responder.
TWO_PEERS = "go,python"
SCENARIOS_OF_TWO = "rr-pair-reply-to-closed-requester,rr-pair-round-trip"
FIRST_CELL_DONE = "[1/"


def signal_python(signum: int) -> Callable[[int], None]:
    """Send `signum` to the CLI's Python peer."""
    def send(cli_pid: int) -> None:
        os.kill(peer_pid(cli_pid, "acemq_peer"), signum)
    return send


def test_a_peer_killed_mid_run_errors_its_cells_at_once_and_the_others_run_on(broker, built, tmp_path) -> None:
    started = time.monotonic()
    code, results, output = cli_run(broker, tmp_path, TWO_PEERS, SCENARIOS_OF_TWO, 10, FIRST_CELL_DONE,
                                    signal_python(signal.SIGKILL))
    assert time.monotonic() - started < 120
    assert code == 1, output
    cells = results["cells"]
    python_cells = [c for c in cells if involves(c, "python")]
    go_only = [c for c in cells if not involves(c, "python")]
    assert python_cells and go_only
    assert all(c["status"] == "ERROR" for c in python_cells), statuses(cells)
    assert all(c["status"] == "PASS" for c in go_only), statuses(cells)
    for cell in python_cells:
        assert "peer 'python' exited (signal 9, SIGKILL)" in cell["message"], cell["message"]
        assert "python" in cell["stderr"], "the peer's stderr tail is kept (this peer logs little: it may be empty)"
    # The cell under way when it died may wait out one bound; the ones after do not wait.
    durations = sorted(c["duration_s"] for c in python_cells)
    assert all(d < 1.0 for d in durations[:-1]), durations
    assert "exited (signal 9, SIGKILL)" in output


def test_a_stopped_peer_costs_one_bound_not_one_per_cell(broker, built, tmp_path) -> None:
    op_timeout = 4.0
    code, results, output = cli_run(broker, tmp_path, TWO_PEERS, SCENARIOS_OF_TWO, op_timeout, FIRST_CELL_DONE,
                                    signal_python(signal.SIGSTOP))
    assert code == 1, output
    cells = results["cells"]
    python_cells = [c for c in cells if involves(c, "python")]
    assert all(c["status"] == "ERROR" for c in python_cells), statuses(cells)
    assert all(c["status"] == "PASS" for c in cells if not involves(c, "python")), statuses(cells)
    for cell in python_cells:
        assert "peer 'python' unresponsive: no answer to " in cell["message"], cell["message"]
    durations = sorted(c["duration_s"] for c in python_cells)
    assert all(d < 1.0 for d in durations[:-1]), durations
    # The one cell that found it out waited at most its scenario's own wait (10 s in
    # rr-pair-reply-to-closed-requester) plus one liveness check, never one bound per cell.
    assert durations[-1] < 10 + 2 * op_timeout + 3, durations
    assert sum(durations) < 10 + 2 * op_timeout + 3 + len(durations), durations


# -- connections force-closed by the broker ------------------------------------------------


def _close_consumer_of(broker: BrokerEndpoint, pick: Callable[[str], bool], shared: list[bool]) -> Callable[[str], None]:
    """Force-close the connection holding the consumer of the queue `pick` chooses, once the
    cell's requester (its reply queue) and responder (`c0000.requests`) both consume; tells
    `shared` whether the two share that connection."""
    def inject(vhost: str) -> None:
        api = Api(broker)
        consumers = poll("the cell's requester and responder consuming", 60, lambda: (
            lambda found: found if "c0000.requests" in found and any(q.startswith("amq.gen-") for q in found) else None
        )(cell_consumers(api, vhost)))
        (connection,) = {conn for queue, conn in consumers.items() if pick(queue)}
        shared.append(len(set(consumers.values())) == 1)
        api.close(connection)
    return inject


@pytest.mark.parametrize("peer", EVERY_PEER)
@pytest.mark.parametrize("side", ["requester", "responder"])
def test_a_connection_the_broker_force_closes_is_an_error_with_its_cause(broker, built, tmp_path, peer, side) -> None:
    pick = (lambda q: q.startswith("amq.gen-")) if side == "requester" else (lambda q: q == "c0000.requests")
    started = time.monotonic()
    shared: list[bool] = []
    report = run_in_process(broker, tmp_path, [peer], ["fault-slow-echo"], built, _close_consumer_of(broker, pick, shared))
    (cell,) = report.results
    assert cell.status == Status.ERROR, describe(report.results)
    name = "c0000.q" if side == "requester" else "c0000.r"
    assert cell.message.startswith("connection lost: peer "), cell.message
    if shared == [True]:
        # Requester and responder on one connection (.NET's Mq): both lose it, and both say so
        # at once (a handler under way must not hold the connection's shutdown back).
        assert f"peer {peer} requester c0000.q: " in cell.message, cell.message
        assert f"peer {peer} responder c0000.r: " in cell.message, cell.message
    else:
        assert f"peer {peer} {side} {name}: " in cell.message, cell.message
    assert FORCED in cell.message, cell.message
    assert cell.rule is None, "a fault is never a FAIL"
    assert any(step["step"] == "connection_lost" for step in cell.trace), "the loss is in the cell's evidence"
    # The call under way ends with the loss, not with the 15 s handler or its own 30 s timeout
    # (the management API lists a connection seconds late on a loaded machine: the margin).
    assert cell.duration_s < 15.0, cell.duration_s
    assert time.monotonic() - started < 60


def test_the_probes_connection_force_closed_is_an_error_with_the_brokers_reason(broker, built, tmp_path) -> None:
    def close_probe(vhost: str) -> None:
        api = Api(broker)
        probe = poll("the probe's connection", 60, lambda: [c for c in api.connections(vhost) if _client_name(c).startswith("acemq-interop probe c")])
        api.close(probe[0]["name"])

    report = run_in_process(broker, tmp_path, ["python"], ["fault-probe-waits"], built, close_probe)
    (cell,) = report.results
    assert cell.status == Status.ERROR, describe(report.results)
    assert cell.message == "probe connection lost: 320 CONNECTION_FORCED - Closed via management plugin", cell.message
    assert cell.duration_s < 6.0, "the probe's wait ends with the loss"


# -- a peer out of protocol ----------------------------------------------------------------


def junk_manifests(mode: str, built: dict[str, Manifest]) -> dict[str, Manifest]:
    junk = load_manifest(FIXTURE_PEERS / f"junk-{mode}" / "peer.yaml")
    return {"python": built["python"], junk.name: junk}


@pytest.mark.parametrize("mode, words", [
    ("garbage", "is out of protocol: it wrote not JSON (Expecting value): 'hello, this is not JSON'"),
    ("huge", "is out of protocol: it wrote a line longer than 4 MiB: '{\"event\": \"handled\", \"responder\": \"xxx"),
    ("unknown-id", "is out of protocol: it wrote an answer to id 987654321, which no command is waiting on: "
                   "'{\"id\": 987654321, \"ok\": true}'"),
], ids=["garbage", "huge", "unknown-id"])
def test_a_peer_writing_junk_errors_its_cells_with_an_excerpt_and_the_run_goes_on(broker, built, tmp_path,
                                                                                  mode, words) -> None:
    started = time.monotonic()
    report = run_in_process(broker, tmp_path, [f"junk-{mode}", "python"], ["rr-pair-round-trip"],
                            junk_manifests(mode, built), lambda vhost: None, diagonal=False)
    assert time.monotonic() - started < 60
    by_id = {r.id: r for r in report.results}
    assert len(by_id) == 4, describe(report.results)
    for cell_id, result in by_id.items():
        if f"junk-{mode}" in cell_id:
            assert result.status == Status.ERROR, describe(report.results)
            assert f"peer 'junk-{mode}' {words}" in result.message, result.message
            first = result.message.splitlines()[0]
            assert len(first) < 400, f"the excerpt is bounded: {len(first)} characters"
        else:
            assert result.status == Status.PASS, describe(report.results)
