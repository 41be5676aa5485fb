"""Issue 20, what needs a broker or whole runs: signals at the worst moments, two runs on one
--out, a SIGKILLed --tls run's certificates, the broker variable in no child's environment,
and the Java peer's TLS host name check. Every run here is bounded in time.

The runs use the session's broker (conftest.py) by URL, so no private node starts, except
where --tls needs one the harness runs.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from acemq_interop.core.proc import descendants
from acemq_interop.broker.endpoint import BrokerEndpoint
from acemq_interop.broker.leftovers import TLS_DIR_PREFIX

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
ROUND_TRIP = "rr-pair-round-trip[requester=python,responder=python]"
OUTPUTS = ("results.json", "junit.xml", "report.html", "summary.md")
STALE = "an earlier run's file"
RUN_BOUND_S = 240


def _url(broker: BrokerEndpoint) -> str:
    return f"amqp://{broker.username}:{broker.password}@{broker.host}:{broker.port}/"


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "acemq_interop", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


class Lines:
    """A running CLI's stderr, read on a thread."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: str, bound_s: float = 120) -> re.Match[str]:
        deadline = time.monotonic() + bound_s
        with self._changed:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._thread.is_alive():
                    self.proc.kill()
                    raise AssertionError(f"no line matching {pattern!r}:\n{''.join(self.lines)[-3000:]}")
                self._changed.wait(min(left, 0.5))

    def finish(self, bound_s: float = RUN_BOUND_S) -> tuple[int, str, str]:
        assert self.proc.stdout is not None
        timer = threading.Timer(bound_s, self.proc.kill)
        timer.start()
        try:
            stdout = self.proc.stdout.read()
            code = self.proc.wait()
        finally:
            timer.cancel()
        self._thread.join(10)
        return code, stdout, "".join(self.lines)


def _wait_until_it_catches(proc: subprocess.Popen, signum: int, bound_s: float = 30) -> None:
    """Until `proc` has a handler for `signum` (its SigCgt mask in /proc): before that, while
    the interpreter itself starts, a signal takes the kernel's default action, which no
    program can change. Under load that start-up alone can outlast 50 ms."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except FileNotFoundError:  # it ended between the poll and the read: the loop's condition says so
            continue
        caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M).group(1), 16)
        if caught >> (signum - 1) & 1:
            return
        time.sleep(0.005)
    ended = proc.poll()
    proc.kill()
    raise AssertionError(f"pid {proc.pid} did not catch signal {signum} within {bound_s} s"
                         + (f" (it ended first, code {ended})" if ended is not None else ""))


def _stale(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).write_text(STALE)


@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_a_burst_of_signals_after_the_last_cell_rewrites_no_pass(broker: BrokerEndpoint, tmp_path: Path,
                                                                 attempt: int) -> None:
    """25 SIGTERMs and SIGINTs, 30 ms apart, from the moment the last cell ended: the cells
    keep their PASS (before, 2 runs of 3 rewrote them as ERROR "the cell did not start")."""
    out = tmp_path / "out"
    run = _start("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", _url(broker), "--management-url",
                 broker.mgmt_url, "--out", str(out), "--no-build")
    lines = Lines(run)
    lines.wait_for(r"\[1/1\] PASS")
    for i in range(25):
        run.send_signal(signal.SIGTERM if i % 2 == 0 else signal.SIGINT)
        time.sleep(0.03)
    code, stdout, stderr = lines.finish()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert code in (0, 130), stdout + stderr[-3000:]
    cells = json.loads((out / "results.json").read_text())["cells"]
    assert [c["status"] for c in cells] == ["PASS"], [(c["status"], c["message"]) for c in cells]
    assert not list(out.glob(".*partial"))


@pytest.mark.parametrize("delay_s", [0.05, 0.3, 0.8])
def test_sigterm_in_the_first_second_leaves_no_earlier_results(broker: BrokerEndpoint, tmp_path: Path,
                                                               delay_s: float) -> None:
    out = tmp_path / "out"
    _stale(out)
    run = _start("run", "--peers", "python", "--cell", ROUND_TRIP, "--broker", _url(broker), "--management-url",
                 broker.mgmt_url, "--out", str(out), "--no-build")
    lines = Lines(run)
    # From the harness's first statement (its handler), not from the fork: the delays fall
    # in its imports, its --out check and its broker's start.
    _wait_until_it_catches(run, signal.SIGTERM)
    time.sleep(delay_s)
    run.send_signal(signal.SIGTERM)
    code, stdout, stderr = lines.finish()
    assert "Traceback" not in stderr, stderr[-3000:]
    for name in OUTPUTS:
        path = out / name
        assert not path.exists() or path.read_text() != STALE, f"{name} is the earlier run's ({code}):\n{stderr[-2000:]}"
    if code == 130:
        data = json.loads((out / "results.json").read_text())
        assert data["aborted"] and "interrupted" in data["aborted"]


def test_two_runs_on_one_out_the_second_refuses_and_the_first_keeps_its_files(broker: BrokerEndpoint,
                                                                              tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The first run's cell waits out a 4 s timeout: it is still under way when the second run,
    # started once the first's peer is ready, looks at --out (a round trip of 0.1 s was not:
    # on a quiet machine the first run could end before the second had started).
    args = ("run", "--peers", "python", "--cell", "rr-requester-timeout-bound[requester=python]", "--broker", _url(broker),
            "--management-url", broker.mgmt_url, "--out", str(out), "--no-build")
    first = _start(*args)
    lines = Lines(first)
    lines.wait_for(r"peer python: .* ready")
    second = subprocess.run([sys.executable, "-m", "acemq_interop", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert second.returncode == 2, second.stderr
    assert f"--out {out} is in use by another run (pid {first.pid}" in second.stderr, second.stderr
    code, stdout, stderr = lines.finish()
    assert code == 0, stdout + stderr[-3000:]
    assert [c["status"] for c in json.loads((out / "results.json").read_text())["cells"]] == ["PASS"]
    assert list((out / "logs").glob("peer-python*.log")), "the first run's logs are its own"


def test_no_child_inherits_the_broker_variable(broker: BrokerEndpoint, tmp_path: Path) -> None:
    """The URL given as $ACEMQ_INTEROP_BROKER reaches the peers in hello only."""
    run = _start("run", "--peers", "python", "--cell", ROUND_TRIP, "--management-url", broker.mgmt_url,
                 "--out", str(tmp_path / "out"), "--no-build", env={"ACEMQ_INTEROP_BROKER": _url(broker)})
    lines = Lines(run)
    lines.wait_for(r"peer python: .* ready")
    leaked = []
    for pid in descendants(run.pid):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        leaked += [f"{pid}: {v[:60]!r}" for v in env if v.startswith(b"ACEMQ_INTEROP_BROKER=") or b":guest@" in v]
    code, stdout, stderr = lines.finish()
    assert code == 0, stdout + stderr[-3000:]
    assert not leaked, leaked


def test_a_sigkilled_tls_run_s_certificates_are_listed_and_removed(broker: BrokerEndpoint, tmp_path: Path) -> None:
    """The folder with the server's private key: `doctor` lists it (owner dead), `doctor
    --clean` removes it; another one is removed by the next run's sweep."""
    def killed_tls_run() -> Path:
        run = _start("run", "--tls", "--peers", "python", "--cell", ROUND_TRIP, "--out", str(tmp_path / "killed"), "--no-build")
        lines = Lines(run)
        found = lines.wait_for(r"TLS: a CA and a server certificate for this run in (\S+)", bound_s=120)
        lines.wait_for(r"starting a private RabbitMQ node|peer python", bound_s=120)
        run.kill()
        run.wait(30)
        where = Path(found.group(1))
        assert where.is_dir() and (where / "server" / "server.key").exists(), "the killed run left its key"
        return where

    where = killed_tls_run()
    listed = subprocess.run([sys.executable, "-m", "acemq_interop", "doctor"], cwd=ROOT, capture_output=True, text=True,
                            timeout=180)
    assert f"{where}: owner dead" in listed.stdout, listed.stdout
    cleaned = subprocess.run([sys.executable, "-m", "acemq_interop", "doctor", "--clean"], cwd=ROOT, capture_output=True,
                             text=True, timeout=180)
    assert f"removed the TLS certificates (with a private key) a killed run left: {where}" in cleaned.stdout, cleaned.stdout
    assert not where.exists()

    where = killed_tls_run()
    subprocess.run([sys.executable, "-m", "acemq_interop", "doctor", "--clean"], cwd=ROOT, capture_output=True, timeout=180)
    where2 = killed_tls_run()
    done = subprocess.run([sys.executable, "-m", "acemq_interop", "run", "--peers", "python", "--cell", ROUND_TRIP,
                           "--broker", _url(broker), "--management-url", broker.mgmt_url, "--out", str(tmp_path / "next"),
                           "--no-build"], cwd=ROOT, capture_output=True, text=True, timeout=RUN_BOUND_S)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert f"a killed run left: {where2}" in done.stderr and not where2.exists(), done.stderr[-3000:]
    subprocess.run([sys.executable, "-m", "acemq_interop", "doctor", "--clean"], cwd=ROOT, capture_output=True, timeout=180)
    assert not [p for p in Path(tempfile.gettempdir()).glob(TLS_DIR_PREFIX + "*") if p in (where, where2)]


# -- the Java peer's TLS host name -----------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(where: Path, san: str) -> tuple[Path, Path, Path]:
    """A CA, and a server certificate it signed whose subjectAltName is `san` only."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=issue20 CA", "-keyout", "ca.key",
             "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
             cwd=where)
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key",
             "-out", "server.csr", cwd=where)
    (where / "ext").write_text(f"subjectAltName = {san}\nextendedKeyUsage = serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "7", "-days", "1",
             "-extfile", "ext", "-out", "server.pem", cwd=where)
    return where / "ca.pem", where / "server.pem", where / "server.key"


class _TlsListener:
    """Completes TLS handshakes on a loopback port (and speaks no AMQP): what each client
    decided about the certificate is all there is to see."""

    def __init__(self, cert: Path, key: Path):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert), str(key))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.handshakes: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(10)
            try:
                with self.context.wrap_socket(conn, server_side=True):
                    self.handshakes.append("ok")
            except (ssl.SSLError, OSError) as exc:
                self.handshakes.append(f"refused: {exc}")
                conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def java_peer():
    import shutil

    from acemq_interop.peers.builds import build_peer
    from acemq_interop.peers.manifests import discover

    if shutil.which("java") is None:
        pytest.skip("no java here (doctor says how to get it)")
    manifest = discover()["java"]
    _, failure = build_peer(manifest, lambda line: None)
    assert failure is None, failure
    return manifest


@pytest.mark.parametrize("host, san, named", [
    ("localhost", "IP:127.0.0.1", False),  # before: accepted (the address it resolved to was checked)
    ("127.0.0.1", "DNS:localhost", False),
    ("localhost", "DNS:localhost", True),
    ("127.0.0.1", "IP:127.0.0.1", True),
])
def test_the_java_peer_checks_the_url_s_host_against_the_certificate(java_peer, tmp_path: Path, host: str, san: str,
                                                                    named: bool) -> None:
    from acemq_interop.core.errors import PeerError
    from acemq_interop.peers.client import PeerClient

    ca, cert, key = _certificates(tmp_path, san)
    listener = _TlsListener(cert, key)
    client = PeerClient.launch(java_peer, tmp_path, op_bound_s=30)
    try:
        client.handshake(f"amqps://guest:guest@{host}:{listener.port}/", 60, {"ca_file": str(ca)})
        with pytest.raises(PeerError) as refused:  # no AMQP behind the listener: the open fails either way
            client.open_requester("issue20")
        said = str(refused.value)
    finally:
        client.shutdown()
        listener.close()
    if named:
        assert "does not name" not in said and any(h == "ok" for h in listener.handshakes), (said, listener.handshakes)
    else:
        assert f"does not name {host}" in said or "No subject alternative" in said, said
        assert not any(h == "ok" for h in listener.handshakes), listener.handshakes
