"""Where the broker comes from, and its lifecycle: one context for every kind.

- `--broker URL`: an existing RabbitMQ, used as it is (`amqps://` with `--ca-cert FILE`).
- default: a private node from the installed `rabbitmq-server`: its own node name, free
  ports on 127.0.0.1 (the Erlang distribution port too), a temporary data dir owned by the
  `rabbitmq` user, the management plugin; shut down and removed at the end.
- `--broker-image IMAGE`: a container (broker_container.ContainerBroker), removed at the end.

With `--tls` the private node and the container get a TLS listener too, on the run's
certificates (acemq_interop/tls.py), and the endpoint every client is given is that one.

`Broker` is the one context: it owns the broker from before it is spawned (so a signal
during start-up still removes it) to after it is gone, defers Ctrl-C and SIGTERM while it
cleans up (a second signal cannot cut the cleanup short), and reads every broker's facts
(product, version, Erlang version, a short label such as `rabbitmq-4.0.5`) from the
management API, whichever way it came.
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .errors import BrokerError, UsageError
from .endpoint import BrokerEndpoint, free_port as _free_port, loopback_endpoint
from .management import Management
from .tls import DEFAULT_TLS_PORT, Certificates, rabbitmq_tls_config
from .signals import deferred as deferred_signals
from .ownership import Owner, alive, kill_node, read_owner, vhost_description, vhost_owner, write_owner

READY_BOUND_S = 90.0
NODE_DIR_PREFIX = "acemq-interop-broker-"
VHOST_PREFIX = "acemq-interop-"


def parse_broker_url(url: str, mgmt_url: str | None, ca_file: str | None = None) -> BrokerEndpoint:
    """An `amqp://user:pass@host:port/` URL, or `amqps://...` (port 5671) with the CA file that
    signed the broker's certificate; the management API defaults to port 15672.

    A malformed URL is bad input (exit 2) with a message that never shows the password."""
    from .redact import remember, url as redacted

    shown = redacted(url)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise UsageError(f"--broker {shown}: not a URL ({exc}); expected amqp://USER:PASS@HOST[:PORT]/") from None
    if parts.scheme not in ("amqp", "amqps") or not host:
        raise UsageError(f"--broker {shown}: expected amqp://USER:PASS@HOST[:PORT]/ or amqps://... "
                         f"(the harness makes its own vhost per run)")
    tls = parts.scheme == "amqps"
    if tls and ca_file is None:
        raise UsageError(f"--broker {shown}: an amqps broker needs --ca-cert FILE (the PEM file of the CA that signed its certificate)")
    if not tls and ca_file is not None:
        raise UsageError("--ca-cert is for a TLS broker: give --broker amqps://USER:PASS@HOST[:PORT]/ with it")
    password = urllib.parse.unquote(parts.password or "guest")
    remember(password)
    if mgmt_url:
        try:
            urllib.parse.urlsplit(mgmt_url).port
        except ValueError as exc:
            raise UsageError(f"--management-url {redacted(mgmt_url)}: not a URL ({exc}); expected http://HOST:PORT") from None
    return BrokerEndpoint(
        host=host,
        port=port or (DEFAULT_TLS_PORT if tls else 5672),
        username=urllib.parse.unquote(parts.username or "guest"),
        password=password,
        mgmt_url=mgmt_url or f"http://{host if ':' not in host else '[' + host + ']'}:15672",
        ca_file=ca_file,
    )


class EmbeddedBroker:
    """A private RabbitMQ node for one run."""

    def __init__(self, progress: Callable[[str], None], tls: Certificates | None = None):
        server = shutil.which("rabbitmq-server") or ("/usr/sbin/rabbitmq-server" if Path("/usr/sbin/rabbitmq-server").exists() else None)
        if server is None:
            raise BrokerError(no_broker_message())
        self._server = server
        self._ctl = str(Path(server).with_name("rabbitmqctl"))
        self._progress = progress
        self.node = f"acemq-interop-{uuid.uuid4().hex[:8]}@localhost"
        self.amqp_port, self.mgmt_port, self.dist_port = _free_port(), _free_port(), _free_port()
        self._base = Path(tempfile.mkdtemp(prefix=NODE_DIR_PREFIX))
        # The owner record first: a run killed from here on leaves a node a later run can
        # prove is nobody's (ownership.py) and sweep.
        write_owner(self._base, self.node)
        self._tls = tls
        self.tls_port: int | None = _free_port() if tls is not None else None
        self.endpoint = loopback_endpoint(self.amqp_port, self.mgmt_port, self.tls_port,
                                          str(tls.ca_file) if tls is not None else None)

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
        tls = f", amqps :{self.tls_port}" if self.tls_port else ""
        self._progress(f"starting a private RabbitMQ node {self.node} (amqp 127.0.0.1:{self.amqp_port}{tls}, management :{self.mgmt_port})")
        started = time.monotonic()
        # The launcher is not cut short by Ctrl-C or SIGTERM (a signal waits until it is
        # done, a second or two): killed half-way it could leave a VM about to start that
        # stop() would not yet see. Once it is done the VM exists, and stop() finds it.
        with deferred_signals():
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

    def control(self) -> Any:
        """Holds and releases queues on this node (broker_control.py)."""
        from .broker_control import CtlControl

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

    def lost(self) -> str | None:
        """Why the node is gone, if its VM has exited (for the run's broker watch)."""
        pid = self._pid()
        if pid is not None and not alive(pid):
            return f"the private node {self.node} (pid {pid}) has exited"
        return None

    def _pid(self) -> int | None:
        try:
            return int((self._base / "node.pid").read_text().strip())
        except (OSError, ValueError):
            return None


# -- leftovers of killed runs -----------------------------------------------------------


@dataclass(frozen=True)
class Leftover:
    """A private node's base dir (or a vhost) a run left, and what is known of its owner."""

    what: str  # the dir or the vhost name
    node: str  # the node name, for a dir
    state: str  # "owner alive", "owner dead", "owner unknown" (no record, or another machine's)

    def line(self) -> str:
        return f"{self.what}" + (f" (node {self.node})" if self.node else "") + f": {self.state}"


def _state(owner: Owner | None) -> str:
    if owner is None:
        return "owner unknown (no owner record)"
    if owner.dead():
        return "owner dead"
    if not owner.judgeable():
        return f"owner unknown (recorded by pid {owner.pid} on {owner.host or 'another machine'}, not judged from here)"
    return f"owner alive (pid {owner.pid})"


def leftover_nodes() -> list[Leftover]:
    """Every private node's base dir in the temporary folder, with its owner's state."""
    found = []
    for base in sorted(Path(tempfile.gettempdir()).glob(NODE_DIR_PREFIX + "*")):
        if base.is_dir():
            owner = read_owner(base)
            found.append(Leftover(str(base), owner.node if owner else "", _state(owner)))
    return found


def sweep_nodes(log: Callable[[str], None]) -> list[Leftover]:
    """Kill the nodes of dead owners and remove their dirs; never anything else."""
    swept = []
    for left in leftover_nodes():
        if left.state != "owner dead":
            continue
        if left.node and kill_node(left.node):
            log(f"a node left by a killed run, {left.node}, would not die: {left.what} kept")
            continue
        shutil.rmtree(left.what, ignore_errors=True)
        log(f"removed a private node left by a killed run: {left.node} ({left.what})")
        swept.append(left)
    return swept


def leftover_vhosts(management: Management) -> list[Leftover]:
    """The broker's acemq-interop-* vhosts, with what is known of their owners."""
    return [Leftover(v["name"], "", _state(vhost_owner(v.get("description"))))
            for v in management.vhost_records() if str(v.get("name", "")).startswith(VHOST_PREFIX)]


def sweep_vhosts(management: Management, log: Callable[[str], None]) -> list[Leftover]:
    """Delete the acemq-interop-* vhosts whose recorded owner is provably dead."""
    swept = []
    for left in leftover_vhosts(management):
        if left.state == "owner dead":
            management.delete_vhost(left.what)
            log(f"deleted a vhost left by a killed run: {left.what}")
            swept.append(left)
    return swept


@dataclass
class BrokerFacts:
    """What a run records about its broker (from the management API's /api/overview)."""

    source: str
    product: str | None = None
    version: str | None = None
    erlang_version: str | None = None
    management_version: str | None = None
    amqp: str = ""

    @property
    def label(self) -> str:
        """A short name for the broker axis: `rabbitmq-4.0.5`."""
        product = (self.product or "rabbitmq").lower().replace(" ", "-")
        return f"{product}-{self.version}" if self.version else f"{product}-unknown"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "product": self.product, "version": self.version,
                "erlang_version": self.erlang_version, "management_version": self.management_version,
                "source": self.source, "amqp": self.amqp}


def read_facts(endpoint: BrokerEndpoint, source: str) -> BrokerFacts:
    overview = endpoint.management().overview() or {}
    return BrokerFacts(
        source=source,
        product=overview.get("product_name") or ("RabbitMQ" if overview.get("rabbitmq_version") else None),
        version=overview.get("product_version") or overview.get("rabbitmq_version"),
        erlang_version=overview.get("erlang_version"),
        management_version=overview.get("management_version"),
        amqp=f"{endpoint.host}:{endpoint.port}",
    )


@dataclass(frozen=True)
class BrokerSource:
    """Where one broker of a run comes from: kind is "node", "url" or "image"."""

    kind: str
    endpoint: BrokerEndpoint | None = None
    image: str | None = None
    url: str | None = None

    def describe(self) -> str:
        if self.kind == "image":
            return f"image {self.image}"
        if self.kind == "url":
            assert self.endpoint is not None
            return f"--broker {'amqps ' if self.endpoint.tls else ''}{self.endpoint.host}:{self.endpoint.port}"
        return "private node (rabbitmq-server)"

    def rerun_args(self) -> str:
        """How a rerun line names this broker."""
        if self.kind == "image":
            return f" --broker-image {self.image}"
        if self.kind == "url":
            return f" --broker {self.url}"
        return ""


def broker_sources(url: str | None, mgmt_url: str | None, images: list[str] | None,
                   ca_file: str | None = None) -> list[BrokerSource]:
    """The run's broker axis: every --broker-image, else the --broker URL, else a private node."""
    if url and images:
        from .errors import UsageError

        raise UsageError("give either --broker or --broker-image, not both")
    if images:
        if len(set(images)) != len(images):
            from .errors import UsageError

            raise UsageError("a --broker-image is named twice")
        return [BrokerSource("image", image=image) for image in images]
    if url:
        return [BrokerSource("url", endpoint=parse_broker_url(url, mgmt_url, ca_file), url=url)]
    return [BrokerSource("node")]


class Broker:
    """One broker's whole lifecycle, whichever way it comes: `with Broker(...) as b:`.

    The managed broker (a private node or a container) is created before it is spawned
    and registered, so that whatever interrupts the start (a failure, Ctrl-C, SIGTERM)
    still stops and removes it; stopping runs with the signals deferred. `facts` is read
    once the broker answers.
    """

    def __init__(self, source: BrokerSource, log: Callable[[str], None], run_id: str | None = None, index: int = 0,
                 tls: Certificates | None = None):
        self.source = source
        self.tls = tls  # --tls: the run's certificates, for a private node's or a container's TLS listener
        self._log = log
        self.run_id = run_id or uuid.uuid4().hex[:8]
        self.index = index
        self.managed: Any = None  # EmbeddedBroker or ContainerBroker: what we must stop
        self.endpoint: BrokerEndpoint | None = source.endpoint
        self.facts = BrokerFacts(source=source.describe())

    def __enter__(self) -> "Broker":
        try:
            sweep_nodes(self._log)  # private nodes killed runs left, by owner record only
            # Created with the signals deferred: from the moment the node's dir exists,
            # `self.managed` holds it, so an interrupt still removes it.
            with deferred_signals():
                if self.source.kind == "node":
                    self.managed = EmbeddedBroker(self._log, tls=self.tls)
                elif self.source.kind == "image":
                    from .broker_container import ContainerBroker

                    assert self.source.image
                    self.managed = ContainerBroker(self.source.image, self._log, self.run_id, self.index, tls=self.tls)
            if self.managed is not None:
                self.endpoint = self.managed.start()
            assert self.endpoint is not None
            check_broker(self.endpoint, self._log)
            self.facts = read_facts(self.endpoint, self.source.describe())
            self._log(f"broker: {self.facts.label} (Erlang {self.facts.erlang_version}) from {self.facts.source}")
        except BaseException:
            self.close(reraise=False)
            raise
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        # With an exception on its way (RunInterrupted carrying the results), a signal during
        # the stop is recorded, not raised over it.
        self.close(reraise=exc_type is None)

    def control(self) -> Any:
        """The managed broker's queue holder (broker_control.py), None for a broker given by URL."""
        return self.managed.control() if self.managed is not None else None

    def lost(self) -> str | None:
        """Why the managed broker is certainly gone (its VM exited), else None."""
        check = getattr(self.managed, "lost", None)
        return check() if check is not None else None

    def close(self, reraise: bool = True) -> None:
        if self.managed is None:
            return
        managed, self.managed = self.managed, None
        with deferred_signals(reraise):
            if isinstance(managed, EmbeddedBroker):
                self._log("stopping the private RabbitMQ node")
            managed.stop()


def check_broker(endpoint: BrokerEndpoint, log: Callable[[str], None]) -> None:
    """Pre-flight (preflight.py: one line on what is wrong, exit 3), then the vhosts killed
    runs left on this broker, where their owner records prove them dead."""
    from .preflight import preflight

    preflight(endpoint)
    try:
        sweep_vhosts(endpoint.management(), log)
    except BrokerError as exc:
        log(f"could not sweep vhosts left by killed runs: {exc}")


@contextmanager
def run_vhost(endpoint: BrokerEndpoint | None, log: Callable[[str], None], lost: Callable[[], str | None] | None = None,
              checked: bool = False) -> Iterator[tuple[BrokerEndpoint, Management, str]]:
    """A broker for one run (the given one, or a private node) and a fresh vhost on it.

    The broker is checked first (pre-flight) unless the caller's `Broker` did (`checked`).
    The vhost carries its owner record (so a killed run's vhost can be swept later) and is
    deleted afterwards, with every queue and exchange a run left, and a private node is
    stopped, whatever happened in between. When `lost` says the broker is gone, deleting
    is not attempted; a deletion that fails is said, not raised: the run's results stand.
    """
    with ExitStack() as stack:
        if endpoint is None:
            endpoint = stack.enter_context(Broker(BrokerSource("node"), log)).endpoint
        elif not checked:
            check_broker(endpoint, log)
        assert endpoint is not None
        management = endpoint.management()
        vhost = f"{VHOST_PREFIX}{uuid.uuid4().hex[:8]}"
        with deferred_signals():
            try:
                management.create_vhost(vhost, vhost_description())
            except BrokerError:
                _delete_vhost(management, vhost, log)
                raise
        def drop(reraise: bool) -> None:
            with deferred_signals(reraise):
                cause = lost() if lost is not None else None
                if cause:
                    log(f"the run's vhost {vhost} is not deleted: the broker was lost ({cause})")
                else:
                    _delete_vhost(management, vhost, log)

        try:
            yield endpoint, management, vhost
        finally:
            # A signal now is recorded (signals.pending), not raised: it must not replace
            # what is on its way, nor lose a finished run's results; the caller asks.
            drop(reraise=False)


def _delete_vhost(management: Management, vhost: str, log: Callable[[str], None]) -> None:
    try:
        management.delete_vhost(vhost)
    except BrokerError as exc:
        log(f"could not delete the run's vhost {vhost} ({exc}); its owner record lets the next run, "
            "or acemq-interop doctor --clean, remove it")


def no_broker_message() -> str:
    return (
        "no RabbitMQ broker is available. Either:\n"
        "  1. install RabbitMQ (Debian: apt-get install rabbitmq-server) and the harness starts a private node itself;\n"
        "  2. point at an existing broker: --broker amqp://USER:PASS@HOST:5672/ (management API on :15672, or --management-url);\n"
        "  3. with a Docker engine: --broker-image acemq-interop/rabbitmq:4.0 (docker compose build broker, or sh ci/images.sh\n"
        "     rabbitmq:4.0 where no registry is reached), or docker compose up -d broker, then --broker amqp://guest:guest@127.0.0.1:5672/"
    )
