"""Where the broker comes from, and its lifecycle: one context for every kind.

- `--broker URL`: an existing RabbitMQ, used as it is (`amqps://` with `--ca-cert FILE`).
- default: a private node from the installed `rabbitmq-server`: its own node name, free
  ports on 127.0.0.1 (the Erlang distribution port too), a temporary data dir owned by the
  `rabbitmq` user, the management plugin; shut down and removed at the end.
- `--broker-image IMAGE`: a container (broker/container.py), removed at the end.

With `--tls` the private node and the container get a TLS listener too, on the run's
certificates (acemq_interop/amqp/tls.py), and the endpoint every client is given is that one.

`Broker` is the one context: it owns the broker from before it is spawned (so a signal
during start-up still removes it) to after it is gone, defers Ctrl-C and SIGTERM while it
cleans up (a second signal cannot cut the cleanup short), and reads what the broker says of
itself (`overview`: product, version, Erlang version) from the management API, whichever
way it came; the run describes it from that (results.model.BrokerInfo).
- a broker `given` by the caller (a test session's own node) is used as it is, with the
  control the caller has of it, and left running.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable

from ..amqp.tls import Certificates
from ..core.errors import BrokerError, UsageError
from ..core.signals import deferred as deferred_signals
from .endpoint import BrokerEndpoint, parse_broker_url
from .leftovers import sweep_nodes, sweep_vhosts
from .node import EmbeddedBroker


@dataclass(frozen=True)
class BrokerSource:
    """Where one broker of a run comes from: kind is "node", "url", "image", or "given" (a
    broker the caller runs and hands over whole, with its control: a test session's node)."""

    kind: str
    endpoint: BrokerEndpoint | None = None
    image: str | None = None
    url: str | None = None
    control: Any = None  # "given": the caller's queue holder of it (broker/control.py), or None
    nodes: int = 1  # "cluster": how many nodes (broker/cluster.py): private ones, or containers of `image`

    @classmethod
    def given(cls, endpoint: BrokerEndpoint, control: Any = None) -> "BrokerSource":
        return cls("given", endpoint=endpoint, control=control)

    def describe(self) -> str:
        if self.kind == "image":
            return f"image {self.image}"
        if self.kind in ("url", "given"):
            assert self.endpoint is not None
            return f"--broker {'amqps ' if self.endpoint.tls else ''}{self.endpoint.host}:{self.endpoint.port}"
        if self.kind == "cluster":
            if self.image:
                return f"cluster of {self.nodes} containers of image {self.image}"
            return f"cluster of {self.nodes} private nodes (rabbitmq-server)"
        return "private node (rabbitmq-server)"

    def rerun_args(self) -> str:
        """How a rerun line names this broker."""
        if self.kind == "image":
            return f" --broker-image {self.image}"
        if self.kind == "url":
            return f" --broker {self.url}"
        if self.kind == "cluster":
            return f" --cluster {self.nodes}" + (f" --broker-image {self.image}" if self.image else "")
        return ""


def broker_sources(url: str | None, mgmt_url: str | None, images: list[str] | None,
                   ca_file: str | None = None, cluster: int = 0) -> list[BrokerSource]:
    """The run's broker axis: every --broker-image, else the --broker URL, else a private node
    (with --cluster N: a cluster of N private nodes, or of N containers of each --broker-image)."""
    if url and images:
        raise UsageError("give either --broker or --broker-image, not both")
    if cluster:
        from .cluster import MAX_NODES

        if not 2 <= cluster <= MAX_NODES:
            raise UsageError(f"--cluster {cluster}: give 2 to {MAX_NODES} nodes (3 is the usual floor for quorum queues)")
        if url:
            raise UsageError("--cluster starts the run's own nodes: give it without --broker (a cluster of your own: "
                             "--broker URL of one of its nodes)")
        if images:
            if len(set(images)) != len(images):
                raise UsageError("a --broker-image is named twice")
            return [BrokerSource("cluster", nodes=cluster, image=image) for image in images]
        return [BrokerSource("cluster", nodes=cluster)]
    if images:
        if len(set(images)) != len(images):
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
        self.overview: dict[str, Any] = {}  # what the management API says of the broker

    def __enter__(self) -> "Broker":
        try:
            sweep_nodes(self._log)  # private nodes killed runs left, by owner record only
            # Created with the signals deferred: from the moment the node's dir exists,
            # `self.managed` holds it, so an interrupt still removes it.
            with deferred_signals():
                if self.source.kind == "node":
                    self.managed = EmbeddedBroker(self._log, tls=self.tls)
                elif self.source.kind == "cluster":
                    from .cluster import NodeCluster

                    self.managed = NodeCluster(self.source.nodes, self._log, tls=self.tls, image=self.source.image,
                                               run_id=self.run_id, index=self.index)
                elif self.source.kind == "image":
                    from .container import ContainerBroker

                    assert self.source.image
                    self.managed = ContainerBroker(self.source.image, self._log, self.run_id, self.index, tls=self.tls)
            if self.managed is not None:
                self.endpoint = self.managed.start()
            assert self.endpoint is not None
            check_broker(self.endpoint, self._log)
            self.overview = self.endpoint.management().overview() or {}
            product = self.overview.get("product_name") or "RabbitMQ"
            version = self.overview.get("product_version") or self.overview.get("rabbitmq_version") or "(version unknown)"
            self._log(f"broker: {product} {version} (Erlang {self.overview.get('erlang_version')}) from {self.source.describe()}")
        except BaseException:
            self.close(reraise=False)
            raise
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        # With an exception on its way (RunInterrupted carrying the results), a signal during
        # the stop is recorded, not raised over it.
        self.close(reraise=exc_type is None)

    def cluster(self) -> Any:
        """The managed cluster (broker/cluster.py: its node faults), or None."""
        return self.managed if self.source.kind == "cluster" else None

    def control(self) -> Any:
        """The managed broker's queue holder (broker/control.py); a given broker's, from its
        caller; None for a broker given by URL."""
        if self.source.kind == "given":
            return self.source.control
        return self.managed.control() if self.managed is not None else None

    def cpu_s(self) -> float | None:
        """CPU seconds the managed broker's processes used so far (a private node, a
        container: their host processes); None for a broker the harness does not run."""
        pids = getattr(self.managed, "pids", None)
        pids = pids() if pids is not None else [getattr(self.managed, "pid", lambda: None)()]
        if not pids or None in pids:
            return None
        from ..core.proc import process_cpu_s

        seconds = [process_cpu_s(pid) for pid in pids]
        return None if None in seconds else sum(s for s in seconds if s is not None)

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
            elif self.source.kind == "cluster":
                self._log("removing the cluster's containers" if self.source.image else "stopping the cluster's private RabbitMQ nodes")
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
