"""What a run is asked to do (`RunRequest`, frozen, built once from the flags or by a test)
and what each broker of its axis gives the cells (`BrokerContext`).

The request says nothing of how a broker is reached: that is the broker context's, built by
the session (run/session.py) for each broker in turn, with its endpoint whole (its CA file
travels with it), its facts, its rerun flags and what the harness may do with it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..broker.endpoint import BrokerEndpoint
from ..broker.lifecycle import BrokerSource
from ..peers.manifests import Manifest, PeerSpec
from ..results.model import BrokerInfo
from ..spec.known_failures import KnownFailure
from ..spec.scenarios import Scenario
from .sharding import Shard

if TYPE_CHECKING:
    from ..broker.control import BrokerControl
    from ..peers.builds import Builds

# Cells at once, by the machine: most cells wait on timers the scenarios provoke, so they
# overlap well (longest first) until the CPUs are busy with the peers, the broker and the
# harness. Measured on this project's 2-core machine (full matrix, private node with its data
# in memory, README "Performance"): at 24 cells the CPUs were half idle (55 CPU-s in 54 s),
# at 40 the run took 35 s of cells with every verdict the same as at 1; 20 cells per CPU the
# process may use, never fewer than 8 nor more than 64.
CELLS_PER_CPU = 20
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cpus() -> float:
    """The CPUs this process may use: its affinity, capped by a cgroup v2 CPU quota (a
    container limited to 1.5 CPUs sees every core of the host in its affinity)."""
    try:
        cpus: float = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 2
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max" and int(period) > 0:
            cpus = min(cpus, int(quota) / int(period))
    except (OSError, ValueError):
        pass
    return cpus


def default_concurrency() -> int:
    return max(8, min(64, round(CELLS_PER_CPU * usable_cpus())))


DEFAULT_CONCURRENCY = default_concurrency()


@dataclass(frozen=True)
class RunRequest:
    """Everything a run is asked to do, each part checked before any broker starts."""

    manifests: Mapping[str, Manifest]
    specs: tuple[PeerSpec, ...]
    scenarios: tuple[Scenario, ...]
    known: tuple[KnownFailure, ...] = ()
    brokers: tuple[BrokerSource, ...] = (BrokerSource("node"),)  # the broker axis, one after the other
    concurrency: int = DEFAULT_CONCURRENCY
    build: bool = True
    only_cells: frozenset[str] | None = None
    diagonal: bool = False
    op_bound_s: float = 20.0
    in_docker: bool = False
    out_dir: Path | None = None  # peer logs go to out_dir/logs (a temporary folder without one)
    shard: Shard | None = None
    durations: Mapping[str, float] = field(default_factory=dict)  # cell id -> seconds, from an earlier run
    command: tuple[str, ...] = ()  # the command line, credentials redacted
    rerun_flags: tuple[str, ...] = ()  # flags that shaped the run, repeated in every rerun line
    transcripts: str = "failed"  # failed | all | none: which cells keep the broker's transcript
    tls: bool = False  # the harness's own brokers get a TLS listener on certificates made for the run
    cpu_hog: int = 0  # busy processes beside the run (the stress mode)
    baseline: Mapping[str, Any] | None = None  # an earlier results.json (read when asked: it may be in out_dir)
    profile: bool = False  # where the time goes: CPU of harness, broker and peers, the harness by function, waits
    # run --foreign: the foreign stacks whose cells with an acemq binding are the only ones planned
    interop: frozenset[str] = frozenset()
    log: Callable[[str], None] = print


@dataclass(frozen=True)
class BrokerContext:
    """One broker of the run as its cells see it: reached at `endpoint` (amqps with its CA when
    it is a TLS one), described by `info`, named in rerun lines by `rerun_flags`."""

    endpoint: BrokerEndpoint
    info: BrokerInfo
    run_id: str | None = None  # the label of every container the run starts
    rerun_flags: tuple[str, ...] = ()  # the request's, and how a rerun names this broker
    url: str | None = None  # the --broker URL a rerun reads again (its password never shown)
    log_dir: Path | None = None  # where peer logs go (default: the request's out_dir/logs)
    lost: Callable[[], str | None] | None = None  # certain news of a dead broker the harness runs
    control: "BrokerControl | None" = None  # holding a queue: only on a broker the harness runs
    builds: "Builds | None" = None  # peer builds already under way (started with the broker)
    checked: bool = True  # pre-flight already made (the Broker context does it on start)
    cpu_s: Callable[[], float | None] | None = None  # CPU seconds the broker used so far (one the harness runs)
    cluster: Any = None  # --cluster: the run's NodeCluster (broker/cluster.py), whose nodes the cells' node steps fault
