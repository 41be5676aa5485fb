"""TLS end to end (issue 9): `run --tls` on a private node, and `--broker amqps://` with a CA.

1. The full python x node matrix over `--tls`: every cell PASS, and while it runs the
   broker's own view (management API /api/connections, field `ssl`) shows every connection
   of the run's vhost is TLS, the peers' (pika, amqplib), the probe's and the tracer's.
   Afterwards neither the certificate folder nor the private node is left.
2. `--broker amqps://... --ca-cert OTHER_CA` (a CA that did not sign the broker's
   certificate): ERROR cells naming the TLS verification failure, soon (no hang), and the
   run's vhost is gone.
"""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from acemq_interop.broker.node import EmbeddedBroker
from acemq_interop.amqp.tls import Certificates, make_certificates, run_certificates

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
PEERS = "python,node"
RUN_BOUND_S = 600
# What each client says when the broker's certificate does not verify against its CA.
TLS_VERIFY_FAILED = re.compile(r"certificate verify failed|SELF_SIGNED_CERT_IN_CHAIN|self-signed certificate|"
                               r"unable to (get local issuer|verify the first) certificate", re.I)


def _log(message: str) -> None:
    print(f"[tls] {message}", file=sys.stderr, flush=True)


def _api(mgmt_url: str, path: str) -> Any:
    request = urllib.request.Request(mgmt_url + path)
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _node_pid(node: str) -> int | None:
    """The beam process of the private node `node` (found by its environment, nothing broader)."""
    wanted = f"RABBITMQ_NODENAME={node}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if wanted in (proc / "environ").read_bytes().split(b"\0") and b"beam" in (proc / "comm").read_bytes():
                return int(proc.name)
        except OSError:
            continue
    return None


def _environment(pid: int) -> dict[str, str]:
    pairs = (Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"))
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


class Watch:
    """Reads the CLI's progress lines as they come and, once it names its private node,
    samples the broker's connections until the run ends."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.lines: list[str] = []
        self.connections: dict[str, dict[str, Any]] = {}  # connection name -> what the API said
        self.cert_dir: Path | None = None
        self.node: str | None = None
        self.node_base: Path | None = None
        self._mgmt: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = re.search(r"TLS: .* in (\S+) \(removed at the end\)", line)
            if found:
                self.cert_dir = Path(found.group(1))
            found = re.search(r"starting a private RabbitMQ node (\S+) \(.*amqps :\d+, management :(\d+)\)", line)
            if found:
                self.node, self._mgmt = found.group(1), f"http://127.0.0.1:{found.group(2)}"

    def _sample(self) -> None:
        while self.proc.poll() is None:
            if self._mgmt is not None:
                if self.node_base is None and self.node and (pid := _node_pid(self.node)):
                    self.node_base = Path(_environment(pid)["RABBITMQ_MNESIA_BASE"]).parent
                try:
                    for c in _api(self._mgmt, "/api/connections?columns=name,vhost,ssl,ssl_protocol,client_properties"):
                        if str(c.get("vhost", "")).startswith("acemq-interop-"):
                            self.connections[c["name"]] = c
                except OSError:
                    pass  # not up yet, or already stopped
            time.sleep(0.5)

    def finish(self) -> str:
        self._reader.join(30)
        self._sampler.join(30)
        return "".join(self.lines)


def _cli(*args: str, out: Path, bound_s: float = RUN_BOUND_S) -> tuple[subprocess.CompletedProcess, Watch]:
    """The CLI as a user runs it; stderr (progress) is read line by line by the Watch alone."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out.parent / "stdout.txt", "w+", encoding="utf-8") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "acemq_interop", *args, "--out", str(out)], cwd=ROOT, stdout=stdout,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        watch = Watch(proc)
        try:
            proc.wait(timeout=bound_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"acemq-interop {' '.join(args)} did not finish within {bound_s}s:\n{watch.finish()[-3000:]}")
        stderr = watch.finish()
        stdout.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout.read(), stderr), watch


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _bad(cells: list[dict[str, Any]], status: str = "PASS") -> str:
    return "\n".join(f"{c['status']} {c['id']}: {c['message'][:300]}" for c in cells if c["status"] != status)


def test_the_python_node_matrix_passes_over_tls_and_every_connection_is_tls(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done, watch = _cli("run", "--tls", "--peers", PEERS, "--concurrency", "8", out=out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = _results(out)
    assert data["tls"] is True and all(b["tls"] for b in data["brokers"]), data["brokers"]
    assert "over TLS" in data["broker"] and "over TLS" in done.stdout
    assert "over TLS" in (out / "summary.md").read_text(encoding="utf-8")
    assert "over TLS" in (out / "report.html").read_text(encoding="utf-8")
    cells = data["cells"]
    assert cells and not _bad(cells), _bad(cells)
    pairs = {(c["roles"]["requester"], c["roles"]["responder"]) for c in cells if c["matrix"] == "pairs"}
    assert pairs == {(a, b) for a in PEERS.split(",") for b in PEERS.split(",")}

    # The broker's own record: every connection of the run's vhost was TLS, and they were
    # the peers' and the harness's own clients.
    seen = watch.connections
    assert seen, f"no connection of the run was seen on the management API:\n{done.stderr[-2000:]}"
    plain = {name: c for name, c in seen.items() if c.get("ssl") is not True}
    assert not plain, f"connections without TLS: {plain}"
    products = {str((c.get("client_properties") or {}).get("product")) for c in seen.values()}
    names = {str((c.get("client_properties") or {}).get("connection_name")) for c in seen.values()}
    assert any("pika" in p.lower() for p in products) and any("amqplib" in p.lower() for p in products), products
    assert "acemq-interop tracer" in names and any(n.startswith("acemq-interop probe c") for n in names), names  # a probe names its cell

    # Nothing left: the certificates, the private node and its files.
    assert watch.cert_dir is not None and watch.cert_dir.name.startswith("acemq-interop-tls-"), done.stderr[-2000:]
    assert not watch.cert_dir.exists(), f"{watch.cert_dir} was left behind"
    assert watch.node is not None and watch.node_base is not None, done.stderr[-2000:]
    assert _node_pid(watch.node) is None, f"the private node {watch.node} still runs"
    assert not watch.node_base.exists(), f"{watch.node_base} was left behind"


@pytest.fixture(scope="module")
def tls_broker() -> Iterator[tuple[EmbeddedBroker, Certificates]]:
    """A private node with a TLS listener on certificates of its own (the broker under test)."""
    with run_certificates() as certificates:
        node = EmbeddedBroker(_log, tls=certificates)
        node.start()
        try:
            yield node, certificates
        finally:
            node.stop()


def test_a_wrong_ca_is_a_pre_flight_error_naming_the_tls_failure_and_no_hang(tls_broker, tmp_path: Path) -> None:
    """The pre-flight's AMQP handshake verifies the broker against --ca-cert: a wrong CA ends
    the run before any peer starts (exit 3, one line), and the results say so per cell."""
    node, _ = tls_broker
    other = make_certificates(_private(tmp_path / "other-ca"))  # a CA that signed nothing the broker has
    out = tmp_path / "out"
    url = f"amqps://guest:guest@127.0.0.1:{node.endpoint.port}/"
    started = time.monotonic()
    done, _ = _cli("run", "--broker", url, "--management-url", node.endpoint.mgmt_url, "--ca-cert", str(other.ca_file),
                   "--peers", PEERS, "--scenarios", "rr-pair-round-trip,rr-requester-late-reply,rr-responder-native-only",
                   out=out, bound_s=240)
    took = time.monotonic() - started
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert "TLS handshake" in done.stderr and TLS_VERIFY_FAILED.search(done.stderr), done.stderr[-3000:]
    assert "guest:guest" not in done.stderr + done.stdout
    assert took < 180, f"a wrong CA must fail the connections at once, not hang ({took:.0f}s)"
    cells = _results(out)["cells"]
    assert len(cells) == 8 and not _bad(cells, "ERROR"), _bad(cells, "ERROR")
    unexplained = [c for c in cells if not TLS_VERIFY_FAILED.search(c["message"])]
    assert not unexplained, "\n".join(f"{c['id']}: {c['message'][:400]}" for c in unexplained)
    assert not [v for v in node.endpoint.management().vhosts() if v.startswith("acemq-interop-")], "the run's vhost is left"


def _private(path: Path) -> Path:
    path.mkdir(mode=0o700)
    return path
