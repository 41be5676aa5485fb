"""results.json, written and read back: the one record of a cell and its inverse (schema in
schemas/results.schema.json). merge, publish, compare, flakes and `--baseline` all read it here."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .model import BrokerInfo, COUNT_ORDER, CellResult, Failure, NotEvaluated, PeerStatus, RunResult, Status, mutant_coverage

# 2: a cell lists every clause it broke (`failures`, each with its side and peer) and the
# checks it could not make (`not_evaluated`); `failed_rule` and its neighbours are the first.
# Files of version 1 still load (cell_from_record): their one failure is `failed_rule`.
RESULTS_SCHEMA_VERSION = 2


def cell_record(result: CellResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "scenario": result.scenario,
        "title": result.title,
        "matrix": result.matrix,
        "rules": list(result.rules),
        "clauses": list(result.clauses),
        "roles": dict(result.roles),
        "broker": result.broker,
        "status": result.status.value,
        "duration_s": round(result.duration_s, 3),
        "failed_rule": result.rule,
        "seen_as": result.seen_as,
        "message": result.message,
        "expected": result.expected,
        "observed": result.observed,
        "reason": result.reason,
        "rerun": result.rerun,
        "level": result.level,
        "failures": [f.record() for f in result.failures],
        "not_evaluated": [n.record() for n in result.not_evaluated],
        "trace": result.trace,
        "stderr": result.stderr,
        **({"transcript": result.transcript} if result.transcript is not None else {}),
        **({"transcript_gap": result.transcript_gap} if result.transcript_gap else {}),
    }


def cell_from_record(record: dict[str, Any]) -> CellResult:
    """The inverse of `cell_record`, for every reader of results.json (merge, publish,
    compare, --baseline); a version-1 record's one FAIL becomes its one failure."""
    return CellResult(
        id=record["id"], scenario=record["scenario"], title=record.get("title", ""), matrix=record["matrix"],
        rules=tuple(record.get("rules") or ()), roles=dict(record.get("roles") or {}),
        peers=tuple(_peers_of(record.get("roles") or {})), status=Status(record["status"]),
        broker=record.get("broker") or "", duration_s=float(record.get("duration_s") or 0.0),
        rule=record.get("failed_rule"), message=record.get("message") or "", expected=record.get("expected"),
        observed=record.get("observed"), trace=list(record.get("trace") or []), stderr=dict(record.get("stderr") or {}),
        reason=record.get("reason") or "", rerun=record.get("rerun") or "",
        transcript=record.get("transcript"), transcript_gap=str(record.get("transcript_gap") or ""), clauses=tuple(record.get("clauses") or ()), seen_as=record.get("seen_as"),
        failures=[Failure.from_record(f) for f in record.get("failures") or [] if isinstance(f, dict)],
        not_evaluated=[NotEvaluated.from_record(n) for n in record.get("not_evaluated") or [] if isinstance(n, dict)],
        level=str(record.get("level") or ""),
    )


def _peers_of(roles: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for who in roles.values():
        for label in who if isinstance(who, list) else [who]:
            if label != "probe":
                found.append(label)
    return found


def broken_clauses(record: dict[str, Any]) -> list[str]:
    """Every clause a results.json cell record broke (version 1: its `failed_rule`)."""
    listed = [str(f.get("clause")) for f in record.get("failures") or [] if isinstance(f, dict) and f.get("clause")]
    if listed:
        return list(dict.fromkeys(listed))
    return [record["failed_rule"]] if record.get("failed_rule") else []


def results_data(report: RunResult) -> dict[str, Any]:
    from ..spec.catalogue import mutants

    catalogue_mutants = list(mutants())
    meta = report.meta
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "tool": "acemq-interop",
        "suite": meta.get("suite", {}),
        "command": meta.get("command", []),
        "started_at": meta.get("started_at", report.started_at),
        "finished_at": meta.get("finished_at"),
        "duration_s": round(report.duration_s, 1),
        "cells_s": meta.get("cells_s"),
        "selection": meta.get("selection", {}),
        "shard": meta.get("shard"),
        "broker": report.broker,
        "tls": report.tls,
        "brokers": [{"label": b.label, "product": b.product, "version": b.version, "erlang": b.erlang, "tls": b.tls,
                     "direct_reply_to": b.direct_reply_to}
                    for b in report.brokers],
        "peers": {
            name: {
                "language": s.language,
                "binding": s.hello.get("binding"),
                "client": s.hello.get("client"),
                "protocol": s.hello.get("protocol"),
                "image": (meta.get("images") or {}).get(name),
                "profiles": s.hello.get("profiles"),
                "mutants": s.hello.get("mutants_offered") or (mutant_coverage(s.hello, catalogue_mutants) if s.hello else None),
                "build_s": None if s.build_s is None else round(s.build_s, 2),
                "startup_s": None if s.startup_s is None else round(s.startup_s, 2),
                "unavailable": s.unavailable,
                "foreign": dict(s.foreign) or None,
                "usage": s.usage,
                "limits": s.limits,
            }
            for name, s in report.peers.items()
        },
        "summary": {status.value: report.count(status) for status in COUNT_ORDER},
        # The foreign-interop matrix (results/foreign.py), derived from the cells below.
        "foreign_interop": [{"stack": row.stack, "foreign": row.foreign, "binding": row.binding, "broker": row.broker,
                             "direction": row.direction,
                             "cases": {case_id: {"state": c.state, "clause": c.clause, "side": c.side, "peer": c.peer,
                                                 "reason": c.reason, "cell": c.cell, "lacks": list(c.lacks)}
                                       for case_id, c in row.cases.items()}}
                            for row in report.summary.foreign_rows],
        # Why the run stopped before its end ("broker lost: ...", "interrupted ..."), else null.
        "aborted": meta.get("aborted"),
        # Whether the harness could adopt its peers' orphans, what it ended at the end of the
        # run and what it could not end (core/containment.py); null for a file read back.
        "containment": meta.get("containment"),
        # The broker at the end of the run (run/soak.py): connections left in the run's vhost
        # once its peers stopped, and the suite's vhosts left on it.
        "broker_left": meta.get("broker_left"),
        "cells": [cell_record(r) for r in report.results],
    }


def write_json(report: RunResult, path: Path) -> None:
    # default=repr never reaches here for the model's own values; anything else a peer sent
    # is JSON already. A value that is not (a bug) is shown as text rather than lost.
    path.write_text(json.dumps(results_data(report), indent=1, default=str, ensure_ascii=False), encoding="utf-8")


# -- and back: the one reader of results.json (compare, merge, publish, flakes, --baseline) --


def read_results(path: Path) -> dict[str, Any]:
    """A results.json's data, or a usage error saying why it is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read results: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UsageError(f"{path}: not an acemq-interop results.json (no 'cells' list)")
    return data


def peer_from_record(name: str, record: dict[str, Any]) -> PeerStatus:
    """A peer of a results.json as the run had it (its hello as far as the file keeps it)."""
    hello = {k: record.get(k) for k in ("binding", "client", "protocol", "profiles") if record.get(k) is not None}
    if record.get("mutants"):
        hello["mutants_offered"] = record["mutants"]
    return PeerStatus(name, record.get("language", ""), record.get("build_s"), record.get("startup_s"), hello,
                      record.get("unavailable"), foreign=dict(record.get("foreign") or {}),
                      usage=record.get("usage"), limits=record.get("limits"))


def broker_from_record(record: dict[str, Any]) -> BrokerInfo:
    return BrokerInfo(record["label"], record.get("product"), record.get("version"), record.get("erlang"),
                      tls=bool(record.get("tls")), direct_reply_to=record.get("direct_reply_to"))


def run_from_data(data: dict[str, Any]) -> RunResult:
    """The inverse of `results_data`: a run rebuilt from its results.json, every view the same."""
    meta = {k: data.get(k) for k in ("suite", "command", "started_at", "finished_at", "cells_s", "selection", "shard", "aborted",
                                     "containment", "broker_left")}
    return RunResult([cell_from_record(c) for c in data.get("cells") or []],
                     {name: peer_from_record(name, p) for name, p in (data.get("peers") or {}).items()},
                     list((data.get("selection") or {}).get("peers") or []),
                     [broker_from_record(b) for b in data.get("brokers") or []],
                     float(data.get("duration_s") or 0), str(data.get("started_at") or ""), "", "", meta)
