"""The repeat report's views: the console lines, OUT/summary.md, OUT/report.html and OUT/repeat.json."""
from __future__ import annotations

import html
import json
from pathlib import Path

from ..results.repeat import RepeatReport, counts_of
from ..results.soak import SoakReport
from .text import cell_anchor


def repeat_text(report: RepeatReport) -> str:
    lines = [report.summary_line()]
    for cell in report.varying:
        lines.append(f"  VARIES {cell.id}: " + " | ".join(f"{r.label}: {o.short()}" for r, o in zip(report.runs, cell.outcomes)))
    flaky = {k: v for k, v in report.by("peer").items() if v.varying}
    if flaky:
        lines.append("  by peer: " + ", ".join(f"{k} {v.varying}/{v.cells}" for k, v in flaky.items()))
    return "\n".join(lines)


def soak_text(soak: SoakReport) -> str:
    """The soak's figures per run as a plain table, then its verdict."""
    rows = soak.table()
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in rows]
    return "\n".join([*lines, *soak.leftover_lines(), soak.summary_line()])


def soak_markdown(soak: SoakReport) -> list[str]:
    rows = soak.table()
    return ["", "## Soak: what each run left", "", f"**{soak.summary_line()}**", "",
            "| " + " | ".join(rows[0]) + " |", "|" + "---:|" * len(rows[0]),
            *("| " + " | ".join(row) + " |" for row in rows[1:]),
            *(["", *(f"- {line}" for line in soak.leftover_lines())] if soak.leftovers() else [])]


def repeat_markdown(report: RepeatReport, base: Path | None = None, soak: SoakReport | None = None) -> str:
    lines = ["# acemq-interop: repeat report", "", f"**{report.summary_line()}**", "", "| run | results | counts |", "|---|---|---|"]
    for run in report.runs:
        counts = counts_of(run.data)
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        lines.append(f"| {run.label} | [{_rel(run.path, base)}]({_rel(run.path, base)}) | {shown or '-'} |")
    if report.varying:
        lines += ["", "## Cells whose verdict varied", "", "| cell | " + " | ".join(r.label for r in report.runs) + " |",
                  "|---|" + "---|" * len(report.runs)]
        for cell in report.varying:
            row = [f"[{o.short()}]({_rel(r.path.parent / 'report.html', base)}#{cell_anchor(cell.id)})"
                   for r, o in zip(report.runs, cell.outcomes)]
            lines.append(f"| `{cell.id}` | " + " | ".join(row) + " |")
        lines += ["", "## Flake rate per peer", "", "| peer | varying | cells | rate |", "|---|---|---|---|"]
        for name, rate in report.by("peer").items():
            lines.append(f"| {name} | {rate.varying} | {rate.cells} | {100 * rate.rate:.1f}% |")
        lines += ["", "## Flake rate per scenario (those that varied)", "", "| scenario | varying | cells | rate |", "|---|---|---|---|"]
        for name, rate in report.by("scenario").items():
            if rate.varying:
                lines.append(f"| {name} | {rate.varying} | {rate.cells} | {100 * rate.rate:.1f}% |")
    if soak is not None:
        lines += soak_markdown(soak)
    return "\n".join(lines) + "\n"


def repeat_html(report: RepeatReport, base: Path | None = None) -> str:
    esc = html.escape
    runs = "".join(f"<li><a href=\"{esc(_rel(r.path.parent / 'report.html', base))}\">{esc(r.label)}</a></li>" for r in report.runs)
    rows = ""
    for cell in report.varying:
        tds = "".join(f"<td class=\"{esc(o.status)}\"><a href=\"{esc(_rel(r.path.parent / 'report.html', base))}#{cell_anchor(cell.id)}\">"
                      f"{esc(o.short())}</a><br><small>{esc(o.message)}</small></td>" for r, o in zip(report.runs, cell.outcomes))
        rows += f"<tr><th>{esc(cell.id)}</th>{tds}</tr>"
    peers = "".join(f"<tr><td>{esc(k)}</td><td>{v.varying}/{v.cells}</td><td>{100 * v.rate:.1f}%</td></tr>"
                    for k, v in report.by("peer").items())
    table = (f"<table><tr><th>cell</th>{''.join(f'<th>{esc(r.label)}</th>' for r in report.runs)}</tr>{rows}</table>"
             if rows else "<p>Every cell had the same verdict in every run.</p>")
    return ("<!doctype html><meta charset=\"utf-8\"><title>acemq-interop: repeat report</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px;text-align:left;vertical-align:top}"
            "table{border-collapse:collapse}.PASS{background:#e6f4e6}.FAIL,.ERROR,.ABSENT{background:#fbe3e3}</style>"
            f"<h1>acemq-interop: repeat report</h1><p><b>{esc(report.summary_line())}</b></p><ul>{runs}</ul>"
            f"<h2>Cells whose verdict varied</h2>{table}"
            f"<h2>Flake rate per peer</h2><table><tr><th>peer</th><th>varying</th><th>rate</th></tr>{peers}</table>")


def write_repeat(report: RepeatReport, out: Path, soak: SoakReport | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "repeat.json", out / "summary.md", out / "report.html"]
    paths[0].write_text(json.dumps(report.record(), indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(repeat_markdown(report, out, soak), encoding="utf-8")
    paths[2].write_text(repeat_html(report, out), encoding="utf-8")
    if soak is not None:
        paths.append(out / "soak.json")
        paths[-1].write_text(json.dumps(soak.record(), indent=2) + "\n", encoding="utf-8")
    return paths


def _rel(path: Path, base: Path | None) -> str:
    if base is None:
        return str(path)
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())
