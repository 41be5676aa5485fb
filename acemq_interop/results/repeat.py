"""Which cells flake: the same selection's results over several runs, cell by cell.

A cell *varies* when its verdict is not the same in every run: its status, or, for a FAIL, the
set of clauses it broke (a verdict that names another clause each time is no verdict either).
A cell missing from a run varies too (that run did not give it a verdict). The report reads
results.json files, so it serves `run --repeat N` (one folder per run) and runs made elsewhere
(`acemq-interop flakes out-*/results.json`, e.g. the artefacts of several CI jobs).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import read_results
from ..core.errors import UsageError
from .files import _peers_of, broken_clauses

REPEAT_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Outcome:
    """One cell in one run: its status, the clauses a FAIL broke, its message's first line."""

    status: str
    clauses: tuple[str, ...] = ()
    message: str = ""

    @property
    def verdict(self) -> tuple[str, tuple[str, ...]]:
        return self.status, self.clauses

    def short(self) -> str:
        return f"{self.status} {', '.join(self.clauses)}".strip()


ABSENT = Outcome("ABSENT", (), "not in this run's results")


@dataclass
class CellHistory:
    id: str
    scenario: str
    peers: tuple[str, ...]
    outcomes: list[Outcome]

    @property
    def varies(self) -> bool:
        return len({o.verdict for o in self.outcomes}) > 1


@dataclass(frozen=True)
class RunSource:
    """One run's results.json: its label in the report and the folder its report.html is in."""

    label: str
    path: Path
    data: dict[str, Any] = field(compare=False, repr=False)


@dataclass
class Rate:
    cells: int = 0
    varying: int = 0

    @property
    def rate(self) -> float:
        return self.varying / self.cells if self.cells else 0.0

    def record(self) -> dict[str, Any]:
        return {"cells": self.cells, "varying": self.varying, "rate": round(self.rate, 4)}


def load_runs(paths: list[Path]) -> list[RunSource]:
    """The runs' results.json files, in the order given; a file that is not one is a usage error."""
    runs = [RunSource(f"run {index}", path, read_results(path)) for index, path in enumerate(paths, 1)]
    if len(runs) < 2:
        raise UsageError("flakes needs the results.json of two runs or more of the same selection")
    return runs


def _outcome(record: dict[str, Any]) -> Outcome:
    status = str(record.get("status", "?"))
    clauses = tuple(sorted(broken_clauses(record))) if status in ("FAIL", "XFAIL") else ()
    first = (record.get("message") or record.get("reason") or "").splitlines()
    return Outcome(status, clauses, first[0][:300] if first else "")


@dataclass
class RepeatReport:
    runs: list[RunSource]
    cells: list[CellHistory]

    @classmethod
    def of(cls, runs: list[RunSource]) -> "RepeatReport":
        order: dict[str, dict[str, Any]] = {}
        per_run: list[dict[str, dict[str, Any]]] = []
        for run in runs:
            records = {str(c["id"]): c for c in run.data["cells"] if isinstance(c, dict) and "id" in c}
            per_run.append(records)
            for cell_id, record in records.items():
                order.setdefault(cell_id, record)
        cells = [
            CellHistory(cell_id, str(first.get("scenario", "")), tuple(dict.fromkeys(_peers_of(first.get("roles") or {}))),
                        [_outcome(records[cell_id]) if cell_id in records else ABSENT for records in per_run])
            for cell_id, first in order.items()
        ]
        return cls(runs, cells)

    @property
    def varying(self) -> list[CellHistory]:
        return [c for c in self.cells if c.varies]

    def by(self, key: str) -> dict[str, Rate]:
        """Flake rates per peer (`key` "peer": a cell counts for each of its peers) or per scenario."""
        rates: dict[str, Rate] = {}
        for cell in self.cells:
            for name in (cell.peers if key == "peer" else (cell.scenario,)):
                rate = rates.setdefault(name, Rate())
                rate.cells += 1
                rate.varying += cell.varies
        return dict(sorted(rates.items()))

    def summary_line(self) -> str:
        varying = len(self.varying)
        share = f" ({100 * varying / len(self.cells):.1f}%)" if self.cells and varying else ""
        return f"{len(self.runs)} runs of {len(self.cells)} cells: {varying} cell(s) whose verdict varied{share}"

    def record(self) -> dict[str, Any]:
        return {
            "schema_version": REPEAT_SCHEMA_VERSION,
            "summary": self.summary_line(),
            "runs": [{"label": r.label, "results": str(r.path), "counts": counts_of(r.data),
                      "started_at": r.data.get("started_at"), "aborted": r.data.get("aborted")} for r in self.runs],
            "cells": len(self.cells),
            "varying": [{"id": c.id, "scenario": c.scenario, "peers": list(c.peers),
                         "outcomes": [{"run": r.label, "status": o.status, "clauses": list(o.clauses), "message": o.message}
                                      for r, o in zip(self.runs, c.outcomes)]} for c in self.varying],
            "by_peer": {k: v.record() for k, v in self.by("peer").items()},
            "by_scenario": {k: v.record() for k, v in self.by("scenario").items() if v.varying},
        }


def counts_of(data: dict[str, Any]) -> dict[str, int]:
    """A run's cells by status, from its results.json summary."""
    summary = data.get("summary") or {}
    return {k: int(v) for k, v in summary.items() if isinstance(v, int)}
