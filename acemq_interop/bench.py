"""`acemq-interop bench`: speed and memory figures per requester x responder pair.

Figures, not pass/fail: round-trip latency (p50, p99) over sequential requests as the
requester's binding measures it, throughput of a burst of concurrent requests as the
harness sees it, and each peer process's start-up time and resident memory.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .broker import BrokerEndpoint, run_vhost
from .errors import PeerError
from .manifests import Manifest, PeerSpec
from .peer_client import PeerClient
from .runner import build_peer


@dataclass
class PairFigures:
    requester: str
    responder: str
    p50_ms: float
    p99_ms: float
    burst: int
    burst_per_s: float


def rss_mib(pid: int) -> float | None:
    """Resident memory of a process, from /proc (None where there is no /proc)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure_pair(requester: PeerClient, responder: PeerClient, tag: str, sequential: int, burst: int) -> PairFigures:
    queue, r, q = f"{tag}.bench", f"{tag}.r", f"{tag}.q"
    responder.start_responder(r, queue, {"reply": "echo"})
    try:
        requester.open_requester(q)
        latencies = []
        for _ in range(sequential):
            done = requester.request(q, "", queue, {"sku": "A-1"}, 10000).wait(30)
            if done.get("outcome") != "reply":
                raise PeerError(f"bench request ended with {done.get('outcome') or done.get('error')}")
            latencies.append(float(done["elapsed_ms"]))
        started = time.monotonic()
        calls = [requester.request(q, "", queue, {"sku": "A-1"}, 10000) for _ in range(burst)]
        for call in calls:
            call.wait(60)
        took = time.monotonic() - started
        requester.close_requester(q, check=False)
    finally:
        responder.stop_responder(r, check=False)
    return PairFigures(requester.name, responder.name, statistics.median(latencies),
                       _percentile(latencies, 0.99), burst, burst / took)


def bench(manifests: dict[str, Manifest], specs: list[PeerSpec], endpoint: BrokerEndpoint | None,
          sequential: int, burst: int, log: Callable[[str], None]) -> None:
    with run_vhost(endpoint, log) as (endpoint, _, vhost):
        _bench(manifests, specs, endpoint.amqp_url(vhost), sequential, burst, log)


def _bench(manifests: dict[str, Manifest], specs: list[PeerSpec], amqp_url: str, sequential: int, burst: int,
           log: Callable[[str], None]) -> None:
    processes: dict[str, PeerClient] = {}
    try:
        names = sorted({s.name for s in specs})
        for name in names:
            build_peer(manifests[name], log)
        for name in names:
            processes[name] = PeerClient.launch(manifests[name], Path(tempfile.mkdtemp(prefix="acemq-bench-")))
            processes[name].handshake(amqp_url)
        idle = {n: rss_mib(p.pid) for n, p in processes.items()}
        figures = []
        for i, (a, b) in enumerate((a, b) for a in names for b in names):
            figures.append(measure_pair(processes[a], processes[b], f"b{i:03d}", sequential, burst))
            log(f"measured {a} -> {b}")
        print(f"\nRound trips: {sequential} sequential (latency as the requester's binding measures it), then {burst} at once")
        print(f"{'requester':<10} {'responder':<10} {'p50 ms':>8} {'p99 ms':>8} {'burst req/s':>12}")
        for f in figures:
            print(f"{f.requester:<10} {f.responder:<10} {f.p50_ms:>8.1f} {f.p99_ms:>8.1f} {f.burst_per_s:>12.0f}")
        print(f"\n{'peer':<10} {'start-up s':>10} {'RSS idle MiB':>13} {'RSS after MiB':>14}")
        for name, process in processes.items():
            after = rss_mib(process.pid)
            print(f"{name:<10} {process.startup_s:>10.2f} {idle[name] or 0:>13.1f} {after or 0:>14.1f}")
    finally:
        for process in processes.values():
            process.shutdown()
