"""`acemq-interop merge SHARD.json... --out DIR`: the shards of one run made one run again.

Shards merge only when they are shards of the same thing: the same suite version and
commit, the same selection (peers, scenarios, diagonal, cells, number of shards), each
shard given once. The merged result is rebuilt as a `model.RunResult`, so every report is
the same as for a run that was never split.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from . import presumptions
from .files import broker_from_record, cell_from_record, peer_from_record, read_results
from .model import BrokerInfo, CellResult, PeerStatus, RunResult


def merge(shards: list[tuple[str, dict[str, Any]]]) -> RunResult:
    if not shards:
        raise UsageError("merge: give the results.json of every shard")
    first_name, first = shards[0]
    seen: dict[str, str] = {}
    for name, data in shards:
        for key in ("suite", "selection"):
            if data.get(key) != first.get(key):
                raise UsageError(f"merge: {name} and {first_name} differ in {key} ({data.get(key)!r} vs "
                                 f"{first.get(key)!r}): they are not shards of one run")
        shard = data.get("shard")
        if shard is None:
            raise UsageError(f"merge: {name} is not a shard (it was run without --shard)")
        if shard in seen:
            raise UsageError(f"merge: shard {shard} is given twice ({seen[shard]} and {name})")
        seen[shard] = name
    total = int(first["selection"].get("shards") or 1)
    missing = [f"{k}/{total}" for k in range(1, total + 1) if f"{k}/{total}" not in seen]
    if missing:
        raise UsageError(f"merge: shard(s) {', '.join(missing)} missing; a merge of part of a run would hide cells")
    cells: list[CellResult] = []
    ids: set[tuple[str, str]] = set()
    for name, data in shards:
        for record in data["cells"]:
            key = (record["id"], record.get("broker") or "")
            if key in ids:
                raise UsageError(f"merge: cell {record['id']} is in more than one shard ({name})")
            ids.add(key)
            cells.append(cell_from_record(record))
    # A presumption proven in another shard is applied as the unsplit run would apply it: a
    # failure seen through a presumed clause the same peer broke in a cell of any shard.
    # (A renamed cell keeps the status its shard gave it: FAIL, or XFAIL where it is listed.)
    # Per broker of the axis, as a run applies them to each broker's cells.
    assumes = {sid: tuple(clauses) for sid, clauses in (first["selection"].get("assumes") or {}).items()}
    if assumes:
        cells = [c for broker in dict.fromkeys(c.broker for c in cells)
                 for c in presumptions.apply([c for c in cells if c.broker == broker], assumes)]
    order = {sid: i for i, sid in enumerate(first["selection"].get("scenarios") or [])}
    cells.sort(key=lambda c: (order.get(c.scenario, len(order)), c.broker, c.id))
    peers: dict[str, PeerStatus] = {}
    brokers: dict[str, BrokerInfo] = {}
    for _, data in shards:
        for pname, p in (data.get("peers") or {}).items():
            if pname not in peers or (peers[pname].unavailable and not p.get("unavailable")):
                peers[pname] = peer_from_record(pname, p)
        for b in data.get("brokers") or []:
            brokers.setdefault(b["label"], broker_from_record(b))
    meta = {
        "suite": first.get("suite"), "command": ["acemq-interop", "merge", *[n for n, _ in shards]],
        "started_at": min(d.get("started_at") or "" for _, d in shards), "finished_at": max(d.get("finished_at") or "" for _, d in shards),
        "cells_s": round(sum(float(d.get("cells_s") or 0) for _, d in shards), 1),
        "selection": first.get("selection"), "shard": None, "merged_from": sorted(seen),
        # A shard cut short (broker lost, interrupted) leaves the merged run cut short too.
        "aborted": "; ".join(f"shard {d.get('shard')}: {d['aborted']}" for _, d in shards if d.get("aborted")) or None,
    }
    duration = max(float(d.get("duration_s") or 0) for _, d in shards)
    return RunResult(cells, peers, list(first["selection"].get("peers") or []), list(brokers.values()), duration,
                     str(meta["started_at"]), "", "", meta)


def merge_files(paths: list[Path]) -> RunResult:
    return merge([(str(p), read_results(p)) for p in paths])
