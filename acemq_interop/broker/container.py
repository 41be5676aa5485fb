"""A RabbitMQ broker in a container, for `--broker-image IMAGE`.

Two kinds of image:
- one built from ci/rabbitmq/Dockerfile (labelled org.acemq-interop.role=broker; any base:
  the official rabbitmq:*-management images, or Debian's rabbitmq-server on a Debian base):
  its entry point takes the listeners from the environment. The container uses host
  networking (the CI engine has no bridge, and the peers, in containers or not, reach it at
  127.0.0.1) with free loopback ports of its own: AMQP, management, the Erlang
  distribution and epmd, so several brokers and a private node can run side by side;
- any other, such as the official `rabbitmq:4.0-management`: its listeners are fixed
  (5672, 15672, 5671 for TLS). On an engine with a bridge network its ports are published
  on free loopback ports (`-p 127.0.0.1::5672`); on one without (host networking only) it
  listens on those fixed ports of the host, which must be free, one such broker at a time.
The container carries the run label and is force-removed at the end (docker rm -f),
whatever happened.

A node of a cluster of containers (`--cluster N --broker-image IMAGE`, broker/cluster.py)
is such a container given its `Membership`: its letter, the node it joins on its first boot,
the cluster's Erlang cookie, and the one epmd the cluster's nodes share (`EpmdContainer`, a
container of its own from the same image, so that a node killed does not take the others'
names with its epmd). A node is stopped (`rabbitmqctl stop` inside it) or killed (`docker
kill`), and started again from its own data (`docker start`). Only an image built from
ci/rabbitmq/Dockerfile can be a node: an official image's fixed listeners allow one broker.

With `--tls` the run's server certificate folder is mounted read-only at TLS_MOUNT and a
rabbitmq.conf fragment with the TLS listener (on a free loopback port of its own) is
mounted into /etc/rabbitmq/conf.d beside the one the entry point writes, so any image
built from ci/rabbitmq/Dockerfile takes TLS without being rebuilt.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

from ..core import docker_engine
from .endpoint import loopback_endpoint
from .node import NO_BUSY_WAIT
from ..core.errors import BrokerError
from ..amqp.tls import Certificates, rabbitmq_tls_config

READY_BOUND_S = 120.0
# Our image's own Erlang arguments (ci/rabbitmq/Dockerfile), kept when the run adds NO_BUSY_WAIT.
LOOPBACK_DIST = "-kernel inet_dist_use_interface {127,0,0,1}"
# The listeners of an image that does not take them from the environment (an official one).
FIXED_AMQP, FIXED_MGMT, FIXED_TLS, FIXED_DIST, FIXED_EPMD = 5672, 15672, 5671, 25672, 4369
START_BOUND_S = 60.0
TLS_MOUNT = "/etc/acemq-interop/tls"
TLS_CONF = "/etc/rabbitmq/conf.d/91-acemq-interop-tls.conf"


STOP_BOUND_S = 60.0  # a node stopping cleanly, its container exiting with it


def _free_port() -> int:
    from .endpoint import free_port as free

    return free()


@dataclass(frozen=True)
class Membership:
    """A container's place in a cluster of containers."""

    letter: str  # A, B, C... as scenarios name the nodes
    epmd_port: int  # the cluster's shared epmd (EpmdContainer)
    cookie: str  # the cluster's Erlang cookie: given through the environment of `docker run`, never its argv
    seed: str | None  # the node it joins on its first boot; None for the first node


class EpmdContainer:
    """The epmd a cluster of containers shares, in a container of its own (the image's epmd):
    each node registers its name there, and a node killed and started again finds the others
    by it."""

    def __init__(self, image: str, progress: Callable[[str], None], run_id: str, index: int):
        self.image, self._progress = image, progress
        self.name = f"acemq-interop-{run_id}-broker-{index}-epmd"
        self.run_id = run_id
        self.port = _free_port()
        self._started = False

    def start(self) -> None:
        from .endpoint import port_in_use

        self._started = True
        argv = ["docker", "run", "-d", "--pull", "never", "--name", self.name, *docker_engine.run_labels(self.run_id, "broker"),
                "--network", "host", "--entrypoint", "sh", self.image, "-c",
                f"exec epmd -port {self.port} -address 127.0.0.1"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=START_BOUND_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(f"docker run of the cluster's epmd did not return within {START_BOUND_S:.0f}s") from exc
        if done.returncode != 0:
            raise BrokerError(f"docker run of the cluster's epmd failed ({done.returncode}): {done.stderr.strip()}")
        deadline = time.monotonic() + START_BOUND_S
        while not port_in_use(self.port):
            if time.monotonic() > deadline or not docker_engine.is_running(self.name):
                raise BrokerError(f"the cluster's epmd ({self.image}) did not listen on 127.0.0.1:{self.port}; its log ends:\n"
                                  f"{docker_engine.logs_tail(self.name)}")
            time.sleep(0.1)
        self._progress(f"the cluster's epmd listens on 127.0.0.1:{self.port} (container {self.name})")

    def stop(self) -> None:
        if self._started:
            _remove(self.name)
            self._started = False


def _remove(name: str) -> None:
    try:
        subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        pass


class ContainerBroker:
    """One broker container for one run (the caller removes it with stop())."""

    kind = "image"

    def __init__(self, image: str, progress: Callable[[str], None], run_id: str, index: int = 0,
                 tls: Certificates | None = None, member: Membership | None = None):
        self.image = image
        self.index = index
        self._progress = progress
        self.run_id = run_id
        self.member = member
        suffix = member.letter.lower() if member else ""
        self.name = f"acemq-interop-{run_id}-broker-{index}{'-' + suffix if suffix else ''}"
        self.node = f"acemq-interop-{run_id.rsplit('-', 1)[-1]}-{index}{suffix}@localhost"
        self.amqp_port, self.mgmt_port, self.dist_port = (_free_port() for _ in range(3))
        self.epmd_port = member.epmd_port if member else _free_port()
        self.container_id: str | None = None
        self._started = False
        self._launched = 0.0
        self._pid: int | None = None  # the container's main process while it runs (lost())
        # An image not built from ci/rabbitmq/Dockerfile has fixed listeners (_check_image says
        # which), published through a bridge where the engine has one.
        self.fixed = False
        self.bridge = False

        self._tls = tls
        self.tls_port: int | None = _free_port() if tls is not None else None
        self.endpoint = loopback_endpoint(self.amqp_port, self.mgmt_port, self.tls_port,
                                          str(tls.ca_file) if tls is not None else None)

    def describe(self) -> str:
        return f"image {self.image}"

    def _check_image(self) -> None:
        problem = docker_engine.engine_problem()
        if problem:
            raise BrokerError(f"--broker-image {self.image}: {problem}")
        if not docker_engine.image_exists(self.image):
            raise BrokerError(
                f"--broker-image {self.image}: no such image on the engine (nothing is pulled). Build it: "
                f"docker build -t {self.image} --build-arg BASE_IMAGE=rabbitmq:4.0-management ci/rabbitmq "
                f"(or sh ci/images.sh rabbitmq:3.10 rabbitmq:4.0 where no registry is reached)")
        self.fixed = docker_engine.image_labels(self.image).get(docker_engine.ROLE_LABEL) != "broker"
        if self.fixed and self.member is not None:
            raise BrokerError(
                f"--cluster on --broker-image {self.image}: its listeners are fixed (an image not built from "
                f"ci/rabbitmq/Dockerfile), so only one such broker can run on a host network; wrap it: "
                f"docker build -t acemq-interop/rabbitmq:custom --build-arg BASE_IMAGE={self.image} ci/rabbitmq")
        if self.fixed:
            self._plan_fixed()

    def _plan_fixed(self) -> None:
        """An image whose listeners are fixed: published on free loopback ports where the
        engine has a bridge, else on the host's own fixed ports, which must be free."""
        self.bridge = docker_engine.has_bridge()
        if self.bridge:
            return  # the ports are known once `docker port` tells them
        from .endpoint import port_in_use

        wanted = [FIXED_AMQP, FIXED_MGMT, FIXED_DIST] + ([FIXED_TLS] if self._tls is not None else [])
        busy = [port for port in wanted if port_in_use(port)]
        if busy:
            raise BrokerError(
                f"--broker-image {self.image}: its listeners are fixed (an official image: AMQP {FIXED_AMQP}, management "
                f"{FIXED_MGMT}) and this engine has no bridge network to publish them elsewhere, so they must be free on "
                f"the host; {', '.join(map(str, busy))} in use. Free them, or wrap the image so its listeners can be chosen: "
                f"docker build -t acemq-interop/rabbitmq:custom --build-arg BASE_IMAGE={self.image} ci/rabbitmq")
        self.amqp_port, self.mgmt_port = FIXED_AMQP, FIXED_MGMT
        self.tls_port = FIXED_TLS if self._tls is not None else None
        self.endpoint = loopback_endpoint(self.amqp_port, self.mgmt_port, self.tls_port,
                                          str(self._tls.ca_file) if self._tls is not None else None)

    def _tls_args(self) -> list[str]:
        """The mounts of a TLS listener: the server's files and the conf fragment naming them."""
        if self._tls is None or self.tls_port is None:
            return []
        conf = self._tls.server_dir / f"tls-{self.index}{self.member.letter if self.member else ''}.conf"
        listener = FIXED_TLS if self.fixed else self.tls_port  # inside the container
        conf.write_text(rabbitmq_tls_config(listener, f"{TLS_MOUNT}/ca.pem", f"{TLS_MOUNT}/server.pem",
                                            f"{TLS_MOUNT}/server.key"), encoding="ascii")
        conf.chmod(0o644)
        return ["-v", f"{self._tls.server_dir}:{TLS_MOUNT}:ro", "-v", f"{conf}:{TLS_CONF}:ro"]

    def _argv(self) -> list[str]:
        common = ["docker", "run", "-d", "--pull", "never", "--name", self.name,
                  *docker_engine.run_labels(self.run_id, "broker"), *self._tls_args()]
        if self.fixed:  # an image of its own: only the schedulers' spinning is turned off
            common += ["-e", f"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS={NO_BUSY_WAIT}"]
        if self.member is not None:
            common += ["-e", "ACEMQ_ERLANG_COOKIE"]  # its value from docker's environment (_docker_env), never the argv
            if self.member.seed:
                common += ["-e", f"ACEMQ_CLUSTER_SEED={self.member.seed}"]
        if not self.fixed:
            return [*common, "--network", "host",
                    "-e", f"ACEMQ_AMQP_PORT={self.amqp_port}", "-e", f"ACEMQ_MGMT_PORT={self.mgmt_port}",
                    "-e", f"RABBITMQ_NODENAME={self.node}", "-e", f"RABBITMQ_DIST_PORT={self.dist_port}",
                    "-e", f"ERL_EPMD_PORT={self.epmd_port}", "-e", "ERL_EPMD_ADDRESS=127.0.0.1",
                    "-e", f"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS={LOOPBACK_DIST} {NO_BUSY_WAIT}", self.image]
        if self.bridge:  # the fixed listeners, published on free loopback ports only
            ports = [FIXED_AMQP, FIXED_MGMT] + ([FIXED_TLS] if self._tls is not None else [])
            return [*common, *[a for port in ports for a in ("-p", f"127.0.0.1::{port}")], self.image]
        return [*common, "--network", "host", self.image]

    def _published(self) -> None:
        """With a bridge: the host ports `docker run` chose for the fixed listeners."""
        amqp = docker_engine.published_port(self.name, FIXED_AMQP)
        mgmt = docker_engine.published_port(self.name, FIXED_MGMT)
        tls = docker_engine.published_port(self.name, FIXED_TLS) if self._tls is not None else None
        if amqp is None or mgmt is None or (self._tls is not None and tls is None):
            raise BrokerError(f"the broker container from {self.image} published no port for its listeners (docker port {self.name})")
        self.amqp_port, self.mgmt_port, self.tls_port = amqp, mgmt, tls
        self.endpoint = loopback_endpoint(amqp, mgmt, tls, str(self._tls.ca_file) if self._tls is not None else None)

    def _docker_env(self) -> dict[str, str] | None:
        """The environment of `docker run`: a node of a cluster reads its cookie from it."""
        if self.member is None:
            return None
        from ..core.redact import child_environ

        return {**child_environ(), "ACEMQ_ERLANG_COOKIE": self.member.cookie}

    def start(self):
        self.launch()
        return self.await_ready()

    def launch(self) -> None:
        """Creates and starts the container without waiting for the broker in it; a node of a
        cluster stopped or killed before is started again from its own data (`docker start`)."""
        if self.container_id is not None:
            self._progress(f"restarting broker container {self.name} (node {self.node})")
            self._launched = time.monotonic()
            self._docker("start", self.name)
            return
        self._check_image()
        argv = self._argv()
        if self.fixed and self.bridge:
            where = "its fixed listeners published on free loopback ports"
        else:
            tls = f", amqps :{self.tls_port}" if self.tls_port else ""
            where = f"amqp 127.0.0.1:{self.amqp_port}{tls}, management :{self.mgmt_port}"
        self._progress(f"starting broker container {self.name} from {self.image} ({where})")
        self._launched = time.monotonic()
        self._started = True  # from here on, stop() removes it by name even if `run` is interrupted
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=START_BOUND_S, stdin=subprocess.DEVNULL,
                                  env=self._docker_env())
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(f"docker run {self.image} did not return within {START_BOUND_S:.0f}s") from exc
        if done.returncode != 0:
            raise BrokerError(f"docker run {self.image} failed ({done.returncode}): {done.stderr.strip()}")
        self.container_id = done.stdout.strip()
        if self.fixed and self.bridge:
            self._published()

    def await_ready(self):
        """Polls the broker until its management API and AMQP listener answer (bounded); its endpoint."""
        from .preflight import amqp_answers

        started = self._launched
        management = self.endpoint.management()
        while time.monotonic() - started < READY_BOUND_S:
            if management.ready() and amqp_answers(self.endpoint):
                self._progress(f"broker container ready in {time.monotonic() - started:.1f}s")
                self._pid = self.pid()
                return self.endpoint
            if not docker_engine.is_running(self.name):
                raise BrokerError(f"the broker container from {self.image} exited; its log ends:\n{docker_engine.logs_tail(self.name)}")
            time.sleep(0.5)
        raise BrokerError(f"the broker container from {self.image} did not answer within {READY_BOUND_S:.0f}s; its log ends:\n"
                          f"{docker_engine.logs_tail(self.name)}")

    def _docker(self, *args: str, bound_s: float = STOP_BOUND_S) -> None:
        try:
            done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=bound_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BrokerError(f"docker {args[0]} {self.name} did not return within {bound_s:.0f}s") from None
        if done.returncode != 0:
            raise BrokerError(f"docker {args[0]} {self.name} failed: {(done.stderr or done.stdout).strip()[-300:]}")

    def _await_exit(self) -> None:
        deadline = time.monotonic() + STOP_BOUND_S
        while docker_engine.is_running(self.name):
            if time.monotonic() > deadline:
                raise BrokerError(f"the broker container {self.name} still runs {STOP_BOUND_S:.0f}s after its node stopped")
            time.sleep(0.2)  # a poll with a bound: the container's main process exiting
        self._pid = None

    def stop_vm(self) -> None:
        """Stops the node cleanly (`rabbitmqctl stop` inside its container: its connections are
        closed with 320 CONNECTION_FORCED, its queues' replicas hand over); the container exits
        with it and keeps its data."""
        self._pid = None  # from here its exit is the caller's doing
        self._docker("exec", self.name, "rabbitmqctl", "-n", self.node, "stop")
        self._await_exit()

    def kill_vm(self) -> None:
        """SIGKILLs the container (its node gets no goodbye to its clients) and keeps its data."""
        self._pid = None
        self._docker("kill", "--signal", "KILL", self.name)
        self._await_exit()

    def lost(self) -> str | None:
        """Why the node is gone: its container's main process exited when nothing stopped it."""
        pid = self._pid
        if pid is not None and not os.path.exists(f"/proc/{pid}"):
            return f"the broker container {self.name} (node {self.node}) has exited"
        return None

    def pid(self) -> int | None:
        """The container's main process, as the host sees it (for its CPU time)."""
        try:
            done = subprocess.run(["docker", "inspect", "--format", "{{.State.Pid}}", self.name], capture_output=True,
                                  text=True, timeout=10, stdin=subprocess.DEVNULL)
            pid = int(done.stdout.strip() or 0)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None
        return pid or None

    def control(self):
        """Holds and releases queues in the container's node (broker/control.py)."""
        from .control import CtlControl

        if self.fixed:  # the image's own node name: rabbitmqctl finds it inside the container
            return CtlControl(["docker", "exec", self.name, "rabbitmqctl"])
        return CtlControl(["docker", "exec", self.name, "rabbitmqctl", "-n", self.node])

    def stop(self) -> None:
        if not self._started:
            return
        self._progress(f"removing broker container {self.name}")
        _remove(self.name)
        self._started = False
        self._pid = None
