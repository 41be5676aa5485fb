"""A private RabbitMQ node for one run, from the installed `rabbitmq-server`.

Its own node name, free ports on 127.0.0.1 (the Erlang distribution port too), a temporary
data dir owned by the `rabbitmq` user, the management plugin; with `--tls` a TLS listener
on the run's certificates. Stopped and removed at the end; its owner record lets a later
run remove it if this one is killed (broker/leftovers.py).
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ..amqp.tls import Certificates, rabbitmq_tls_config
from ..core.errors import BrokerError
from ..core.ownership import alive, kill_node, write_owner
from ..core.signals import deferred as deferred_signals
from .endpoint import BrokerEndpoint, free_port as _free_port, loopback_endpoint

READY_BOUND_S = 90.0
READY_POLL_S = 0.1
NODE_DIR_PREFIX = "acemq-interop-broker-"
# A node's data dir goes to memory when the machine has it: every durable queue a cell
# declares is a Mnesia transaction logged to disk, and on a disk those writes queued the
# 700 cells' declarations behind each other (responder.start took 234 ms on average in a
# full matrix on ext4). The node's data is thrown away at the end of the run anyway.
MEMORY_DIR = Path("/dev/shm")
MEMORY_DIR_MIN_FREE = 1 << 30  # a run's node holds tens of MB; the quorum WAL is capped below
WAL_MAX_BYTES = 64 * 1024 * 1024
# The Erlang schedulers do not spin while idle (RabbitMQ's advice for shared machines): on 2
# cores a spinning broker took CPU from the peers and the harness. Measured here, full
# matrix: the node ready in 6.5-6.8 s (was 8.2-9.4), broker CPU 25-27 s (was 31-32), the whole
# run 40-41 s (was 46-47).
NO_BUSY_WAIT = "+sbwt none +sbwtdcpu none +sbwtdio none"


def node_dir_roots() -> list[Path]:
    """Every folder a private node's data dir may be in (the leftover sweep looks in each)."""
    roots = [Path(tempfile.gettempdir())]
    if MEMORY_DIR not in roots:
        roots.insert(0, MEMORY_DIR)
    return roots


def node_dir_root() -> Path:
    """Where this run's node keeps its data: /dev/shm when it is a writable folder with room
    (Linux's shared-memory tmpfs), else the temporary folder ($TMPDIR)."""
    try:
        if MEMORY_DIR.is_dir() and os.access(MEMORY_DIR, os.W_OK | os.X_OK) \
                and shutil.disk_usage(MEMORY_DIR).free >= MEMORY_DIR_MIN_FREE:
            return MEMORY_DIR
    except OSError:
        pass
    return Path(tempfile.gettempdir())


class EmbeddedBroker:
    """A private RabbitMQ node for one run."""

    def __init__(self, progress: Callable[[str], None], tls: Certificates | None = None, seed: str | None = None):
        server = shutil.which("rabbitmq-server") or ("/usr/sbin/rabbitmq-server" if Path("/usr/sbin/rabbitmq-server").exists() else None)
        if server is None:
            raise BrokerError(no_broker_message())
        self._server = server
        self._ctl = str(Path(server).with_name("rabbitmqctl"))
        self._progress = progress
        self.node = f"acemq-interop-{uuid.uuid4().hex[:8]}@localhost"
        self.amqp_port, self.mgmt_port, self.dist_port = _free_port(), _free_port(), _free_port()
        self._base = Path(tempfile.mkdtemp(prefix=NODE_DIR_PREFIX, dir=node_dir_root()))
        # The owner record first: a run killed from here on leaves a node a later run can
        # prove is nobody's (ownership.py) and sweep.
        write_owner(self._base, self.node)
        self._tls = tls
        self.tls_port: int | None = _free_port() if tls is not None else None
        self.endpoint = loopback_endpoint(self.amqp_port, self.mgmt_port, self.tls_port,
                                          str(tls.ca_file) if tls is not None else None)
        # A node of a cluster (broker/cluster.py): the running node it joins on its first
        # boot (classic peer discovery); restarted later, it finds its cluster in its own data.
        self._seed = seed
        self._prepared = False

    def _env(self) -> dict[str, str]:
        from ..core.redact import child_environ

        env = child_environ()  # nothing that holds a credential
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
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} " + NO_BUSY_WAIT,
        )
        return env

    def start(self) -> BrokerEndpoint:
        self.launch()
        return self.await_ready()

    def _cluster_config(self) -> str:
        if self._seed is None:
            return ""
        return ("cluster_formation.peer_discovery_backend = classic_config\n"
                f"cluster_formation.classic_config.nodes.1 = {self._seed}\n")

    def _prepare(self) -> None:
        """The node's files, once: a restart boots from the same data."""
        if self._prepared:
            return
        self._prepared = True
        (self._base / "mnesia").mkdir()
        (self._base / "log").mkdir()
        (self._base / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}\n"
            f"management.tcp.port = {self.mgmt_port}\n"
            "management.tcp.ip = 127.0.0.1\n"
            "loopback_users = none\n"
            "collect_statistics_interval = 1000\n"
            # The quorum queues' write-ahead log rolls over at this size (512 MB by default):
            # the data dir may be in memory.
            f"raft.wal_max_size_bytes = {WAL_MAX_BYTES}\n"
            + self._cluster_config()
            + self._tls_config()
        )
        (self._base / "enabled_plugins").write_text("[rabbitmq_management].\n")
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("rabbitmq")
                for path in [self._base, *self._base.rglob("*")]:
                    os.chown(path, user.pw_uid, user.pw_gid)
            except KeyError:
                pass

    def launch(self) -> None:
        """Starts the node's VM (`rabbitmq-server -detached`) without waiting for it."""
        again = self._prepared
        self._prepare()
        tls = f", amqps :{self.tls_port}" if self.tls_port else ""
        self._progress(f"{'restarting' if again else 'starting'} a private RabbitMQ node {self.node} "
                       f"(amqp 127.0.0.1:{self.amqp_port}{tls}, management :{self.mgmt_port})")
        self._launched = time.monotonic()
        # The launcher is not cut short by Ctrl-C or SIGTERM (a signal waits until it is
        # done, a second or two): killed half-way it could leave a VM about to start that
        # stop() would not yet see. Once it is done the VM exists, and stop() finds it.
        with deferred_signals():
            result = subprocess.run([self._server, "-detached"], env=self._env(), capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise BrokerError(f"rabbitmq-server -detached failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")

    def await_ready(self) -> BrokerEndpoint:
        """Polls the node's management API until it answers (bounded); its endpoint."""
        started = self._launched
        management = self.endpoint.management()
        # `rabbitmqctl await_startup` fails until the node has registered, so poll the API.
        while time.monotonic() - started < READY_BOUND_S:
            if management.ready():
                self._progress(f"broker ready in {time.monotonic() - started:.1f}s")
                return self.endpoint
            time.sleep(READY_POLL_S)
        log_tail = self._log_tail()
        self.stop()
        raise BrokerError(f"the private RabbitMQ node did not answer within {READY_BOUND_S:.0f}s; its log ends:\n{log_tail}")

    def control(self) -> Any:
        """Holds and releases queues on this node (broker/control.py)."""
        from .control import CtlControl

        return CtlControl([self._ctl, "-n", self.node], env=self._env())

    def _tls_config(self) -> str:
        """The TLS listener's lines, its files copied into the base dir (chowned below, so the
        `rabbitmq` user can read the key when the harness runs as root)."""
        if self._tls is None or self.tls_port is None:
            return ""
        tls_dir = self._base / "tls"
        tls_dir.mkdir(mode=0o700)
        copies = {}
        for name, source in (("ca.pem", self._tls.server_ca), ("server.pem", self._tls.server_cert), ("server.key", self._tls.server_key)):
            copies[name] = tls_dir / name
            shutil.copyfile(source, copies[name])
            copies[name].chmod(0o600)
        return rabbitmq_tls_config(self.tls_port, str(copies["ca.pem"]), str(copies["server.pem"]), str(copies["server.key"]))

    def _log_tail(self) -> str:
        logs = sorted((self._base / "log").glob("*.log"))
        if not logs:
            return "(no log)"
        return "\n".join(logs[-1].read_text(errors="replace").splitlines()[-15:])

    def stop(self) -> None:
        """Stop the node and remove its files.

        The node is private and its data dir is thrown away, so nothing needs a graceful
        shutdown: the VM is killed and waited for (instant, where `rabbitmqctl shutdown` took
        seconds to start a second VM and close every queue). Its processes are found by the
        node name in their environment, so a node interrupted before it wrote its pid file
        is found as well; only then is the dir removed.
        """
        left = kill_node(self.node)
        if left:
            self._progress(f"the private node {self.node} did not die (pids {left}); its dir {self._base} is kept")
            return
        shutil.rmtree(self._base, ignore_errors=True)

    def stop_vm(self, bound_s: float = 60.0) -> None:
        """Stops the node's VM cleanly (`rabbitmqctl stop`: its connections are closed with
        320 CONNECTION_FORCED, its queues' replicas hand over) and keeps its data."""
        try:
            done = subprocess.run([self._ctl, "-n", self.node, "stop"], env=self._env(), capture_output=True, text=True,
                                  timeout=bound_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BrokerError(f"rabbitmqctl stop of node {self.node} did not return within {bound_s:.0f}s") from None
        if done.returncode != 0:
            raise BrokerError(f"rabbitmqctl stop of node {self.node} failed: {(done.stderr or done.stdout).strip()[-300:]}")

    def kill_vm(self) -> None:
        """SIGKILLs the node's VM (a crash: no goodbye to its clients) and keeps its data."""
        left = kill_node(self.node)
        if left:
            raise BrokerError(f"node {self.node} did not die (pids {left})")

    def lost(self) -> str | None:
        """Why the node is gone, if its VM has exited (for the run's broker watch)."""
        pid = self._pid()
        if pid is not None and not alive(pid):
            return f"the private node {self.node} (pid {pid}) has exited"
        return None

    def pid(self) -> int | None:
        """The node's VM process (for its CPU time)."""
        return self._pid()

    def _pid(self) -> int | None:
        try:
            return int((self._base / "node.pid").read_text().strip())
        except (OSError, ValueError):
            return None


def no_broker_message() -> str:
    return (
        "no RabbitMQ broker is available. Either:\n"
        "  1. install RabbitMQ (Debian: apt-get install rabbitmq-server) and the harness starts a private node itself;\n"
        "  2. point at an existing broker: --broker amqp://USER:PASS@HOST:5672/ (management API on :15672, or --management-url);\n"
        "  3. with a Docker engine: --broker-image acemq-interop/rabbitmq:4.0 (docker compose build broker, or sh ci/images.sh\n"
        "     rabbitmq:4.0 where no registry is reached), or docker compose up -d broker, then --broker amqp://guest:guest@127.0.0.1:5672/"
    )
