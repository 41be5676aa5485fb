"""`acemq-interop publish RESULTS.json... --site DIR`: a static site from several runs.

One page per run (its report.html, rebuilt from its results.json), an index with one row
per run (suite version, broker and version, date, verdict, counts) and a shields.io
endpoint badge (`badge.json`) for the newest run, plus one per run.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .compare import read_results
from .merge import _cell
from .model import BrokerInfo, PeerStatus, RunResult


def run_of(data: dict[str, Any]) -> RunResult:
    """A RunResult rebuilt from a results.json's data (as `merge` does for shards)."""
    peers: dict[str, PeerStatus] = {}
    for name, p in (data.get("peers") or {}).items():
        hello = {k: p.get(k) for k in ("binding", "client", "protocol", "profiles") if p.get(k) is not None}
        if p.get("mutants"):
            hello["mutants_offered"] = p["mutants"]
        peers[name] = PeerStatus(name, p.get("language", ""), p.get("build_s"), p.get("startup_s"), hello, p.get("unavailable"))
    brokers = [BrokerInfo(b["label"], b.get("product"), b.get("version"), b.get("erlang")) for b in data.get("brokers") or []]
    meta = {k: data.get(k) for k in ("suite", "command", "started_at", "finished_at", "cells_s", "selection", "shard")}
    labels = list((data.get("selection") or {}).get("peers") or [])
    return RunResult([_cell(c) for c in data.get("cells") or []], peers, labels, brokers, float(data.get("duration_s") or 0),
                     str(data.get("started_at") or ""), "", "", meta)


def load_run(path: Path) -> RunResult:
    return run_of(read_results(path))
