"""`acemq-interop publish RESULTS.json... --site DIR`: a static site from several runs.

One page per run (its report.html, rebuilt from its results.json), an index with one row
per run (suite version, broker and version, date, verdict, counts) and a shields.io
endpoint badge (`badge.json`) for the newest run, plus one per run.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results.files import read_results, run_from_data
from ..results.model import RunResult


def load_run(path: Path) -> RunResult:
    return run_from_data(read_results(path))


# -- the site ---------------------------------------------------------------------------

import html as _html
import json
import re
import shutil


def badge(data: dict[str, Any]) -> dict[str, Any]:
    """A shields.io endpoint badge for one run: `540/540 pass`, green only when the run passed."""
    summary = data.get("summary") or {}
    total = sum(int(v) for v in summary.values())
    passed = int(summary.get("PASS", 0))
    bad = sum(int(summary.get(s, 0)) for s in ("FAIL", "ERROR", "XPASS"))
    if bad == 0:
        color = "brightgreen"
    else:
        color = "red" if summary.get("FAIL") or summary.get("XPASS") else "orange"
    message = f"{passed}/{total} pass"
    parts = [f"{summary[s]} {s.lower()}" for s in ("FAIL", "ERROR", "XPASS", "XFAIL", "SKIP") if summary.get(s)]
    if parts:
        message += ", " + ", ".join(parts)
    return {"schemaVersion": 1, "label": "acemq-interop", "message": message, "color": color}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "run"


def _row(data: dict[str, Any], page: str) -> dict[str, Any]:
    summary = data.get("summary") or {}
    suite = data.get("suite") or {}
    brokers = data.get("brokers") or []
    bad = sum(int(summary.get(s, 0)) for s in ("FAIL", "ERROR", "XPASS"))
    return {
        "page": page,
        "suite": suite.get("version") or "",
        "commit": (suite.get("git_commit") or "")[:12],
        "broker": "; ".join(" ".join(x for x in (b.get("label"), b.get("product"), b.get("version"),
                                                  "over TLS" if b.get("tls") else None) if x) for b in brokers)
                  or data.get("broker") or "",
        "broker_version": ", ".join(b.get("version") or "?" for b in brokers),
        "date": data.get("started_at") or "",
        "verdict": "PASS" if bad == 0 else "FAIL",
        "counts": {k: v for k, v in summary.items() if v},
        "total": sum(int(v) for v in summary.values()),
        "badge": badge(data),
    }


def publish(paths: list[Path], site: Path, docs_url: str | None = None, log: Any = print) -> Path:
    """Build the site: DIR/index.html, DIR/badge.json (newest run), DIR/runs/<run>/{report.html,results.json,badge.json}."""
    from .html import render_html, spec_page

    runs = []
    for path in paths:
        data = read_results(path)
        runs.append((path, data))
    runs.sort(key=lambda item: item[1].get("started_at") or "", reverse=True)
    site.mkdir(parents=True, exist_ok=True)
    (site / "runs").mkdir(exist_ok=True)
    spec = "wire-spec.md"
    if not docs_url:  # the site carries its own copy of the spec, its headings with GitHub's anchors
        (site / "docs").mkdir(exist_ok=True)
        (site / "docs" / "wire-spec.html").write_text(spec_page(), encoding="utf-8")
        docs_url, spec = "../../docs/", "wire-spec.html"
    rows, used = [], set()
    for path, data in runs:
        suite = data.get("suite") or {}
        brokers = data.get("brokers") or []
        base = _slug("-".join(x for x in (str(data.get("started_at") or "")[:19].replace(":", ""), suite.get("version") or "",
                                         (brokers[0].get("version") if brokers else "") or "") if x))
        name, n = base, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        folder = site / "runs" / name
        folder.mkdir(parents=True, exist_ok=True)
        report = run_from_data(data)
        out = folder / "report.html"
        out.write_text(render_html(report, out, docs_url, spec=spec), encoding="utf-8")
        shutil.copyfile(path, folder / "results.json")
        (folder / "badge.json").write_text(json.dumps(badge(data)) + "\n", encoding="utf-8")
        rows.append(_row(data, f"runs/{name}/report.html"))
        log(f"published {path} as {folder}")
    if rows:
        (site / "badge.json").write_text(json.dumps(rows[0]["badge"]) + "\n", encoding="utf-8")
    (site / "index.html").write_text(_index(rows), encoding="utf-8")
    (site / "runs.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return site / "index.html"


def _index(rows: list[dict[str, Any]]) -> str:
    e = _html.escape
    body = []
    for r in rows:
        counts = " ".join(f'<span class="b {e(k)}">{v} {e(k)}</span>' for k, v in r["counts"].items())
        body.append(
            f'<tr class="{e(r["verdict"])}"><td><a href="{e(r["page"])}">{e(r["date"])}</a></td><td>{e(r["suite"])}'
            f'{" <span class=m>" + e(r["commit"]) + "</span>" if r["commit"] else ""}</td><td>{e(r["broker"])}</td>'
            f'<td class="v {e(r["verdict"])}">{e(r["verdict"])}</td><td>{r["total"]} cells: {counts}</td>'
            f'<td>{e(r["badge"]["message"])}</td></tr>')
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>acemq-interop results</title>
<style>body{{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em}}
table{{border-collapse:collapse;width:100%}}td,th{{border:1px solid #d5d8dc;padding:5px 8px;text-align:left;vertical-align:top}}
th{{background:#f1f3f5}}.v.PASS,.b.PASS{{background:#dcf3dc}}.v.FAIL,.b.FAIL,.b.XPASS{{background:#f9d0d0}}.b.ERROR{{background:#f3d3f3}}
.b.XFAIL{{background:#fcefc4}}.b.SKIP{{background:#eceff1}}.b{{display:inline-block;padding:0 .4em;border-radius:3px;margin-right:.3em;font-size:12px}}
.m{{color:#666;font-family:monospace}}</style></head><body>
<h1>acemq-interop results</h1>
<p>One row per run, newest first. <a href="badge.json">badge.json</a> (shields.io endpoint) is the newest run's.</p>
<table id="runs"><tr><th>run (date)</th><th>suite</th><th>broker</th><th>verdict</th><th>counts</th><th>badge</th></tr>
{"".join(body)}
</table></body></html>
"""
