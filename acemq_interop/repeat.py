"""Which cells flake: the same selection's results over several runs, cell by cell.

A cell *varies* when its verdict is not the same in every run: its status, or, for a FAIL, the
set of clauses it broke (a verdict that names another clause each time is no verdict either).
A cell missing from a run varies too (that run did not give it a verdict). The report reads
results.json files, so it serves `run --repeat N` (one folder per run) and runs made elsewhere
(`acemq-interop flakes out-*/results.json`, e.g. the artefacts of several CI jobs).
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compare import read_results
from .errors import UsageError
from .html_report import cell_anchor
from .results_files import _peers_of, broken_clauses

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
            "runs": [{"label": r.label, "results": str(r.path), "counts": _counts(r.data),
                      "started_at": r.data.get("started_at"), "aborted": r.data.get("aborted")} for r in self.runs],
            "cells": len(self.cells),
            "varying": [{"id": c.id, "scenario": c.scenario, "peers": list(c.peers),
                         "outcomes": [{"run": r.label, "status": o.status, "clauses": list(o.clauses), "message": o.message}
                                      for r, o in zip(self.runs, c.outcomes)]} for c in self.varying],
            "by_peer": {k: v.record() for k, v in self.by("peer").items()},
            "by_scenario": {k: v.record() for k, v in self.by("scenario").items() if v.varying},
        }

    # -- renderings ---------------------------------------------------------------------

    def text(self) -> str:
        lines = [self.summary_line()]
        for cell in self.varying:
            lines.append(f"  VARIES {cell.id}: " + " | ".join(f"{r.label}: {o.short()}" for r, o in zip(self.runs, cell.outcomes)))
        flaky = {k: v for k, v in self.by("peer").items() if v.varying}
        if flaky:
            lines.append("  by peer: " + ", ".join(f"{k} {v.varying}/{v.cells}" for k, v in flaky.items()))
        return "\n".join(lines)

    def markdown(self, base: Path | None = None) -> str:
        lines = ["# acemq-interop: repeat report", "", f"**{self.summary_line()}**", "", "| run | results | counts |", "|---|---|---|"]
        for run in self.runs:
            counts = _counts(run.data)
            shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
            lines.append(f"| {run.label} | [{_rel(run.path, base)}]({_rel(run.path, base)}) | {shown or '-'} |")
        if self.varying:
            lines += ["", "## Cells whose verdict varied", "", "| cell | " + " | ".join(r.label for r in self.runs) + " |",
                      "|---|" + "---|" * len(self.runs)]
            for cell in self.varying:
                row = [f"[{o.short()}]({_rel(r.path.parent / 'report.html', base)}#{cell_anchor(cell.id)})"
                       for r, o in zip(self.runs, cell.outcomes)]
                lines.append(f"| `{cell.id}` | " + " | ".join(row) + " |")
            lines += ["", "## Flake rate per peer", "", "| peer | varying | cells | rate |", "|---|---|---|---|"]
            for name, rate in self.by("peer").items():
                lines.append(f"| {name} | {rate.varying} | {rate.cells} | {100 * rate.rate:.1f}% |")
            lines += ["", "## Flake rate per scenario (those that varied)", "", "| scenario | varying | cells | rate |", "|---|---|---|---|"]
            for name, rate in self.by("scenario").items():
                if rate.varying:
                    lines.append(f"| {name} | {rate.varying} | {rate.cells} | {100 * rate.rate:.1f}% |")
        return "\n".join(lines) + "\n"

    def html(self, base: Path | None = None) -> str:
        esc = html.escape
        runs = "".join(f"<li><a href=\"{esc(_rel(r.path.parent / 'report.html', base))}\">{esc(r.label)}</a></li>" for r in self.runs)
        rows = ""
        for cell in self.varying:
            tds = "".join(f"<td class=\"{esc(o.status)}\"><a href=\"{esc(_rel(r.path.parent / 'report.html', base))}#{cell_anchor(cell.id)}\">"
                          f"{esc(o.short())}</a><br><small>{esc(o.message)}</small></td>" for r, o in zip(self.runs, cell.outcomes))
            rows += f"<tr><th>{esc(cell.id)}</th>{tds}</tr>"
        peers = "".join(f"<tr><td>{esc(k)}</td><td>{v.varying}/{v.cells}</td><td>{100 * v.rate:.1f}%</td></tr>"
                        for k, v in self.by("peer").items())
        table = (f"<table><tr><th>cell</th>{''.join(f'<th>{esc(r.label)}</th>' for r in self.runs)}</tr>{rows}</table>"
                 if rows else "<p>Every cell had the same verdict in every run.</p>")
        return ("<!doctype html><meta charset=\"utf-8\"><title>acemq-interop: repeat report</title>"
                "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px;text-align:left;vertical-align:top}"
                "table{border-collapse:collapse}.PASS{background:#e6f4e6}.FAIL,.ERROR,.ABSENT{background:#fbe3e3}</style>"
                f"<h1>acemq-interop: repeat report</h1><p><b>{esc(self.summary_line())}</b></p><ul>{runs}</ul>"
                f"<h2>Cells whose verdict varied</h2>{table}"
                f"<h2>Flake rate per peer</h2><table><tr><th>peer</th><th>varying</th><th>rate</th></tr>{peers}</table>")

    def write(self, out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "repeat.json", out / "summary.md", out / "report.html"]
        paths[0].write_text(json.dumps(self.record(), indent=2) + "\n", encoding="utf-8")
        paths[1].write_text(self.markdown(out), encoding="utf-8")
        paths[2].write_text(self.html(out), encoding="utf-8")
        return paths


def _rel(path: Path, base: Path | None) -> str:
    if base is None:
        return str(path)
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def _counts(data: dict[str, Any]) -> dict[str, int]:
    """A run's cells by status, from its results.json summary."""
    summary = data.get("summary") or {}
    return {k: int(v) for k, v in summary.items() if isinstance(v, int)}
