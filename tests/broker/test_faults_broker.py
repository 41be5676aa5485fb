"""Broker faults, on real brokers with real peers, through the CLI where the exit code matters.

Each test asserts the cells' statuses, the cause in the message, the exit code, that the
results files were written (and no earlier run's survived), and that nothing is left: no
node process, no node dir, no vhost, no queue. Faults injected: a private node SIGKILLed
mid-run, an existing broker stopped mid-run, SIGTERM while the node starts, Ctrl-C
repeated during shutdown, the harness itself SIGKILLed (its leftovers swept), an AMQP port
that does not answer while the management API does, a management API answering 404 or 500
(a small HTTP proxy in front of the real one), and a broker password that must never be
printed anywhere.
"""
from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from acemq_interop.broker.node import EmbeddedBroker, NODE_DIR_PREFIX, node_dir_roots
from acemq_interop.broker.endpoint import BrokerEndpoint
from acemq_interop.results.model import Status
from acemq_interop.core.ownership import node_processes

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ("results.json", "junit.xml", "report.html", "summary.md")
ROUND_TRIP = "rr-pair-round-trip[requester=python,responder=python]"
STALE = "an earlier run's file"


# -- helpers ----------------------------------------------------------------------------


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acemq_interop", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "acemq_interop", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, **(env or {})})


class Lines:
    """A running CLI's stderr, read on a thread: wait for a line, keep them all."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: str, bound_s: float = 120) -> str:
        deadline = time.monotonic() + bound_s
        with self._changed:
            while True:
                for line in self.lines:
                    if re.search(pattern, line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no line matching {pattern!r} within {bound_s}s:\n{self.text()}")
                self._changed.wait(left)

    def text(self) -> str:
        return "".join(self.lines)

    def finish(self, proc: subprocess.Popen, bound_s: float = 150) -> tuple[str, str]:
        """(stdout, stderr) once the process has ended and its stderr is read to the end."""
        assert proc.stdout is not None
        timer = threading.Timer(bound_s, proc.kill)
        timer.start()
        try:
            stdout = proc.stdout.read()
            proc.wait()
        finally:
            timer.cancel()
        self._thread.join(10)
        return stdout, self.text()


def stale_outputs(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).write_text(STALE)


def assert_outputs_are_this_runs(out: Path) -> dict:
    for name in OUTPUTS:
        path = out / name
        assert path.is_file(), f"{name} was not written"
        assert path.read_text(encoding="utf-8") != STALE, f"{name} is an earlier run's"
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def node_of(stderr: str) -> str:
    match = re.search(r"starting a private RabbitMQ node (acemq-interop-[0-9a-f]+@localhost)", stderr)
    assert match, stderr
    return match.group(1)


def assert_node_gone(node: str) -> None:
    deadline = time.monotonic() + 15
    while node_processes(node) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert node_processes(node) == [], f"processes of {node} are left"
    left = [d for root in node_dir_roots() for d in root.glob(NODE_DIR_PREFIX + "*")
            if (d / "owner.json").is_file() and node in (d / "owner.json").read_text()]
    assert left == [], f"the dir of {node} is left: {left}"


def children(pid: int) -> list[int]:
    """The direct children of pid (the peer processes of a harness)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def assert_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 15
    def alive() -> list[int]:
        out = []
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                out.append(p)
        return out
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive() == [], f"peer processes left: {alive()}"


def run_vhosts(endpoint: BrokerEndpoint) -> set[str]:
    return {v for v in endpoint.management().vhosts() if v.startswith("acemq-interop-")}


def queues_in_run_vhosts(endpoint: BrokerEndpoint) -> list[str]:
    queues = endpoint.management()._call("GET", "/api/queues?columns=name,vhost") or []
    return [f"{q['vhost']}/{q['name']}" for q in queues if str(q.get("vhost", "")).startswith("acemq-interop-")]


def broker_url(endpoint: BrokerEndpoint, user: str = "guest", password: str = "guest", port: int | None = None) -> str:
    return f"amqp://{user}:{urllib.parse.quote(password, safe='')}@{endpoint.host}:{port or endpoint.port}/"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def clean_broker(broker: BrokerEndpoint) -> Iterator[BrokerEndpoint]:
    """The session's broker, checked to hold no more run vhosts or queues afterwards."""
    before = run_vhosts(broker)
    yield broker
    assert run_vhosts(broker) == before, "a run's vhost is left on the broker"
    assert queues_in_run_vhosts(broker) == [], "a run's queue is left on the broker"


@pytest.fixture
def doomed_broker() -> Iterator[tuple[EmbeddedBroker, BrokerEndpoint]]:
    """A broker of the test's own, to be stopped or killed by it: an 'existing' broker."""
    node = EmbeddedBroker(lambda message: print(f"[doomed] {message}", file=sys.stderr))
    try:
        endpoint = node.start()
        yield node, endpoint
    finally:
        node.stop()


@pytest.fixture
def user(broker: BrokerEndpoint) -> Iterator[tuple[str, str]]:
    """A user of its own with a unique password; `administrator` because the harness makes
    (and deletes) a vhost per run and grants itself that vhost. Deleted afterwards."""
    name = f"acemq-test-{uuid.uuid4().hex[:6]}"
    password = f"pw-{uuid.uuid4().hex}-Zq9"
    management = broker.management()
    management._call("PUT", f"/api/users/{name}", {"password": password, "tags": "administrator"})
    try:
        yield name, password
    finally:
        management._call("DELETE", f"/api/users/{name}", absent=None)


# -- a management API that misbehaves: a proxy in front of the real one ----------------------


class FaultyManagement:
    """Forwards to the real management API, except where a rule answers instead.

    A rule is (method, path regex, status, times): the first `times` matching requests get
    `status` (times None: every one). `served` counts the faults answered per rule."""

    def __init__(self, upstream: str, rules: list[tuple[str, str, int, int | None]]):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.rules = [list(r) for r in rules]
        self.served = [0] * len(rules)
        self.seen: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                proxy.seen.append(f"{self.command} {self.path}")
                for index, (method, pattern, status, times) in enumerate(proxy.rules):
                    if method == self.command and re.search(pattern, self.path) and (times is None or proxy.served[index] < times):
                        proxy.served[index] += 1
                        payload = json.dumps({"error": "injected", "reason": f"HTTP {status} from the test's proxy"}).encode()
                        self.send_response(status)
                        self.send_header("content-type", "application/json")
                        self.send_header("content-length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                        return
                connection = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                connection.close()

            do_GET = do_PUT = do_DELETE = do_POST = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def faulty(broker: BrokerEndpoint) -> Iterator:
    made: list[FaultyManagement] = []

    def make(*rules: tuple[str, str, int, int | None]) -> FaultyManagement:
        proxy = FaultyManagement(broker.mgmt_url, list(rules))
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


# -- pre-flight -------------------------------------------------------------------------


def test_amqp_unreachable_with_management_reachable_is_one_line_before_any_peer(clean_broker, tmp_path) -> None:
    stale_outputs(tmp_path)
    port = closed_port()
    done = cli("run", "--peers", "python", "--scenarios", "rr-pair-round-trip,rr-responder-native-only",
               "--broker", broker_url(clean_broker, port=port), "--management-url", clean_broker.mgmt_url,
               "--out", str(tmp_path), "--no-build")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"the AMQP port 127.0.0.1:{port} refuses connections" in done.stderr
    problem = [line for line in done.stderr.splitlines() if line.startswith("acemq-interop:")]
    assert len(problem) == 1, done.stderr
    assert "peer python:" not in done.stderr, "no peer starts before the broker is checked"
    data = assert_outputs_are_this_runs(tmp_path)
    assert {c["status"] for c in data["cells"]} == {"ERROR"} and len(data["cells"]) == 2
    assert all(c["message"].startswith("broker unusable: the AMQP port") for c in data["cells"])
    assert data["aborted"].startswith("broker unusable")


def test_an_amqp_port_that_accepts_and_never_speaks_is_one_line_before_any_peer(clean_broker, tmp_path) -> None:
    """A listener that accepts TCP and never answers the protocol header (a wrong service,
    a hung proxy): exit 3 within the pre-flight's bound, one line, no traceback."""
    stale_outputs(tmp_path)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes the TCP handshake; nothing is ever read or written
        port = silent.getsockname()[1]
        started = time.monotonic()
        done = cli("run", "--peers", "python", "--scenarios", "rr-pair-round-trip",
                   "--broker", broker_url(clean_broker, port=port), "--management-url", clean_broker.mgmt_url,
                   "--out", str(tmp_path), "--no-build")
        took = time.monotonic() - started
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"the AMQP port 127.0.0.1:{port} accepts connections but never answered the AMQP handshake" in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.startswith("acemq-interop:")]) == 1, done.stderr
    assert took < 60, f"the pre-flight's bound is 10 s; the run took {took:.0f}s"
    data = assert_outputs_are_this_runs(tmp_path)
    assert [c["status"] for c in data["cells"]] == ["ERROR"] and data["aborted"].startswith("broker unusable")


def test_a_wrong_password_and_a_user_who_cannot_make_vhosts_are_told_apart(clean_broker, user, tmp_path) -> None:
    name, password = user
    wrong = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker, name, "not-" + password),
                "--management-url", clean_broker.mgmt_url, "--out", str(tmp_path), "--no-build")
    assert wrong.returncode == 3, wrong.stderr
    assert f"refused user '{name}' (HTTP 401): check the user and password in --broker" in wrong.stderr
    management = clean_broker.management()
    management._call("PUT", f"/api/users/{name}", {"password": password, "tags": "management"})
    weak = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker, name, password),
               "--management-url", clean_broker.mgmt_url, "--out", str(tmp_path), "--no-build")
    assert weak.returncode == 3, weak.stderr
    assert f"user '{name}' may not create vhosts" in weak.stderr and "administrator" in weak.stderr
    for done in (wrong, weak):
        assert "Traceback" not in done.stderr
        assert password not in done.stdout + done.stderr


# -- the management API answering 404 and 500 ------------------------------------------------


def test_a_404_where_something_must_exist_is_an_error_naming_the_call(clean_broker, faulty, tmp_path) -> None:
    proxy = faulty(("PUT", r"^/api/permissions/", 404, None))
    done = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker),
               "--management-url", proxy.url, "--out", str(tmp_path), "--no-build")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert re.search(r"management API PUT /api/permissions/acemq-interop-preflight-[0-9a-f]+/guest: HTTP 404", done.stderr), done.stderr
    assert proxy.served[0] >= 1
    data = assert_outputs_are_this_runs(tmp_path)
    assert [c["status"] for c in data["cells"]] == ["ERROR"]
    # the pre-flight's scratch vhost was deleted (clean_broker checks no run vhost is left)


def test_a_management_api_that_is_not_one_is_said_so(clean_broker, faulty, tmp_path) -> None:
    proxy = faulty(("GET", r"^/api/overview", 404, None))
    done = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker),
               "--management-url", proxy.url, "--out", str(tmp_path), "--no-build")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "does not look like RabbitMQ's management API" in done.stderr and "--management-url" in done.stderr
    assert "Traceback" not in done.stderr
    assert_outputs_are_this_runs(tmp_path)


def test_a_passing_500_is_retried_and_the_run_passes(clean_broker, faulty, tmp_path) -> None:
    # Every cell's cleanup deletes the queues it declared, by name: the first two deletions
    # answer 500.
    proxy = faulty(("DELETE", r"^/api/queues/acemq-interop-[0-9a-f]+/", 500, 2))
    done = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker),
               "--management-url", proxy.url, "--out", str(tmp_path), "--no-build")
    assert done.returncode == 0, done.stdout + done.stderr
    assert proxy.served == [2], "both 500s were answered, and the call was tried again after them"
    data = assert_outputs_are_this_runs(tmp_path)
    assert [c["status"] for c in data["cells"]] == ["PASS"]


def test_a_lasting_500_is_an_error_naming_the_call_not_a_pass(clean_broker, faulty, tmp_path) -> None:
    proxy = faulty(("DELETE", r"^/api/queues/acemq-interop-[0-9a-f]+/", 500, None))
    done = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker),
               "--management-url", proxy.url, "--out", str(tmp_path), "--no-build")
    assert done.returncode == 1, done.stdout + done.stderr
    data = assert_outputs_are_this_runs(tmp_path)
    (cell,) = data["cells"]
    assert cell["status"] == "ERROR"
    assert re.search(r"management API DELETE /api/queues/acemq-interop-[0-9a-f]+/\S*: HTTP 500 \(after 4 attempts\)", cell["message"]), cell["message"]
    assert proxy.served[0] == 4, "one call, tried four times, then an error"


# -- the broker lost mid-run -----------------------------------------------------------------


def _wait_then(run: subprocess.Popen, lines: Lines, pattern: str) -> None:
    try:
        lines.wait_for(pattern)
    except BaseException:
        run.kill()
        raise


def test_a_private_node_killed_mid_run_ends_the_run_with_exit_3_and_results(tmp_path) -> None:
    stale_outputs(tmp_path)
    started = time.monotonic()
    run = start("run", "--peers", "python,go", "--out", str(tmp_path), "--concurrency", "4")
    lines = Lines(run)
    _wait_then(run, lines, r"^\[3/")
    node = node_of(lines.text())
    peers = children(run.pid)
    vm = node_processes(node)[0]
    os.kill(vm, signal.SIGKILL)
    stdout, stderr = lines.finish(run)
    assert run.returncode == 3, stdout + stderr
    assert time.monotonic() - started < 150
    assert "Traceback" not in stderr
    assert f"the run was cut short: broker lost: the private node {node} (pid {vm}) has exited" in stderr
    data = assert_outputs_are_this_runs(tmp_path)
    statuses = [c["status"] for c in data["cells"]]
    assert statuses.count("PASS") >= 2, "the cells that ran before the loss keep their results"
    lost = [c for c in data["cells"] if c["status"] == "ERROR"]
    assert lost and all(c["message"].startswith("broker lost: the private node") for c in lost), \
        {c["id"]: c["message"][:120] for c in lost}
    assert any("the cell did not start" in c["message"] for c in lost)
    assert set(statuses) <= {"PASS", "ERROR", "SKIP"}, "a lost broker is never a FAIL"
    assert data["aborted"].startswith("broker lost:")
    assert "The run was cut short: broker lost" in (tmp_path / "summary.md").read_text()
    assert_node_gone(node)
    assert_gone(peers)


def test_an_existing_broker_stopped_mid_run_ends_the_run_and_the_next_run_sweeps_its_vhost(doomed_broker, tmp_path) -> None:
    node, endpoint = doomed_broker
    url, mgmt = broker_url(endpoint), endpoint.mgmt_url
    run = start("run", "--peers", "python,go", "--out", str(tmp_path), "--concurrency", "4",
                "--broker", url, "--management-url", mgmt)
    lines = Lines(run)
    _wait_then(run, lines, r"^\[3/")
    ctl = str(Path(shutil.which("rabbitmq-server") or "/usr/sbin/rabbitmq-server").with_name("rabbitmqctl"))
    stopped = subprocess.run([ctl, "-n", node.node, "stop_app"], env=node._env(), capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    stdout, stderr = lines.finish(run)
    assert run.returncode == 3, stdout + stderr
    assert f"broker lost: the AMQP port {endpoint.host}:{endpoint.port} refuses connections" in stderr
    data = assert_outputs_are_this_runs(tmp_path)
    assert "PASS" in {c["status"] for c in data["cells"]}
    assert "FAIL" not in {c["status"] for c in data["cells"]}
    assert all(c["message"].startswith("broker lost:") for c in data["cells"] if c["status"] == "ERROR")
    # The broker comes back: the run's vhost is still there, owner-recorded by a dead run.
    subprocess.run([ctl, "-n", node.node, "start_app"], env=node._env(), capture_output=True, text=True, timeout=120, check=True)
    deadline = time.monotonic() + 60
    while not endpoint.management().ready() and time.monotonic() < deadline:
        time.sleep(0.5)
    left = run_vhosts(endpoint)
    assert data["cells"] and len(left) == 1, left
    report = cli("doctor", "--broker", url, "--management-url", mgmt)
    assert f"{next(iter(left))}: owner dead" in report.stdout, report.stdout
    # The next run on that broker sweeps it (its owner is provably dead), then runs.
    again = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", url, "--management-url", mgmt,
                "--out", str(tmp_path / "again"), "--no-build")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"deleted a vhost left by a killed run: {next(iter(left))}" in again.stderr, again.stderr
    assert run_vhosts(endpoint) == set()


# -- lifecycle: signals, and what SIGKILLed runs leave --------------------------------------


@pytest.mark.parametrize("delay_s", [0.0, 1.0, 3.0])
def test_sigterm_while_the_private_node_starts_leaves_nothing(tmp_path, delay_s: float) -> None:
    run = start("run", "--peers", "python", "--cell", ROUND_TRIP, "--out", str(tmp_path))
    lines = Lines(run)
    _wait_then(run, lines, r"^starting a private RabbitMQ node")
    time.sleep(delay_s)  # the point in the start-up the signal lands on (the assertions hold for any)
    run.send_signal(signal.SIGTERM)
    stdout, stderr = lines.finish(run)
    node = node_of(stderr)
    assert run.returncode in (130, 0, 1), stdout + stderr  # 0/1 only if the one cell was already done
    assert "Traceback" not in stderr
    assert_node_gone(node)


def test_ctrl_c_repeated_during_shutdown_leaves_nothing_and_writes_what_ran(tmp_path) -> None:
    stale_outputs(tmp_path)
    run = start("run", "--peers", "python", "--out", str(tmp_path), "--concurrency", "4")
    lines = Lines(run)
    _wait_then(run, lines, r"^\[2/")
    node = node_of(lines.text())
    peers = children(run.pid)
    for _ in range(4):
        run.send_signal(signal.SIGINT)
        time.sleep(0.3)
    stdout, stderr = lines.finish(run)
    assert run.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert f"peer logs in {tmp_path / 'logs'}" in stdout
    data = assert_outputs_are_this_runs(tmp_path)
    assert data["aborted"] == "interrupted (Ctrl-C or SIGTERM)"
    assert "PASS" in {c["status"] for c in data["cells"]}
    assert all(c["message"].startswith("interrupted") for c in data["cells"] if c["status"] == "ERROR")
    assert_node_gone(node)
    assert_gone(peers)


def test_a_sigkilled_run_is_swept_by_doctor_clean_and_by_the_next_run(tmp_path) -> None:
    def killed_run() -> str:
        run = start("run", "--peers", "python", "--out", str(tmp_path / "killed"), "--concurrency", "2")
        lines = Lines(run)
        _wait_then(run, lines, r"^\[1/")
        peers = children(run.pid)
        run.kill()
        run.wait(30)
        assert_gone(peers)  # a peer whose harness died reads end-of-file and exits
        node = node_of(lines.text())
        assert node_processes(node), "the node outlives a SIGKILLed harness (nothing can stop that)"
        return node

    node = killed_run()
    listed = cli("doctor")
    assert re.search(rf"{NODE_DIR_PREFIX}\S+ \(node {re.escape(node)}\): owner dead", listed.stdout), listed.stdout
    cleaned = cli("doctor", "--clean")
    assert f"removed a private node left by a killed run: {node}" in cleaned.stdout, cleaned.stdout
    assert_node_gone(node)

    node = killed_run()
    done = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--out", str(tmp_path / "next"), "--no-build")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"removed a private node left by a killed run: {node}" in done.stderr
    assert_node_gone(node)
    assert_node_gone(node_of(done.stderr))


# -- secrets ---------------------------------------------------------------------------------


def _grep_everything(password: str, out: Path, *texts: str) -> list[str]:
    found = [f"output #{i}" for i, text in enumerate(texts) if password in text]
    quoted = urllib.parse.quote(password, safe="")
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if password.encode() in data or quoted.encode() in data:
                found.append(str(path))
    return found


def test_the_password_is_never_printed_on_a_passing_or_a_failing_run(clean_broker, user, tmp_path) -> None:
    name, password = user
    url = broker_url(clean_broker, name, password)
    passing = cli("run", "--peers", "python,go", "--scenarios", "rr-pair-round-trip,rr-responder-header-only",
                  "--broker", url, "--management-url", clean_broker.mgmt_url, "--out", str(tmp_path / "pass"))
    assert passing.returncode == 0, passing.stdout + passing.stderr
    # A failing run (a mutant the suite catches), the URL from the environment this time.
    failing = cli("run", "--peers", "python+late-reply-to-next", "--diagonal", "--scenarios", "rr-requester-late-reply,rr-pair-round-trip",
                  "--management-url", clean_broker.mgmt_url, "--out", str(tmp_path / "fail"), "--transcripts", "all",
                  env={"ACEMQ_INTEROP_BROKER": url})
    assert failing.returncode == 1, failing.stdout + failing.stderr
    data = json.loads((tmp_path / "fail" / "results.json").read_text())
    failed = [c for c in data["cells"] if c["status"] == "FAIL"]
    assert failed and all('--broker "$ACEMQ_INTEROP_BROKER"' in c["rerun"] for c in failed), "rerun lines name the variable"
    assert "--broker \"$ACEMQ_INTEROP_BROKER\"" in failing.stdout
    for out, done in ((tmp_path / "pass", passing), (tmp_path / "fail", failing)):
        assert list((out / "logs").glob("*.log")), "the peer logs are under --out, and searched"
        assert _grep_everything(password, out, done.stdout, done.stderr) == []


@pytest.mark.parametrize("shape", [
    "amqps://{user}:{pw}@127.0.0.1:5671/",
    "amqp://{user}:{pw}@[::1/",
    "amqp://{user}:{pw}@127.0.0.1:notaport/",
    "amqp://{user}:{pw}@127.0.0.1:99999/",
    "http://{user}:{pw}@127.0.0.1/",
])
def test_a_malformed_or_unsupported_url_is_a_usage_error_that_hides_the_password(shape: str, tmp_path) -> None:
    password = f"pw{uuid.uuid4().hex}"
    done = cli("run", "--peers", "python", "--broker", shape.format(user="someone", pw=password), "--out", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("acemq-interop: --broker "), done.stderr
    assert password not in done.stdout + done.stderr
    assert "someone:***@" in done.stderr


# -- the tracebacks (item 7) and leftovers (item 10) -----------------------------------


def test_concurrency_and_op_timeout_are_checked_before_any_broker() -> None:
    for flag, value in (("--concurrency", "0"), ("--op-timeout", "0"), ("--concurrency", "-3")):
        started = time.monotonic()
        done = cli("run", "--peers", "python", flag, value)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and f"{flag} {value}" in done.stderr
        assert "starting a private RabbitMQ node" not in done.stderr
        assert time.monotonic() - started < 30


def test_list_into_a_closed_pipe_is_quiet() -> None:
    shell = subprocess.run(f"{sys.executable} -m acemq_interop list | head -1", shell=True, capture_output=True,
                           text=True, timeout=60, cwd=ROOT)
    assert shell.stdout.startswith("Peers")
    assert "Traceback" not in shell.stderr and "BrokenPipe" not in shell.stderr, shell.stderr


def _home_with(tmp_path: Path, name: str, content: bytes) -> dict[str, str]:
    """A copy of the suite's data with one extra scenario file (ACEMQ_INTEROP_HOME)."""
    home = tmp_path / "home"
    for part in ("scenarios", "catalogue", "known-failures", "docs"):
        shutil.copytree(ROOT / part, home / part)
    (home / "peers").symlink_to(ROOT / "peers")
    (home / "scenarios" / "request-reply" / name).write_bytes(content)
    return {"ACEMQ_INTEROP_HOME": str(home)}


def test_a_scenario_file_with_invalid_utf8_is_a_message(tmp_path) -> None:
    env = _home_with(tmp_path, "rr-bad-bytes.yaml", b'id: rr-bad-bytes\ntitle: "caf\xe9"\n')
    done = cli("list", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "rr-bad-bytes.yaml" in done.stderr


def test_a_scenario_nested_1000_deep_is_a_message(tmp_path) -> None:
    env = _home_with(tmp_path, "rr-deep.yaml", ("id: rr-deep\nsteps: " + "[" * 1000 + "]" * 1000 + "\n").encode())
    done = cli("list", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "rr-deep.yaml" in done.stderr


def test_rerun_lines_keep_the_flags_that_shaped_the_run_and_no_temporary_logs_are_left(clean_broker, tmp_path) -> None:
    extra = tmp_path / "extra-known.yaml"
    extra.write_text("known_failures: []\n")
    before = set(Path(tempfile.gettempdir()).glob("acemq-interop-logs-*"))
    done = cli("run", "--peers", "python+late-reply-to-next", "--diagonal", "--scenarios", "rr-requester-late-reply",
               "--broker", broker_url(clean_broker), "--management-url", clean_broker.mgmt_url, "--op-timeout", "15",
               "--known-failures", str(extra), "--out", str(tmp_path / "out"), "--no-build")
    assert done.returncode == 1, done.stdout + done.stderr
    (cell,) = [c for c in json.loads((tmp_path / "out" / "results.json").read_text())["cells"] if c["status"] == "FAIL"]
    for flag in (f"--management-url {clean_broker.mgmt_url}", "--op-timeout 15", f"--known-failures {extra}",
                 '--broker "$ACEMQ_INTEROP_BROKER"'):  # guest:guest is a password too: never in a rerun line
        assert flag in cell["rerun"], (flag, cell["rerun"])
    nofail = cli("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", broker_url(clean_broker),
                 "--management-url", clean_broker.mgmt_url, "--no-known-failures", "--out", str(tmp_path / "o2"), "--no-build")
    assert nofail.returncode == 0, nofail.stderr
    (passed,) = json.loads((tmp_path / "o2" / "results.json").read_text())["cells"]
    assert "--no-known-failures" in passed["rerun"], passed["rerun"]
    assert set(Path(tempfile.gettempdir()).glob("acemq-interop-logs-*")) <= before, "a run leaves no temporary log folder"


# -- a broker condition: a memory alarm blocks every publisher ------------------------------


ALARM_BOUND_S = 30.0


@pytest.fixture(scope="module")
def alarm_node() -> Iterator[tuple[EmbeddedBroker, BrokerEndpoint]]:
    """A node of the module's own: an alarm on the session's broker would void other tests."""
    node = EmbeddedBroker(lambda message: print(f"[alarm] {message}", file=sys.stderr))
    try:
        yield node, node.start()
    finally:
        node.stop()


def _mem_alarm(endpoint: BrokerEndpoint) -> bool:
    nodes = endpoint.management()._call("GET", "/api/nodes?columns=name,mem_alarm", retries=0, bound_s=5.0)
    return any(n.get("mem_alarm") for n in nodes)


def _set_watermark(node: EmbeddedBroker, endpoint: BrokerEndpoint, fraction: str, alarmed: bool) -> None:
    """`set_vm_memory_high_watermark` on the node, then wait (bounded) until the alarm says so."""
    done = subprocess.run([node._ctl, "-n", node.node, "set_vm_memory_high_watermark", fraction], env=node._env(),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    deadline = time.monotonic() + ALARM_BOUND_S
    while _mem_alarm(endpoint) != alarmed:
        assert time.monotonic() < deadline, f"the memory alarm is not {'raised' if alarmed else 'cleared'} after {ALARM_BOUND_S}s"
        time.sleep(0.2)


@pytest.fixture
def memory_alarm(alarm_node) -> Iterator[Callable[[], None]]:
    """`raise_()` raises a memory alarm on the module's node (a watermark no node is under); it
    is cleared afterwards whatever happened, and the node checked to be clear again."""
    node, endpoint = alarm_node

    def raise_() -> None:
        _set_watermark(node, endpoint, "0.0000001", alarmed=True)

    try:
        yield raise_
    finally:
        _set_watermark(node, endpoint, "0.4", alarmed=False)


def test_a_memory_alarm_already_raised_is_one_line_at_pre_flight_and_every_cell_an_error(alarm_node, memory_alarm,
                                                                                          tmp_path) -> None:
    node, endpoint = alarm_node
    memory_alarm()
    stale_outputs(tmp_path)
    done = cli("run", "--peers", "python", "--scenarios", "rr-pair-round-trip,rr-responder-header-only",
               "--broker", broker_url(endpoint), "--management-url", endpoint.mgmt_url, "--out", str(tmp_path),
               "--no-build", timeout=60)
    print(done.stderr, file=sys.stderr)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (problem,) = [line for line in done.stderr.splitlines() if line.startswith("acemq-interop:")]
    assert problem == (f"acemq-interop: broker: the broker has a memory alarm in effect on {node.node}: it blocks every "
                       "publisher, so every cell would time out; free memory on the broker's host or raise its limit "
                       "(rabbitmqctl set_vm_memory_high_watermark), then run again")
    assert "peer python:" not in done.stderr, "no peer starts on a broker that blocks every publisher"
    data = assert_outputs_are_this_runs(tmp_path)
    assert {c["status"] for c in data["cells"]} == {"ERROR"} and len(data["cells"]) == 2
    assert all(c["message"].startswith("broker unusable: the broker has a memory alarm") for c in data["cells"])
    assert run_vhosts(endpoint) == set()


def test_a_memory_alarm_raised_mid_run_makes_the_cells_errors_naming_it_never_fails(alarm_node, memory_alarm) -> None:
    """Raised once the peers are up (pre-flight passed), before any cell: the peer's request
    (rr-pair-round-trip) and the probe's (rr-responder-header-only) are blocked; each cell is
    an ERROR naming the alarm, and the run ends (every wait is bounded: the probe's too)."""
    from acemq_interop.spec import scenarios
    from acemq_interop.peers.manifests import discover
    from acemq_interop.run.session import run_session
    from support import run_request

    node, endpoint = alarm_node
    lines: list[str] = []

    def log(message: str) -> None:
        lines.append(message)
        print(message, file=sys.stderr, flush=True)
        if "ready in" in message and message.startswith("peer python:"):
            memory_alarm()  # on the peer's start thread: in effect before the first cell starts

    chosen = scenarios.select(scenarios.load_all(), ["rr-pair-round-trip", "rr-responder-header-only"])
    request = run_request(endpoint, ["python"], chosen, discover(), log=log, op_bound_s=10.0)
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(run_session(request).report)
        except BaseException as exc:  # said by the assertion below, not lost in a thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(75)
    assert not thread.is_alive(), "the run under a memory alarm did not end within 75s:\n" + "\n".join(lines)
    (report,) = outcome
    assert not isinstance(report, BaseException), f"the run raised {type(report).__name__}: {report}"
    print(f"under the alarm: {time.monotonic() - started:.1f}s", file=sys.stderr)
    for cell in report.results:
        print(f"{cell.status} {cell.id}: {cell.message}", file=sys.stderr)
    assert {c.id: c.status for c in report.results} == {
        "rr-pair-round-trip[requester=python,responder=python]": Status.ERROR,
        "rr-responder-header-only[responder=python]": Status.ERROR,
    }, "\n".join(f"{c.status} {c.id}: {c.message}" for c in report.results)
    cause = f"broker alarm: memory (publishers blocked) on {node.node} since "
    pair, probe = sorted(report.results, key=lambda c: c.id)
    assert pair.message.startswith(cause), pair.message
    assert "failed under it" in pair.message and pair.rule is None and pair.failures == []
    assert probe.message.startswith(f"probe connection lost: the broker blocked its publishes for 10s ({cause}"), probe.message
    assert f"broker condition raised: broker alarm: memory (publishers blocked) on {node.node}" in lines
    assert run_vhosts(endpoint) == set(), "the run's vhost is deleted under the alarm too"
