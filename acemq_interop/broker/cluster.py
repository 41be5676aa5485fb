"""A cluster of RabbitMQ nodes for one run (`--cluster N`), and the faults a scenario puts to
it: a node stopped (clean), killed (SIGKILL), started again, all restarted in turn.

Each node is a private node (broker/node.py): its own name, loopback ports and data dir; or,
with `--broker-image IMAGE`, a container of that image (broker/container.py: host
networking, ports of its own, one epmd the nodes share in a container of its own, one Erlang
cookie made for the run). The first boots alone; the others boot with it as their classic peer-discovery seed and join it
on their first boot (no `rabbitmqctl join_cluster`: each call of the CLI starts an Erlang VM,
seconds on a loaded 2-core machine). A node restarted later finds its cluster in its own
data. The nodes are named A, B, C... in scenarios and in the cells' timelines.

A node the cluster took down on purpose is not a lost broker: `lost()` names only a node whose
VM exited when nothing stopped it. Every fault waits, bounded, for what it provokes (a node
gone from the cluster's running list, back in it with its quorum queues' members online),
so a scenario's next step starts from a known cluster.
"""
from __future__ import annotations

import secrets
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..amqp.tls import Certificates
from ..core.errors import BrokerError
from .endpoint import BrokerEndpoint
from .node import EmbeddedBroker

LETTERS = "ABCDEFGHI"
MAX_NODES = len(LETTERS)
MEMBERS_BOUND_S = 90.0  # a node joining, or back after a restart, on a loaded machine
POLL_S = 0.25
ERLANG_PROCESSES = frozenset({"beam.smp", "erl_child_setup", "inet_gethost", "epmd"})


def letter(index: int) -> str:
    return LETTERS[index]


class NodeCluster:
    """N private nodes joined into one cluster; the run's broker when `--cluster N`."""

    def __init__(self, size: int, progress: Callable[[str], None], tls: Certificates | None = None,
                 image: str | None = None, run_id: str = "", index: int = 0):
        if not 2 <= size <= MAX_NODES:
            raise BrokerError(f"a cluster has 2 to {MAX_NODES} nodes, not {size}")
        self._progress = progress
        self.image = image
        self._epmd: Any = None  # the nodes' shared epmd, for a cluster of containers
        self.nodes: list[Any]
        if image is None:
            first = EmbeddedBroker(progress, tls=tls)
            self.nodes = [first] + [EmbeddedBroker(progress, tls=tls, seed=first.node) for _ in range(size - 1)]
        else:
            from .container import ContainerBroker, EpmdContainer, Membership

            self._epmd = EpmdContainer(image, progress, run_id, index)
            cookie = secrets.token_hex(20)
            self.nodes = []
            for i in range(size):
                member = Membership(letter(i), self._epmd.port, cookie, self.nodes[0].node if self.nodes else None)
                self.nodes.append(ContainerBroker(image, progress, run_id, index, tls=tls, member=member))
        self.endpoint = replace(self.nodes[0].endpoint, nodes=tuple(n.endpoint for n in self.nodes))
        self.down: set[int] = set()  # nodes taken down on purpose, by index
        self._lock = threading.Lock()  # one fault at a time

    @property
    def size(self) -> int:
        return len(self.nodes)

    def start(self) -> BrokerEndpoint:
        started = time.monotonic()
        what = f"containers of {self.image}" if self.image else "private RabbitMQ nodes"
        self._progress(f"starting a cluster of {self.size} {what} ({', '.join(n.node for n in self.nodes)})")
        if self._epmd is not None:
            self._epmd.start()
        self.nodes[0].start()
        for node in self.nodes[1:]:  # together: their boots overlap
            node.launch()
        for node in self.nodes[1:]:
            node.await_ready()
        self.await_running(set(range(self.size)))
        self._progress(f"cluster of {self.size} nodes ready in {time.monotonic() - started:.1f}s")
        return self.endpoint

    # -- what the cluster says of itself ------------------------------------------------

    def running(self) -> set[str]:
        """The nodes the cluster lists as running (asked of any node that answers)."""
        rows = self.endpoint.management().nodes()
        return {str(r.get("name")) for r in rows if r.get("running")}

    def await_running(self, wanted: set[int], bound_s: float = MEMBERS_BOUND_S) -> None:
        """Until exactly the nodes `wanted` (by index) are listed running, within the bound."""
        names = {self.nodes[i].node for i in wanted}
        deadline = time.monotonic() + bound_s
        seen: set[str] = set()
        while time.monotonic() < deadline:
            try:
                seen = self.running() & {n.node for n in self.nodes}
            except BrokerError:
                seen = set()
            if seen == names:
                return
            time.sleep(POLL_S)  # a poll with a bound: the cluster's membership view
        raise BrokerError(f"the cluster did not list {sorted(names)} as its running nodes within {bound_s:.0f}s "
                          f"(it listed {sorted(seen)})")

    def await_queues_online(self, vhost: str, bound_s: float = MEMBERS_BOUND_S) -> None:
        """Until every quorum queue of `vhost` has all its members online (a restarted node's
        replicas caught up): restarting the next node before that could take a majority away."""
        management = self.endpoint.management()
        deadline = time.monotonic() + bound_s
        behind: list[str] = []
        while time.monotonic() < deadline:
            try:
                behind = [str(q.get("name")) for q in management.quorum_members(vhost)
                          if set(q.get("members") or []) - set(q.get("online") or [])]
            except BrokerError:
                behind = ["(the management API did not answer)"]
            if not behind:
                return
            time.sleep(POLL_S)  # a poll with a bound: replicas rejoining
        raise BrokerError(f"quorum queues {', '.join(behind[:5])} did not have every member online within {bound_s:.0f}s")

    def leader_of(self, vhost: str, queue: str) -> int:
        """The index of the node leading `queue` (a quorum queue's leader, a classic queue's node)."""
        info = self.endpoint.management().queue_node(vhost, queue)
        for index, node in enumerate(self.nodes):
            if node.node == info:
                return index
        raise BrokerError(f"queue {queue} is on no node of the cluster (the broker says {info!r})")

    def move_leader(self, vhost: str, queue: str, to: int, bound_s: float = MEMBERS_BOUND_S) -> None:
        """Moves quorum queue `queue`'s leadership to node `to` (index), as maintenance mode
        does (`rabbit_quorum_queue:transfer_leadership`, through `rabbitmqctl eval` on that
        node), and waits until the broker names it the leader. No connection is closed."""
        from .control import move_leader_expr

        with self._lock:
            target = self.nodes[to]
            what = f"moving the leadership of queue {queue} to node {letter(to)}"
            out = target.control().eval(move_leader_expr(vhost, queue, target.node), what)
            if "undef" in out:
                raise BrokerError(f"{what}: this broker version has no rabbit_quorum_queue:transfer_leadership/2 ({out[:200]})")
            if not out.startswith("{migrated,"):
                raise BrokerError(f"{what}: the broker answered {out[:300]!r}")
            deadline = time.monotonic() + bound_s
            while self.leader_of(vhost, queue) != to:
                if time.monotonic() > deadline:
                    raise BrokerError(f"{what}: the broker said migrated, and its management API did not name "
                                      f"{letter(to)} the leader within {bound_s:.0f}s")
                time.sleep(POLL_S)  # a poll with a bound: the management API's view of the new leader

    # -- faults ------------------------------------------------------------------------

    @staticmethod
    def _reap() -> None:
        """Collect the exit of a stopped node's Erlang processes where they became the harness's
        children (it adopts orphans while its peers run: core/containment.py); never a peer's,
        whose exit its own process object collects."""
        import os

        from ..core.containment import Proc, reap
        from ..core.proc import scan

        def erlang(pid: int) -> bool:
            try:
                return Path(f"/proc/{pid}/comm").read_text().strip() in ERLANG_PROCESSES
            except OSError:
                return False

        me = os.getpid()
        reap(Proc.of(stat) for stat in scan().values() if stat.ppid == me and stat.zombie and erlang(stat.pid))

    def stop_node(self, index: int) -> None:
        """Stops a node cleanly (rabbitmqctl stop) and waits until the others see it gone."""
        with self._lock:
            self.down.add(index)  # first: from here its exit is the scenario's doing
            self.nodes[index].stop_vm()
            self._reap()
            self.await_running(set(range(self.size)) - self.down)

    def kill_node(self, index: int) -> None:
        """SIGKILLs a node's VM and waits until the others see it gone."""
        with self._lock:
            self.down.add(index)
            self.nodes[index].kill_vm()
            self._reap()
            self.await_running(set(range(self.size)) - self.down)

    def start_node(self, index: int, vhost: str | None = None) -> None:
        """Starts a node taken down, waits until the cluster lists it running and, given a
        vhost, until its quorum queues' members are online again."""
        with self._lock:
            if index not in self.down:
                return
            node = self.nodes[index]
            node.launch()
            node.await_ready()
            self.await_running(set(range(self.size)) - (self.down - {index}))
            self.down.discard(index)
            if vhost is not None:
                self.await_queues_online(vhost)

    def restore(self, vhost: str | None = None) -> list[str]:
        """Starts every node taken down (a cell's end); the letters of those started."""
        started = []
        for index in sorted(self.down):
            self.start_node(index, vhost)
            started.append(letter(index))
        return started

    # -- the run's broker ------------------------------------------------------------------

    def lost(self) -> str | None:
        """Why the cluster is lost: a node that exited when nothing stopped it."""
        for index, node in enumerate(self.nodes):
            if index in self.down:
                continue
            gone = node.lost()
            if gone:
                return f"node {letter(index)} of the cluster: {gone}"
        return None

    def pids(self) -> list[int]:
        return [pid for pid in (node.pid() for node in self.nodes) if pid is not None]

    def pid(self) -> int | None:
        return self.nodes[0].pid()

    def control(self) -> Any:
        return self.nodes[0].control()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        if self._epmd is not None:
            self._epmd.stop()
