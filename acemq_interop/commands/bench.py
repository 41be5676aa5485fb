"""`acemq-interop bench`: each binding's real request/reply rate, measured inside the peer.

Figures, not pass/fail. The harness only sets the load up: every figure comes from the
protocol's `load` op, which a peer runs with its own binding (`client: binding`) or with its
bare AMQP client library (`client: raw`, no acemq code), so a binding is measured against
the best its own client does on the same broker. Per peer:

- binding:   the binding's requester against the same peer's raw echo responder, so the
             figure is the requester binding's and nothing else's;
- raw:       the bare client against the same peer's raw echo responder (the physical limit);
- binding responder: the bare client against the binding's responder, asked for no events
             (protocol 4's `events: false`: the harness reads none, so the figure is the
             binding's; an older peer still writes them, and they are part of its figure);
- per-request queue: the binding with the `queue-per-request` mutant (a reply queue declared
  per call), against the raw responder: the seed's claim, per language;

and per pair, requester peer x responder peer, both bindings. Start-up time and resident
memory before and after come from the harness's view of each peer process.
"""
from __future__ import annotations

import json
import math
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
import argparse

from ..broker.endpoint import BrokerEndpoint
from ..broker.lifecycle import Broker, BrokerSource
from ..broker.vhost import run_vhost
from ..core.errors import PeerError, UsageError
from ..peers.manifests import Manifest, PeerSpec
from ..peers.client import PeerClient
from ..peers.builds import build_peer
from ..peers.manifests import discover, parse_peer_list
from ..broker.endpoint import parse_broker_url
from .common import EXIT_OK, log, peer_dirs

BENCH_SCHEMA_VERSION = 1
SEED_MUTANT = "queue-per-request"


@dataclass
class BenchSettings:
    requests: int = 2000
    in_flight: int = 64
    body_bytes: int = 256
    warmup: int = 200
    pair_requests: int = 1000
    seed_requests: int = 300
    timeout_ms: int = 10000
    pairs: bool = True


@dataclass
class Load:
    """One `load` answer, as the peer measured it."""

    client: str
    requests: int
    completed: int
    errors: int
    timeouts: int
    duration_ms: float
    rate_per_s: float
    latency_us: dict[str, float]
    error_samples: list[str] = field(default_factory=list)

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> "Load":
        data = answer["load"]
        return cls(data["client"], data["requests"], data["completed"], data["errors"], data["timeouts"],
                   float(data["duration_ms"]), float(data["rate_per_s"]),
                   {k: float(v) for k, v in data["latency_us"].items()}, list(data.get("error_samples") or []))


@dataclass
class PeerFigures:
    peer: str
    binding: str
    client: str
    protocol: int
    startup_s: float
    rss_idle_mib: float | None
    rss_after_mib: float | None
    binding_load: Load | None = None
    raw_load: Load | None = None
    per_request_load: Load | None = None
    responder_load: Load | None = None
    note: str = ""

    @property
    def binding_over_raw(self) -> float | None:
        if self.binding_load and self.raw_load and self.raw_load.rate_per_s > 0:
            return self.binding_load.rate_per_s / self.raw_load.rate_per_s
        return None

    @property
    def responder_over_raw(self) -> float | None:
        if self.responder_load and self.raw_load and self.raw_load.rate_per_s > 0:
            return self.responder_load.rate_per_s / self.raw_load.rate_per_s
        return None

    @property
    def shared_over_per_request(self) -> float | None:
        if self.binding_load and self.per_request_load and self.per_request_load.rate_per_s > 0:
            return self.binding_load.rate_per_s / self.per_request_load.rate_per_s
        return None


@dataclass
class PairFigures:
    requester: str
    responder: str
    load: Load | None
    note: str = ""


def rss_mib(pid: int) -> float | None:
    """Resident memory of a process and its children (a wrapper script's JVM), from /proc."""
    total, found = 0, False
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    found = True
        except OSError:
            continue
    return total / 1024 if found else None


def _children(pid: int) -> list[int]:
    try:
        kids = [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in _children(k)]


def machine_facts() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": cpu, "memory_gib": mem_gib, "kernel": platform.release(),
            "python": platform.python_version()}


class _Session:
    """The peers of one bench, on one vhost; every responder it starts is stopped."""

    def __init__(self, processes: dict[str, PeerClient], settings: BenchSettings, log: Callable[[str], None]):
        self.processes = processes
        self.settings = settings
        self.log = log
        self._counter = 0

    def _name(self, what: str) -> str:
        self._counter += 1
        return f"b{self._counter:03d}.{what}"

    def load(self, requester: PeerClient, responder: PeerClient, client: str, requests: int,
             mutant: str | None = None, responder_client: str | None = None) -> Load:
        s = self.settings
        queue, rname = self._name("requests"), self._name("r")
        responder.start_responder(rname, queue, {"reply": "echo"}, client=responder_client or client, events=False)
        try:
            # Bounded: every request has its own timeout; the whole load cannot take longer
            # than its requests run one after another at that timeout, and never more than 10 min.
            warmup = s.warmup if not mutant else min(s.warmup, 20)
            bound = min(600.0, 30.0 + (requests + warmup) * s.timeout_ms / 1000 / max(1, s.in_flight))
            answer = requester.load("", queue, requests, s.in_flight, s.body_bytes, s.timeout_ms, warmup, client,
                                    mutant=mutant, bound_s=bound)
            return Load.from_answer({"load": answer})
        finally:
            responder.stop_responder(rname, check=False)


def run_bench(manifests: dict[str, Manifest], specs: list[PeerSpec], endpoint: BrokerEndpoint | None,
              settings: BenchSettings, out: Path, log: Callable[[str], None], compare: Path | None = None) -> dict[str, Any]:
    if settings.requests < 1 or settings.in_flight < 1 or settings.pair_requests < 1 or settings.seed_requests < 1:
        raise UsageError("--requests, --in-flight, --pair-requests and --seed-requests must be at least 1")
    old = _read_old(compare) if compare else None
    source = BrokerSource.given(endpoint) if endpoint is not None else BrokerSource("node")
    with Broker(source, log) as broker, run_vhost(broker.endpoint, log, checked=True) as (endpoint, management, vhost):
        facts = _broker_facts(management)
        result = _bench(manifests, specs, endpoint.amqp_url(vhost), settings, log)
    result["broker"] = facts
    out.mkdir(parents=True, exist_ok=True)
    path = out / "bench.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print_bench(result)
    if old is not None:
        print_comparison(old, result)
    print(f"Wrote {path}")
    return result


def _read_old(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read a bench.json to compare with: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != BENCH_SCHEMA_VERSION:
        raise UsageError(f"{path}: not a bench.json of schema version {BENCH_SCHEMA_VERSION}")
    return data


def _broker_facts(management: Any) -> dict[str, Any]:
    try:
        overview = management.overview()
    except Exception as exc:  # figures still matter without the broker's version
        return {"error": str(exc)}
    return {"product": overview.get("product_name", "RabbitMQ"),
            "version": overview.get("product_version") or overview.get("rabbitmq_version"),
            "erlang": overview.get("erlang_version")}


def _bench(manifests: dict[str, Manifest], specs: list[PeerSpec], amqp_url: str, settings: BenchSettings,
           log: Callable[[str], None]) -> dict[str, Any]:
    processes: dict[str, PeerClient] = {}
    started = time.monotonic()
    try:
        names = sorted({s.name for s in specs})
        for name in names:
            _, failure = build_peer(manifests[name], log)
            if failure:
                raise PeerError(f"{name}: {failure}")
        for name in names:
            # A bench keeps its peers busy on purpose: their CPU share is not held (a peer past
            # it would run at the lowest priority, and its figures would be the machine's).
            manifest = replace(manifests[name], limits=replace(manifests[name].limits, cpu_share=math.inf))
            processes[name] = PeerClient.launch(manifest, Path(tempfile.mkdtemp(prefix=f"acemq-bench-{name}-")))
            processes[name].handshake(amqp_url)
        session = _Session(processes, settings, log)
        peers: list[PeerFigures] = []
        for name in names:
            p = processes[name]
            figures = PeerFigures(name, str(p.hello.get("binding", "")), str(p.hello.get("client", "")), p.protocol,
                                  round(p.startup_s, 3), rss_mib(p.pid), None)
            if "load" not in p.capabilities():
                figures.note = f"no load op (protocol {p.protocol})"
            else:
                log(f"bench {name}: binding, {settings.requests} requests, {settings.in_flight} in flight")
                figures.binding_load = session.load(p, p, "binding", settings.requests, responder_client="raw")
                log(f"bench {name}: raw client")
                figures.raw_load = session.load(p, p, "raw", settings.requests)
                log(f"bench {name}: the binding's responder, driven by the raw client")
                figures.responder_load = session.load(p, p, "raw", settings.requests, responder_client="binding")
                if SEED_MUTANT in (p.hello.get("mutants") or []):
                    log(f"bench {name}: a reply queue per request ({settings.seed_requests} requests)")
                    figures.per_request_load = session.load(p, p, "binding", settings.seed_requests, mutant=SEED_MUTANT,
                                                            responder_client="raw")
            figures.rss_after_mib = rss_mib(p.pid)
            peers.append(figures)
        pairs: list[PairFigures] = []
        if settings.pairs:
            for a in names:
                for b in names:
                    pa, pb = processes[a], processes[b]
                    if "load" not in pa.capabilities():
                        pairs.append(PairFigures(a, b, None, f"{a} has no load op"))
                        continue
                    log(f"bench pair {a} -> {b}")
                    pairs.append(PairFigures(a, b, session.load(pa, pb, "binding", settings.pair_requests)))
        for f in peers:
            f.rss_after_mib = rss_mib(processes[f.peer].pid)
    finally:
        for process in processes.values():
            process.shutdown()
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "took_s": round(time.monotonic() - started, 1),
        "settings": asdict(settings),
        "machine": machine_facts(),
        "peers": [_peer_json(f) for f in peers],
        "pairs": [{"requester": p.requester, "responder": p.responder, "load": asdict(p.load) if p.load else None,
                   "note": p.note} for p in pairs],
    }


def _peer_json(f: PeerFigures) -> dict[str, Any]:
    return {
        "peer": f.peer, "binding_name": f.binding, "client": f.client, "protocol": f.protocol,
        "startup_s": f.startup_s,
        "rss_idle_mib": None if f.rss_idle_mib is None else round(f.rss_idle_mib, 1),
        "rss_after_mib": None if f.rss_after_mib is None else round(f.rss_after_mib, 1),
        "binding": asdict(f.binding_load) if f.binding_load else None,
        "raw": asdict(f.raw_load) if f.raw_load else None,
        "per_request_queue": asdict(f.per_request_load) if f.per_request_load else None,
        "binding_responder": asdict(f.responder_load) if f.responder_load else None,
        "responder_over_raw": None if f.responder_over_raw is None else round(f.responder_over_raw, 3),
        "binding_over_raw": None if f.binding_over_raw is None else round(f.binding_over_raw, 3),
        "shared_over_per_request": None if f.shared_over_per_request is None else round(f.shared_over_per_request, 2),
        "note": f.note,
    }


def _rate(load: dict[str, Any] | None) -> str:
    return f"{load['rate_per_s']:,.0f}" if load else "-"


def _ms(load: dict[str, Any] | None, key: str) -> str:
    return f"{load['latency_us'][key] / 1000:.1f}" if load else "-"


def print_bench(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    import sys

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    s = result["settings"]
    b = result.get("broker", {})
    table = Table(title=f"Request/reply rate inside each peer: {s['requests']} requests, {s['in_flight']} in flight, "
                        f"{s['body_bytes']} B bodies ({b.get('product', '?')} {b.get('version', '?')})")
    for col in ("peer", "binding requester req/s", "raw client req/s", "binding/raw", "p50 ms", "p99 ms",
                "binding responder req/s", "responder/raw", "queue per request req/s", "shared/per-request", "start-up s",
                "RSS MiB idle -> after"):
        table.add_column(col, justify="left" if col == "peer" else "right")
    for p in result["peers"]:
        ratio = f"{p['binding_over_raw']:.2f}" if p["binding_over_raw"] is not None else "-"
        seed = f"{p['shared_over_per_request']:.1f}x" if p["shared_over_per_request"] is not None else "-"
        rss = f"{p['rss_idle_mib'] or 0:.0f} -> {p['rss_after_mib'] or 0:.0f}"
        resp = f"{p['responder_over_raw']:.2f}" if p.get("responder_over_raw") is not None else "-"
        table.add_row(p["peer"], _rate(p["binding"]), _rate(p["raw"]), ratio, _ms(p["binding"], "p50"),
                      _ms(p["binding"], "p99"), _rate(p.get("binding_responder")), resp, _rate(p["per_request_queue"]), seed,
                      f"{p['startup_s']:.2f}", rss)
    console.print(table)
    for p in result["peers"]:
        if p["note"]:
            console.print(f"  {p['peer']}: {p['note']}")
    if result["pairs"]:
        names = sorted({p["requester"] for p in result["pairs"]} | {p["responder"] for p in result["pairs"]})
        grid = Table(title=f"Pairs: requester (row) x responder (column), binding req/s ({s['pair_requests']} requests)")
        grid.add_column("requester \\ responder")
        for n in names:
            grid.add_column(n, justify="right")
        by = {(p["requester"], p["responder"]): p for p in result["pairs"]}
        for a in names:
            grid.add_row(a, *[_rate(by[(a, c)]["load"]) if (a, c) in by else "-" for c in names])
        console.print(grid)
    m = result["machine"]
    console.print(f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, kernel {m['kernel']}; took {result['took_s']}s")


def print_comparison(old: dict[str, Any], new: dict[str, Any]) -> None:
    """The change per figure, old -> new, for peers in both files."""
    print("\nChange against the earlier bench.json (old -> new):")
    before = {p["peer"]: p for p in old.get("peers", [])}
    for p in new["peers"]:
        o = before.get(p["peer"])
        if o is None:
            print(f"  {p['peer']}: new in this bench")
            continue
        for label, key in (("binding req/s", "binding"), ("raw req/s", "raw"), ("responder req/s", "binding_responder"),
                           ("per-request req/s", "per_request_queue")):
            if o.get(key) and p.get(key):
                a, b = o[key]["rate_per_s"], p[key]["rate_per_s"]
                print(f"  {p['peer']:<8} {label:<18} {a:>10,.0f} -> {b:>10,.0f}  ({(b - a) / a * 100 if a else 0:+.0f}%)")
        if o.get("binding") and p.get("binding"):
            a, b = o["binding"]["latency_us"]["p99"], p["binding"]["latency_us"]["p99"]
            print(f"  {p['peer']:<8} {'p99 ms':<18} {a / 1000:>10.1f} -> {b / 1000:>10.1f}  ({(b - a) / a * 100 if a else 0:+.0f}%)")


def cmd_bench(args: argparse.Namespace) -> int:
    manifests = discover(extra=peer_dirs(args))
    specs = parse_peer_list(args.peers, manifests) if args.peers else parse_peer_list(",".join(sorted(manifests)), manifests)
    endpoint = parse_broker_url(args.broker, args.management_url) if args.broker else None
    settings = BenchSettings(requests=args.requests, in_flight=args.in_flight, body_bytes=args.body_bytes,
                             warmup=args.warmup, pair_requests=args.pair_requests, seed_requests=args.seed_requests,
                             pairs=not args.no_pairs)
    run_bench(manifests, specs, endpoint, settings, Path(args.out), log, Path(args.compare) if args.compare else None)
    return EXIT_OK
