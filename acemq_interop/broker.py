"""Where the broker comes from: an existing one (`--broker`), or a private node we start.

The private node is RabbitMQ from the installed `rabbitmq-server`: its own node name, free
ports on 127.0.0.1 (the Erlang distribution port too), a temporary data dir owned by the
`rabbitmq` user, the management plugin; it is shut down and removed at the end.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .errors import BrokerError
from .management import Management

READY_BOUND_S = 90.0


@dataclass
class BrokerEndpoint:
    """How to reach a broker: AMQP on host:port, management API at mgmt_url."""

    host: str
    port: int
    username: str
    password: str
    mgmt_url: str

    def amqp_url(self, vhost: str) -> str:
        user = urllib.parse.quote(self.username, safe="")
        password = urllib.parse.quote(self.password, safe="")
        return f"amqp://{user}:{password}@{self.host}:{self.port}/{urllib.parse.quote(vhost, safe='')}"

    def management(self) -> Management:
        return Management(self.mgmt_url, self.username, self.password)


def parse_broker_url(url: str, mgmt_url: str | None) -> BrokerEndpoint:
    """An `amqp://user:pass@host:port/` URL; the management API defaults to port 15672."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "amqp" or not parts.hostname:
        raise BrokerError(f"--broker {url!r}: expected amqp://USER:PASS@HOST[:PORT]/ (the harness makes its own vhost per run)")
    host = parts.hostname
    return BrokerEndpoint(
        host=host,
        port=parts.port or 5672,
        username=urllib.parse.unquote(parts.username or "guest"),
        password=urllib.parse.unquote(parts.password or "guest"),
        mgmt_url=mgmt_url or f"http://{host}:15672",
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedBroker:
    """A private RabbitMQ node for one run."""

    def __init__(self, progress: Callable[[str], None]):
        server = shutil.which("rabbitmq-server") or ("/usr/sbin/rabbitmq-server" if Path("/usr/sbin/rabbitmq-server").exists() else None)
        if server is None:
            raise BrokerError(no_broker_message())
        self._server = server
        self._ctl = str(Path(server).with_name("rabbitmqctl"))
        self._progress = progress
        self.node = f"acemq-interop-{uuid.uuid4().hex[:8]}@localhost"
        self.amqp_port, self.mgmt_port, self.dist_port = _free_port(), _free_port(), _free_port()
        self._base = Path(tempfile.mkdtemp(prefix="acemq-interop-broker-"))
        self.endpoint = BrokerEndpoint("127.0.0.1", self.amqp_port, "guest", "guest", f"http://127.0.0.1:{self.mgmt_port}")

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_PORT=str(self.amqp_port),
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_CONFIG_FILE=str(self._base / "rabbitmq"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self._base / "enabled_plugins"),
            RABBITMQ_MNESIA_BASE=str(self._base / "mnesia"),
            RABBITMQ_LOG_BASE=str(self._base / "log"),
            RABBITMQ_PID_FILE=str(self._base / "node.pid"),
            ERL_EPMD_ADDRESS="127.0.0.1",
            # Keep the Erlang distribution port on loopback too.
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}",
        )
        return env

    def start(self) -> BrokerEndpoint:
        (self._base / "mnesia").mkdir()
        (self._base / "log").mkdir()
        (self._base / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}\n"
            f"management.tcp.port = {self.mgmt_port}\n"
            "management.tcp.ip = 127.0.0.1\n"
            "loopback_users = none\n"
            "collect_statistics_interval = 1000\n"
        )
        (self._base / "enabled_plugins").write_text("[rabbitmq_management].\n")
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("rabbitmq")
                for path in [self._base, *self._base.rglob("*")]:
                    os.chown(path, user.pw_uid, user.pw_gid)
            except KeyError:
                pass
        self._progress(f"starting a private RabbitMQ node {self.node} (amqp 127.0.0.1:{self.amqp_port}, management :{self.mgmt_port})")
        started = time.monotonic()
        result = subprocess.run([self._server, "-detached"], env=self._env(), capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise BrokerError(f"rabbitmq-server -detached failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")
        management = self.endpoint.management()
        # `rabbitmqctl await_startup` fails until the node has registered, so poll the API.
        while time.monotonic() - started < READY_BOUND_S:
            if management.ready():
                self._progress(f"broker ready in {time.monotonic() - started:.1f}s")
                return self.endpoint
            time.sleep(0.5)
        log_tail = self._log_tail()
        self.stop()
        raise BrokerError(f"the private RabbitMQ node did not answer within {READY_BOUND_S:.0f}s; its log ends:\n{log_tail}")

    def _log_tail(self) -> str:
        logs = sorted((self._base / "log").glob("*.log"))
        if not logs:
            return "(no log)"
        return "\n".join(logs[-1].read_text(errors="replace").splitlines()[-15:])

    def stop(self) -> None:
        """Shut the node down (rabbitmqctl waits for the process) and remove its files."""
        subprocess.run([self._ctl, "-n", self.node, "shutdown"], env=self._env(), capture_output=True, text=True, timeout=90)
        pid_file = self._base / "node.pid"
        if pid_file.exists():
            try:
                pid = int(pid_file.read_text().strip())
                os.kill(pid, 0)
                os.kill(pid, 9)
            except (ValueError, ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(self._base, ignore_errors=True)


@contextmanager
def run_vhost(endpoint: BrokerEndpoint | None, log: Callable[[str], None]) -> Iterator[tuple[BrokerEndpoint, Management, str]]:
    """A broker for one run (the given one, or a private node) and a fresh vhost on it.

    The vhost, and with it every queue and exchange a run left, is deleted afterwards, and a
    private node is stopped, whatever happened in between.
    """
    embedded = None
    if endpoint is None:
        embedded = EmbeddedBroker(log)
        endpoint = embedded.start()
    try:
        management = endpoint.management()
        vhost = f"acemq-interop-{uuid.uuid4().hex[:8]}"
        management.create_vhost(vhost)
        try:
            yield endpoint, management, vhost
        finally:
            management.delete_vhost(vhost)
    finally:
        if embedded is not None:
            log("stopping the private RabbitMQ node")
            embedded.stop()


def no_broker_message() -> str:
    return (
        "no RabbitMQ broker is available. Either:\n"
        "  1. install RabbitMQ (Debian: apt-get install rabbitmq-server) and the harness starts a private node itself;\n"
        "  2. point at an existing broker: --broker amqp://USER:PASS@HOST:5672/ (management API on :15672, or --management-url);\n"
        "  3. with a Docker engine: docker compose up broker, then --broker amqp://guest:guest@127.0.0.1:5672/"
    )
