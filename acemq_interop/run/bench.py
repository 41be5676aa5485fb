"""A bench session: the broker, its vhost, the peers, and every measurement in the order
bench_plan.py gives; what it measured comes back as results/bench.py's BenchResult.

Figures, not pass/fail. The harness only sets the load up: every figure comes from the
protocol's `load` op, which a peer runs with its own binding (`client: binding`) or with its
bare AMQP client library (`client: raw`, no acemq code), so a binding is measured against
the best its own client does on the same broker.

Each peer gets two responders for the whole bench, started before the first measurement:
its raw echo responder, and its binding's responder asked for no events (protocol 4's
`events: false`: the harness reads none, so the figure is the binding's). Every load of
the bench goes to one of them, so no measurement waits on a queue's declaration and every
repetition of a figure measures the same queue.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..broker.lifecycle import Broker, BrokerSource
from ..broker.vhost import run_vhost
from ..core.errors import PeerError
from ..core.machine import busy_cpu_s, load_average, machine_facts, others_share
from ..core.proc import process_cpu_s, resident_mib
from ..core.suite_info import now_iso, suite
from ..peers.builds import build_peer
from ..peers.client import PeerClient
from ..peers.manifests import Manifest
from ..results.bench import BenchResult, BenchSettings, Load, PairBench, PeerBench
from ..results.model import BrokerInfo
from .bench_plan import PAIR, Measure, pair_rounds, peer_rounds

SEED_MUTANT = "queue-per-request"
LOAD_CAPABILITY = "load"


@dataclass(frozen=True)
class BenchRequest:
    """What to bench, on which broker; peer logs go to `log_dir`."""

    manifests: dict[str, Manifest]
    peers: list[str]
    broker: BrokerSource
    settings: BenchSettings
    log_dir: Path
    log: Callable[[str], None] = field(default=lambda line: None)


def run_bench(request: BenchRequest) -> BenchResult:
    """Every figure of the request's peers, measured on its broker (started and stopped here
    when it is a private node), in a vhost of the bench's own."""
    request.settings.check()
    started, load_before = time.monotonic(), load_average()
    started_at = now_iso()
    with Broker(request.broker, request.log) as broker, \
            run_vhost(broker.endpoint, request.log, checked=True) as (endpoint, _, vhost):
        info = BrokerInfo.from_overview(broker.overview, tls=endpoint.tls)
        peers, pairs = _measure(request, endpoint.amqp_url(vhost), broker.cpu_s)
    machine = {**machine_facts(), "load_before": load_before, "load_after": load_average()}
    return BenchResult(request.settings, started_at, round(time.monotonic() - started, 1), suite(), machine, info,
                       peers, pairs)


def _measure(request: BenchRequest, amqp_url: str,
             broker_cpu_s: Callable[[], float | None]) -> tuple[list[PeerBench], list[PairBench]]:
    names = sorted(set(request.peers))
    for name in names:
        _, failure = build_peer(request.manifests[name], request.log)
        if failure:
            raise PeerError(f"{name}: {failure}")
    clients: dict[str, PeerClient] = {}
    try:
        figures: dict[str, PeerBench] = {}
        # One after another: each start-up is timed on a machine the others do not share.
        for name in names:
            request.log_dir.mkdir(parents=True, exist_ok=True)
            # A bench keeps its peers busy on purpose: their CPU share is not held (a peer past it
            # would run at the lowest priority, and its figures would be the machine's).
            manifest = replace(request.manifests[name], limits=replace(request.manifests[name].limits, cpu_share=math.inf))
            client = clients[name] = PeerClient.launch(manifest, request.log_dir)
            client.handshake(amqp_url)
            figures[name] = PeerBench(name, str(client.hello.get("binding", "")), str(client.hello.get("client", "")),
                                      client.protocol, round(client.startup_s, 3), resident_mib(client.pid))
        loaders = [n for n in names if LOAD_CAPABILITY in clients[n].capabilities()]
        for name in set(names) - set(loaders):
            figures[name].note = f"no load op (protocol {clients[name].protocol})"
        bench = _Loads({n: clients[n] for n in loaders}, request.settings, request.log, broker_cpu_s)
        try:
            seeded = {n for n in loaders if SEED_MUTANT in (clients[n].hello.get("mutants") or [])}
            for m in peer_rounds(loaders, request.settings.repetitions, seeded):
                figures[m.requester].loads[m.kind].append(bench.measure(m))
            pairs: list[PairBench] = []
            if request.settings.pairs:
                by_pair = {(a, b): PairBench(a, b) for a in loaders for b in loaders}
                for m in pair_rounds(loaders, request.settings.pair_repetitions):
                    load = bench.measure(m)
                    if load is not None:
                        by_pair[(m.requester, m.responder)].loads.append(load)
                pairs = list(by_pair.values())
                pairs += [PairBench(a, b, note=f"{a} has no load op") for a in names if a not in loaders for b in names]
        finally:
            bench.stop()
        for name, refused in bench.refused.items():
            figures[name].note = "; ".join([figures[name].note, *refused]).strip("; ")
        for name in names:
            figures[name].rss_after_mib = resident_mib(clients[name].pid)
        return [figures[n] for n in names], pairs
    finally:
        for client in clients.values():
            client.shutdown()


class _Loads:
    """The peers of one bench with their two responders each; `measure` runs one `load`."""

    def __init__(self, clients: dict[str, PeerClient], settings: BenchSettings, log: Callable[[str], None],
                 broker_cpu_s: Callable[[], float | None]):
        self.clients, self.settings, self.log = clients, settings, log
        self._broker_cpu_s = broker_cpu_s
        self._started: list[tuple[PeerClient, str]] = []
        self.refused: dict[str, list[str]] = {}  # by requester peer: the loads it refused or failed
        for name, client in clients.items():
            for which in ("raw", "binding"):
                responder = self._responder(name, which)
                client.start_responder(responder, f"{responder}.requests", {"reply": "echo"}, client=which, events=False)
                self._started.append((client, responder))

    @staticmethod
    def _responder(peer: str, client: str) -> str:
        return f"bench.{peer}.{client}"

    def measure(self, m: Measure) -> Load | None:
        """One load's figures; None when the peer refused it or failed (said in `refused`):
        the bench goes on, that repetition has no pair."""
        s = self.settings
        # Whose responder: the raw one isolates the requester; the binding's is what the
        # binding_responder figure and every pair measure.
        responder_client = "binding" if m.kind in ("binding_responder", PAIR) else "raw"
        client = "raw" if m.kind in ("raw", "binding_responder") else "binding"
        mutant = SEED_MUTANT if m.kind == "per_request_queue" else None
        requests = {"per_request_queue": s.seed_requests, PAIR: s.pair_requests}.get(m.kind, s.requests)
        # A queue declared per call is slow: a short warm-up, as long as the others' in time.
        warmup = min(s.warmup, 20) if mutant else s.warmup
        what = f"{m.requester} -> {m.responder}" if m.kind == PAIR else f"{m.requester} {m.kind}"
        self.log(f"bench #{m.repetition + 1} {what}: {requests} requests")
        # Bounded: every request has its own timeout; the whole load cannot take longer than
        # its requests run one after another at that timeout, and never more than 10 min.
        bound = min(600.0, 30.0 + (requests + warmup) * s.timeout_ms / 1000 / max(1, s.in_flight))
        before = self._cpu()
        try:
            answer = self.clients[m.requester].load("", f"{self._responder(m.responder, responder_client)}.requests",
                                                    requests, s.in_flight, s.body_bytes, s.timeout_ms, warmup, client,
                                                    mutant=mutant, bound_s=bound)
        except PeerError as exc:
            self.log(f"bench #{m.repetition + 1} {what}: {exc}")
            self.refused.setdefault(m.requester, []).append(f"{what} #{m.repetition + 1}: {exc}")
            return None
        return replace(Load.from_answer(answer), others_cpu=self._others_since(before))

    def _cpu(self) -> tuple[float, float | None, float | None]:
        """(now, the machine's busy CPU seconds, ours: the broker's, every peer's, the harness's)."""
        parts = [self._broker_cpu_s(), *(process_cpu_s(c.pid) for c in self.clients.values()), time.process_time()]
        ours = None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
        return time.monotonic(), busy_cpu_s(), ours

    def _others_since(self, before: tuple[float, float | None, float | None]) -> float | None:
        """The share of the CPUs others used since `before`: None for a broker the harness
        does not run (its CPU is not ours to count) or where /proc cannot tell."""
        after = self._cpu()
        if before[1] is None or before[2] is None or after[1] is None or after[2] is None:
            return None
        return round(others_share(after[0] - before[0], after[1] - before[1], after[2] - before[2], os.cpu_count() or 1), 3)

    def stop(self) -> None:
        for client, responder in self._started:
            client.stop_responder(responder, check=False)
