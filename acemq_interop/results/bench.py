"""A bench's result: every measurement as the peer made it, the figures derived from them,
and bench.json written and read back (schema in schemas/bench.schema.json).

A peer's four measurements (each repeated; repetition i of every kind is taken in one round):

- `raw`:               its bare client against its own raw echo responder (the physical limit);
- `binding`:           its binding's requester against the same raw echo responder;
- `binding_responder`: the bare client against its binding's responder (asked for no events);
- `per_request_queue`: the binding's requester with the `queue-per-request` mutant (a reply
                       queue declared per call), against the raw responder: the seed's claim.

Each ratio pairs the two measurements of one round (statistics in bench_stats.py).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .bench_stats import DEFAULT_BOUND, SPREAD_NAME, Ratio, Summary, change, judge_ratio, percent, summarize
from .model import BrokerInfo
from .outdir import write_whole

# 2: every figure repeated (`measurements` per kind and repetition), with its median and
# spread (`rates`, `latency_ms`), each ratio the median of its per-pair ratios (`ratios`).
BENCH_SCHEMA_VERSION = 2
KINDS = ("raw", "binding", "binding_responder", "per_request_queue")
# name: (numerator, denominator, what each is called when the ratio is unstable)
RATIOS: dict[str, tuple[str, str, tuple[str, str]]] = {
    "binding_over_raw": ("binding", "raw", ("binding requester", "raw client")),
    "responder_over_raw": ("binding_responder", "raw", ("binding responder", "raw client")),
    "shared_over_per_request": ("binding", "per_request_queue", ("binding requester", "a reply queue per request")),
}
LABELS = {"binding_over_raw": "binding/raw", "responder_over_raw": "responder/raw",
          "shared_over_per_request": "shared/per-request"}


@dataclass(frozen=True)
class BenchSettings:
    """What a bench measures; `bound` is how far a ratio's pairs may spread and still be quoted."""

    requests: int = 2000
    repetitions: int = 5
    in_flight: int = 64
    body_bytes: int = 256
    warmup: int = 200
    pair_requests: int = 1000
    pair_repetitions: int = 3
    seed_requests: int = 300
    timeout_ms: int = 10000
    pairs: bool = True
    bound: float = DEFAULT_BOUND

    def check(self) -> None:
        counts = {"--requests": self.requests, "--repetitions": self.repetitions, "--in-flight": self.in_flight,
                  "--pair-requests": self.pair_requests, "--pair-repetitions": self.pair_repetitions,
                  "--seed-requests": self.seed_requests}
        low = [flag for flag, value in counts.items() if value < 1]
        if low:
            raise UsageError(f"{', '.join(low)} must be at least 1")
        if not 0 < self.bound < 1:
            raise UsageError("--bound is a fraction between 0 and 1 (0.1 is 10%)")


@dataclass(frozen=True)
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
    # The harness's, not the peer's: the share of the machine's CPUs (0 to 1) something other
    # than the broker, the peers and the harness used while it ran (core/machine.py).
    others_cpu: float | None = None

    @classmethod
    def from_answer(cls, data: dict[str, Any]) -> "Load":
        others = data.get("others_cpu")
        return cls(data["client"], data["requests"], data["completed"], data["errors"], data["timeouts"],
                   float(data["duration_ms"]), float(data["rate_per_s"]),
                   {k: float(v) for k, v in data["latency_us"].items()}, list(data.get("error_samples") or []),
                   None if others is None else float(others))

    @property
    def failed(self) -> int:
        return self.errors + self.timeouts


@dataclass
class PeerBench:
    """One peer's measurements: `loads[kind][i]` is repetition i (None: not measured)."""

    peer: str
    binding: str
    client: str
    protocol: int
    startup_s: float
    rss_idle_mib: float | None
    rss_after_mib: float | None = None
    loads: dict[str, list[Load | None]] = field(default_factory=lambda: {k: [] for k in KINDS})
    note: str = ""

    def rates(self, kind: str) -> list[float | None]:
        return [None if load is None else load.rate_per_s for load in self.loads.get(kind, [])]

    def rate(self, kind: str) -> Summary | None:
        measured = [r for r in self.rates(kind) if r is not None]
        return summarize(measured) if measured else None

    def latency_ms(self, kind: str, key: str) -> Summary | None:
        measured = [load.latency_us[key] / 1000 for load in self.loads.get(kind, []) if load is not None]
        return summarize(measured) if measured else None

    def ratio(self, name: str, bound: float) -> Ratio | None:
        numerator, denominator, names = RATIOS[name]
        top, bottom = self.rates(numerator), self.rates(denominator)
        # Pairs are by repetition; a kind cut short (its peer failed) has no pair after its end.
        length = max(len(top), len(bottom))
        return judge_ratio(top + [None] * (length - len(top)), bottom + [None] * (length - len(bottom)), names, bound,
                           self._contention(numerator, denominator))

    def _contention(self, *kinds: str) -> str:
        """How much of the CPUs others took while these kinds were measured: what an unstable
        ratio's spread most often comes from on a shared machine."""
        shares = [load.others_cpu for kind in kinds for load in self.loads.get(kind, [])
                  if load is not None and load.others_cpu is not None]
        if not shares:
            return ""
        return f"others used {percent(min(shares))}-{percent(max(shares))} of the CPUs while they ran"

    def failures(self) -> list[str]:
        """The measurements where requests failed (their rate counts the wait for them)."""
        return [f"{kind} #{i + 1}: {load.errors} errors, {load.timeouts} timeouts"
                + (f" ({load.error_samples[0]})" if load.error_samples else "")
                for kind in KINDS for i, load in enumerate(self.loads.get(kind, [])) if load is not None and load.failed]


@dataclass
class PairBench:
    """A requester peer's binding against a responder peer's binding, repeated."""

    requester: str
    responder: str
    loads: list[Load] = field(default_factory=list)
    note: str = ""

    def rate(self) -> Summary | None:
        return summarize([load.rate_per_s for load in self.loads]) if self.loads else None


@dataclass
class BenchResult:
    settings: BenchSettings
    started_at: str
    took_s: float
    suite: dict[str, Any]
    machine: dict[str, Any]  # core/machine.py's facts, with the load average before and after
    broker: BrokerInfo
    peers: list[PeerBench]
    pairs: list[PairBench]

    def unstable(self) -> list[tuple[str, str, str]]:
        """(peer, ratio name, why) of every ratio that cannot be quoted."""
        found = []
        for p in self.peers:
            for name in RATIOS:
                ratio = p.ratio(name, self.settings.bound)
                if ratio is not None and ratio.unstable:
                    found.append((p.peer, name, ratio.unstable))
        return found


# -- bench.json ----------------------------------------------------------------------------


def _load_record(load: Load | None) -> dict[str, Any] | None:
    return None if load is None else asdict(load)


def _summary(summary: Summary | None, digits: int) -> dict[str, Any] | None:
    return None if summary is None else summary.record(digits)


def _ratio(ratio: Ratio | None) -> dict[str, Any] | None:
    if ratio is None:
        return None
    return {**ratio.summary.record(3), "pairs": [round(r, 3) for r in ratio.pairs], "unstable": ratio.unstable}


def peer_record(p: PeerBench, bound: float) -> dict[str, Any]:
    return {
        "peer": p.peer, "binding_name": p.binding, "client": p.client, "protocol": p.protocol, "startup_s": p.startup_s,
        "rss_idle_mib": None if p.rss_idle_mib is None else round(p.rss_idle_mib, 1),
        "rss_after_mib": None if p.rss_after_mib is None else round(p.rss_after_mib, 1),
        "measurements": {kind: [_load_record(load) for load in p.loads.get(kind, [])] for kind in KINDS},
        "rates": {kind: _summary(p.rate(kind), 1) for kind in KINDS},
        "latency_ms": {kind: {key: _summary(p.latency_ms(kind, key), 2) for key in ("p50", "p99")} for kind in KINDS},
        "ratios": {name: _ratio(p.ratio(name, bound)) for name in RATIOS},
        "failures": p.failures(),
        "note": p.note,
    }


def bench_data(result: BenchResult) -> dict[str, Any]:
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "tool": "acemq-interop",
        "suite": result.suite,
        "started_at": result.started_at,
        "took_s": result.took_s,
        "settings": asdict(result.settings),
        "spread": SPREAD_NAME,
        "machine": result.machine,
        "broker": {"label": result.broker.label, "product": result.broker.product, "version": result.broker.version,
                   "erlang": result.broker.erlang},
        "peers": [peer_record(p, result.settings.bound) for p in result.peers],
        "pairs": [{"requester": p.requester, "responder": p.responder, "loads": [asdict(load) for load in p.loads],
                   "rate": _summary(p.rate(), 1), "note": p.note} for p in result.pairs],
        "unstable": [{"peer": peer, "ratio": name, "why": why} for peer, name, why in result.unstable()],
    }


def write_bench(result: BenchResult, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(bench_data(result), indent=2) + "\n"
    return write_whole(out / "bench.json", lambda p: p.write_text(text, encoding="utf-8"))


def bench_from_data(data: dict[str, Any]) -> BenchResult:
    """The inverse of `bench_data`: a bench rebuilt from its bench.json, every view the same."""
    settings = BenchSettings(**{k: v for k, v in data["settings"].items() if k in BenchSettings.__dataclass_fields__})
    peers = []
    for p in data["peers"]:
        peer = PeerBench(p["peer"], p["binding_name"], p["client"], p["protocol"], p["startup_s"], p["rss_idle_mib"],
                         p["rss_after_mib"], note=p.get("note", ""))
        peer.loads = {kind: [None if r is None else Load.from_answer(r) for r in p["measurements"].get(kind, [])]
                      for kind in KINDS}
        peers.append(peer)
    pairs = [PairBench(p["requester"], p["responder"], [Load.from_answer(r) for r in p["loads"]], p.get("note", ""))
             for p in data["pairs"]]
    b = data.get("broker") or {}
    broker = BrokerInfo(b.get("label") or "rabbitmq-unknown", b.get("product"), b.get("version"), b.get("erlang"))
    return BenchResult(settings, data["started_at"], data["took_s"], data.get("suite") or {}, data["machine"], broker,
                       peers, pairs)


def read_bench(path: Path, current: bool = False) -> dict[str, Any]:
    """A bench.json's data (schema version 1 or the current one; only the current one with
    `current`, for `bench_from_data`), or a usage error saying why it is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read a bench.json: {exc}") from exc
    versions = (BENCH_SCHEMA_VERSION,) if current else (1, BENCH_SCHEMA_VERSION)
    if not isinstance(data, dict) or data.get("schema_version") not in versions:
        raise UsageError(f"{path}: not a bench.json of schema version {' or '.join(map(str, versions))}")
    return data


# -- two benches compared ---------------------------------------------------------------------


def quoted_ratios(data: dict[str, Any]) -> dict[tuple[str, str], tuple[float, bool]]:
    """(peer, ratio name) -> (the quoted ratio, whether the bench called it unstable) of a
    bench.json: version 2's median of pairs and its verdict, version 1's one ratio (one
    measurement each: never judged, so never called unstable)."""
    found = {}
    for p in data.get("peers", []):
        for name in RATIOS:
            value = (p.get("ratios") or {}).get(name) if data.get("schema_version", 1) >= 2 else p.get(name)
            unstable = bool(value.get("unstable")) if isinstance(value, dict) else False
            if isinstance(value, dict):
                value = value.get("median")
            if isinstance(value, (int, float)):
                found[(p["peer"], name)] = (float(value), unstable)
    return found


@dataclass(frozen=True)
class RatioChange:
    """One ratio in two benches, and whether each bench called it unstable."""

    peer: str
    ratio: str
    before: float
    after: float
    unstable_before: bool = False
    unstable_after: bool = False

    @property
    def change(self) -> float:
        return change(self.before, self.after)

    @property
    def foretold(self) -> bool:
        """Either bench said this ratio could not be quoted: a disagreement it warned of."""
        return self.unstable_before or self.unstable_after


def compare_ratios(old: dict[str, Any], new: dict[str, Any]) -> list[RatioChange]:
    """Every ratio both bench.json files quote, old and new."""
    before, after = quoted_ratios(old), quoted_ratios(new)
    return [RatioChange(peer, name, before[(peer, name)][0], value, before[(peer, name)][1], unstable)
            for (peer, name), (value, unstable) in after.items() if (peer, name) in before]
