"""One self-contained HTML page, failures first.

The page opens with the verdict, each peer's to-do list (every clause it broke, once, with
the clearest cell's failure one click away), and every FAIL, XPASS and ERROR (ERRORs folded
by cause), each with its first failure and title, expected against observed, its rerun line
and a link to its evidence; then the matrices (pairs with a drill-down per pair, the probe
grids, the per-peer table with mutant coverage, the rules), then every cell. A non-PASS cell's
evidence is inline (every failure, each with its side, peer, check and a link to the trace
entry that saw it; the checks not evaluated; the steps, the broker's transcript as a
message sequence, the peers' stderr when there is any); a PASS cell's steps travel
gzip-compressed in one blob and are unpacked in the browser when opened, so a 540-cell
all-pass page stays small.

It renders the model (`RunResult` and its `Summary`) only: no cell is regrouped here.
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from .console_report import (LEVEL_ORDER, MAX_TODO_SHOWN, charged_to, fold_errors, mutants_text, others_text, shared_text,
                             short_value, suspects_of)
from .model import COUNT_ORDER, BAD_STATUSES, CellResult, Failure, RunResult, Status, TodoItem

DOCS_URL_ENV = "ACEMQ_INTEROP_DOCS_URL"  # base URL of docs/ (e.g. a repository's blob/main/docs/)
_ABSENT = "(absent)"
_URL = re.compile(r"(https?://[^\s<>\"')]+|docs/[\w./-]+\.md(?:#[\w-]+)?)")


# -- the spec's anchors -------------------------------------------------------------


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=1)
def rule_anchors() -> dict[str, str]:
    """Rule id -> the anchor of its heading in docs/wire-spec.md (`### RR-1 The reply ...`)."""
    from .paths import DOCS_DIR

    anchors: dict[str, str] = {}
    try:
        text = (DOCS_DIR / "wire-spec.md").read_text(encoding="utf-8")
    except OSError:
        return anchors
    for line in text.splitlines():
        match = re.match(r"^#{2,4}\s+((?:RR|SG|WF)-\d+)\b(.*)$", line)
        if match:
            anchors[match.group(1)] = github_anchor(match.group(1) + match.group(2))
    return anchors


def docs_base(out_path: Path | None, docs_url: str | None = None) -> str:
    """Where docs/ is, seen from the page: --docs-url / $ACEMQ_INTEROP_DOCS_URL, else a relative path."""
    base = docs_url or os.environ.get(DOCS_URL_ENV)
    if base:
        return base if base.endswith("/") else base + "/"
    from .paths import DOCS_DIR

    if out_path is None:
        return "docs/"
    return Path(os.path.relpath(DOCS_DIR, out_path.resolve().parent)).as_posix() + "/"


class Links:
    def __init__(self, base: str, spec: str = "wire-spec.md"):
        self.base, self.spec = base, spec

    def rule(self, rule_or_clause: str | None) -> str:
        if not rule_or_clause:
            return ""
        rule = rule_or_clause.partition(".")[0]
        anchor = rule_anchors().get(rule, rule.lower())
        return f"{self.base}{self.spec}#{anchor}"

    def doc(self, link: str) -> str:
        """A link as the known-failures files write it (`docs/wire-spec.md#...`) made to work from the page."""
        if link.startswith("docs/wire-spec.md"):
            return self.base + self.spec + link[len("docs/wire-spec.md"):]
        return self.base + link[len("docs/"):] if link.startswith("docs/") else link


# -- filters ------------------------------------------------------------------------


def _json(value: Any, indent: int | None = 1) -> str:
    if value == _ABSENT:
        return _ABSENT
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str, sort_keys=False)


def _linkify(text: str, links: Links) -> Markup:
    out, last = [], 0
    for match in _URL.finditer(text or ""):
        out.append(escape(text[last:match.start()]))
        url = match.group(0)
        out.append(Markup('<a href="{}">{}</a>').format(links.doc(url), url))
        last = match.end()
    out.append(escape((text or "")[last:]))
    return Markup("").join(out)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def cell_anchor(cell_id: str) -> str:
    """The fragment of a cell's row in report.html (for links from elsewhere, repeat.py's)."""
    return "cell-" + _slug(cell_id)


# -- evidence -----------------------------------------------------------------------


def _step_summary(step: dict[str, Any]) -> str:
    kind = step.get("step", "?")
    if kind == "expect":
        # ok None: a check an earlier failure left without input; it neither held nor broke.
        verdict = "not evaluated" if step.get("ok") is None else ("holds" if step.get("ok") else "DOES NOT HOLD")
        return f"expect {step.get('that')} ({step.get('rule')}): {verdict}"
    if "sent" in step:
        sent = step.get("sent") or {}
        answer = step.get("answer")
        target = sent.get("name") or sent.get("requester") or sent.get("responder") or ""
        outcome = "" if answer is None else (" -> ok" if answer.get("ok", True) else f" -> refused: {answer.get('error')}")
        return f"{step.get('peer')}: {kind} {target}{outcome}".strip()
    if kind == "answer":
        answer = step.get("answer") or {}
        return f"{step.get('peer')}: answer to {step.get('of')}: {answer.get('outcome') or ('ok' if answer.get('ok') else answer.get('error'))}"
    if kind == "probe_publish":
        return f"probe publishes to {step.get('exchange') or '(default exchange)'} {step.get('routing_key')}"
    if kind == "probe_get":
        got = step.get("got")
        n = len(got) if isinstance(got, list) else (0 if got is None else 1)
        return f"probe takes from {step.get('queue')}: {n} message(s)"
    if kind == "wait_event":
        return f"{step.get('peer')}: waited for {step.get('event')}: {step.get('seen')} seen"
    if kind == "queue_facts":
        return f"management API: facts of {step.get('queue')}"
    return kind


def _steps(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shown = []
    for index, step in enumerate(trace):
        details = {k: v for k, v in step.items() if k not in ("t", "step")}
        shown.append({"n": index + 1, "t": step.get("t"), "summary": _step_summary(step), "failed": step.get("ok") is False,
                      "details": _json(details)})
    return shown


def _failing_step(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((s for s in reversed(steps) if s["failed"]), None)


_LABELS = {"properties": ("message_id", "correlation_id", "reply_to", "content_type", "type", "delivery_mode")}


def _sequence(transcript: list[dict[str, Any]]) -> dict[str, Any]:
    """A transcript as lanes and arrows: actor -> exchange -> queue -> actor, and back."""
    actors: list[str] = []
    exchanges: list[str] = []
    queues: list[str] = []
    for record in transcript:
        who = record["who"]
        if record["event"] == "publish":
            if who not in actors:
                actors.append(who)
            exchange = record["exchange"] or "(default exchange)"
            if exchange not in exchanges:
                exchanges.append(exchange)
            for q in record.get("routed_queues") or []:
                if q not in queues:
                    queues.append(q)
        else:
            if record["queue"] not in queues:
                queues.append(record["queue"])
    consumers = [r["who"] for r in transcript if r["event"] == "deliver" and r["who"] not in actors]
    # Senders on the left, the broker in the middle, whoever only consumed on the right.
    lanes = [("actor", a) for a in actors[:1]] + [("exchange", e) for e in exchanges] + [("queue", q) for q in queues] \
        + [("actor", a) for a in dict.fromkeys(actors[1:] + consumers)]
    index = {lane: i for i, lane in enumerate(lanes)}
    rows = []
    for record in transcript:
        who = ("actor", record["who"])
        headers = [{"name": k, "type": v.get("type"), "value": _json(v.get("value"), None)} for k, v in record["headers"].items()]
        props = [{"name": k, "value": v} for k, v in record["properties"].items() if v not in (None, "")]
        base = {"n": record["n"], "t": record["t"], "who": record["who"], "props": props, "headers": headers,
                "body": record.get("body", ""), "body_length": record.get("body_length"), "event": record["event"],
                "routing_keys": record.get("routing_keys") or []}
        if record["event"] == "publish":
            exchange = ("exchange", record["exchange"] or "(default exchange)")
            routed = record.get("routed_queues") or []
            base["label"] = f"publish to {exchange[1]}, routing key {', '.join(base['routing_keys']) or '(none)'}"
            base["span"] = _span(index.get(who, 0), index[exchange], len(lanes))
            base["routed"] = [{"queue": q, "span": _span(index[exchange], index[("queue", q)], len(lanes))} for q in routed
                              if ("queue", q) in index]
            base["unroutable"] = not routed
        else:
            queue = ("queue", record["queue"])
            base["label"] = f"delivered from {record['queue']} to {record['who']}" + (" (redelivered)" if record.get("redelivered") else "")
            base["span"] = _span(index[queue], index.get(who, len(lanes) - 1), len(lanes))
            base["routed"] = []
            base["unroutable"] = False
        rows.append(base)
    return {"lanes": [{"kind": k, "name": n} for k, n in lanes], "rows": rows}


def _span(source: int, target: int, width: int) -> list[str]:
    """Per lane: '' (nothing), 'from', 'mid', 'to-r'/'to-l' (arrow head), for one arrow."""
    cells = [""] * width
    if source == target:
        cells[source] = "self"
        return cells
    lo, hi = sorted((source, target))
    for i in range(lo, hi + 1):
        cells[i] = "mid"
    cells[source] = "from-r" if target > source else "from-l"
    cells[target] = "to-r" if target > source else "to-l"
    return cells


def _failure_view(f: Failure, number: int, anchor: str, r: CellResult, steps: list[dict[str, Any]],
                  links: Links) -> dict[str, Any]:
    """One failure of a cell as the page shows it; `step` is the trace entry that saw it."""
    from .catalogue import catalogue

    cat = catalogue()
    clause = cat.clauses.get(f.clause)
    step = steps[f.at] if f.at is not None and 0 <= f.at < len(steps) else None
    return {"id": f"{anchor}-failure-{number}", "clause": f.clause, "href": links.rule(f.clause),
            "rule_id": f.clause.partition(".")[0] if "." in f.clause else "", "rule_title": cat.title(f.clause),
            "clause_text": clause.text if clause else "", "side": f.side, "role": f.role, "peer": f.peer,
            "charged": charged_to(f, r), "check": f.check or f.message,
            "expected": _json(f.expected), "observed": _json(f.observed), "observed_absent": f.observed == _ABSENT,
            "seen_as": f.seen_as, "seen_as_href": links.rule(f.seen_as), "step": step}


def _cell_view(r: CellResult, links: Links) -> dict[str, Any]:
    from .catalogue import catalogue

    cat = catalogue()
    steps = _steps(r.trace)
    clause = cat.clauses.get(r.rule or "") if r.rule and "." in r.rule else None
    anchor = "cell-" + _slug(r.id)
    failures = [_failure_view(f, i, anchor, r, steps, links) for i, f in enumerate(r.failures, 1)] \
        if r.status == Status.FAIL else []
    return {
        "id": r.id, "anchor": anchor, "scenario": r.scenario, "title": r.title, "status": r.status.value,
        "rules": [{"id": x, "href": links.rule(x)} for x in r.rules], "broker": r.broker,
        "duration": f"{r.duration_s:.2f}", "rule": r.rule, "rule_href": links.rule(r.rule),
        "rule_title": cat.title(r.rule) if r.rule else "", "clause_text": clause.text if clause else "",
        # "RR-4" beside "RR-4.2": a clause is shown with its rule; a rule id alone (older results) is its own.
        "rule_id": r.rule.partition(".")[0] if r.rule and "." in r.rule else "",
        "seen_as": r.seen_as, "seen_as_href": links.rule(r.seen_as),
        "clauses": [{"id": x, "href": links.rule(x)} for x in r.clauses],
        "message": r.message, "first_line": _first_line(r.message),
        "expected": _json(r.expected), "observed": _json(r.observed),
        "observed_absent": r.observed == _ABSENT, "reason": r.reason, "rerun": r.rerun,
        "steps": steps,
        # Each failure links its own trace entry; the last failed step stands in only for
        # results that do not say which entry saw a failure.
        "failing": None if any(f["step"] for f in failures) else _failing_step(steps),
        "failures": failures, "more": others_text(r) if r.status == Status.FAIL else "",
        "not_evaluated": [{"clause": n.clause, "href": links.rule(n.clause), "check": n.check, "needs": n.needs}
                          for n in r.not_evaluated],
        "stderr": {peer: tail for peer, tail in r.stderr.items() if tail and tail.strip()},
        "sequence": _sequence(r.transcript) if r.transcript else None,
        "transcript_len": len(r.transcript or []),
        "inline": r.status != Status.PASS,
    }


def _first_line(message: str) -> str:
    """A message's first line; with the next one when the first only announces it (`...lines:`)."""
    lines = [line for line in (message or "").splitlines() if line.strip()]
    if not lines:
        return ""
    return f"{lines[0]} {lines[1].strip()}" if lines[0].rstrip().endswith(":") and len(lines) > 1 else lines[0]


def _todo_view(report: RunResult, links: Links) -> list[dict[str, Any]]:
    """Each peer's to-do list: the first rows shown, the rest folded (a peer that broke
    everything must not push the failing cells off the first screen)."""
    peers = []
    for label, items in report.summary.todo.items():
        rows = [_todo_row(report, item, links) for item in items]
        if rows:
            peers.append({"label": label, "total": len(rows), "rows": rows[:MAX_TODO_SHOWN], "more": rows[MAX_TODO_SHOWN:]})
    return peers


def _todo_row(report: RunResult, item: TodoItem, links: Links) -> dict[str, Any]:
    """One clause of a peer's to-do list, with where its clearest cell's failure is."""
    from .catalogue import catalogue

    cat = catalogue()
    cell, f = report.cell(item.clearest), item.failure
    clause = cat.clauses.get(item.clause)
    anchor = "cell-" + _slug(cell.id)
    # The link lands on the clearest cell's failure of this clause: its check, expected
    # against observed and the trace entry, one click from the top of the page.
    number = next((i for i, g in enumerate(cell.failures, 1) if g == f), None)
    return {"clause": item.clause, "href": links.rule(item.clause), "title": cat.title(item.clause),
            "text": clause.text if clause else "", "cells": len(item.cells), "clearest": cell.id,
            "target": f"{anchor}-failure-{number}" if number else anchor, "shared": shared_text(f),
            "expected": short_value(f.expected), "observed": short_value(f.observed)}


def _unattributed_view(report: RunResult) -> list[dict[str, Any]]:
    return [{"id": r.id, "anchor": "cell-" + _slug(r.id), "clauses": ", ".join(r.broken_clauses),
             "suspects": ", ".join(suspects_of(r))} for r in report.cells(report.summary.unattributed)]


def _counts_view(counts: Any) -> dict[str, Any] | None:
    if counts is None:
        return None
    return {"text": counts.text, "worst": counts.worst.value if counts.worst else "", "total": counts.total,
            "passed": counts.passed}


def _lazy_blob(results: list[CellResult]) -> str:
    """The PASS cells' steps, as one gzip-compressed JSON object (base64): unpacked on demand."""
    data = {"cell-" + _slug(r.id): r.trace for r in results if r.status == Status.PASS and r.trace}
    raw = json.dumps(data, separators=(",", ":"), default=str, ensure_ascii=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode("ascii")


def render_html(report: RunResult, out_path: Path | None = None, docs_url: str | None = None,
                title: str | None = None, spec: str = "wire-spec.md") -> str:
    links = Links(docs_base(out_path, docs_url), spec)
    s = report.summary
    views = {r.id: _cell_view(r, links) for r in report.results}
    problems = report.cells(s.problems)
    failures = [views[r.id] for r in problems if r.status == Status.FAIL] + \
               [views[r.id] for r in problems if r.status == Status.XPASS]
    errors = [{"cause": cause, "cells": [views[c.id] for c in cells]}
              for cause, cells in fold_errors([r for r in problems if r.status == Status.ERROR])]
    matrices = []
    for m in s.pair_matrices:
        rows = []
        for req in m.labels:
            row = []
            for resp in m.labels:
                counts = m.cells.get((req, resp))
                pid = "pair-" + _slug(f"{m.broker}-{req}-{resp}")
                row.append({"id": pid, "req": req, "resp": resp, "counts": _counts_view(counts),
                            "cells": [views[i] for i in counts.cells] if counts else []})
            rows.append({"label": req, "cells": row})
        matrices.append({"broker": m.broker, "labels": m.labels, "rows": rows})
    grids = [{"matrix": g.matrix, "broker": g.broker, "scenarios": g.scenarios,
              "rows": [{"label": label, "cells": [views.get(g.cells.get((label, sc), ""), None) for sc in g.scenarios]}
                       for label in g.labels]} for g in s.probe_grids]
    peer_rows = []
    for row in s.peer_rows:
        name = row.label.split("@")[0].split("+")[0]
        peer = report.peers.get(name)
        hello = peer.hello if peer else {}
        peer_rows.append({"label": row.label, "columns": [_counts_view(row.columns.get(key)) for key, _ in s.peer_columns],
                          "binding": hello.get("binding") or "", "client": hello.get("client") or "",
                          "mutants": mutants_text(hello) if hello else "",
                          "unavailable": (peer.unavailable or "").splitlines()[0] if peer and peer.unavailable else ""})
    level_names = [lv for lv in LEVEL_ORDER
                   if any(lv in by for by in s.levels.values())]
    level_rows = [{"label": label, "columns": [_counts_view(s.levels[label].get(lv)) for lv in level_names]}
                  for label in report.labels if label in s.levels]
    # "asserted by" comes from the clauses the scenarios' checks assert, never from `rules:`.
    rules = [{"id": row.rule, "href": links.rule(row.rule), "title": row.title,
              "checked_by": [sid + (f" ({', '.join(row.clauses_by.get(sid, ()))})" if row.clauses_by.get(sid) else "")
                             for sid in row.checked_by],
              "failing": [views[i] for i in row.failing], "seen_as": [views[i] for i in row.seen_as]} for row in s.rules]
    scenarios = [{"id": sid, "cells": [views[i] for i in ids], "title": views[ids[0]]["title"] if ids else "",
                  "rules": (views[ids[0]]["clauses"] or views[ids[0]]["rules"]) if ids else []} for sid, ids in s.scenarios.items()]
    counts = [(st.value, report.count(st)) for st in COUNT_ORDER if report.count(st)]
    suite = report.meta.get("suite") or {}
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["linkify"] = lambda text: _linkify(text, links)
    return env.from_string(TEMPLATE).render(
        title=title or "acemq-interop report", report=report, ok=report.ok, counts=counts, total=len(report.results),
        failures=failures, errors=errors, todo=_todo_view(report, links), unattributed=_unattributed_view(report),
        xfails=[views[i] for i in s.xfails], matrices=matrices, grids=grids,
        peer_columns=s.peer_columns, peer_rows=peer_rows, rules=rules, scenarios=scenarios,
        level_names=level_names, level_rows=level_rows,
        brokers=report.brokers, peers=report.peers, suite=suite, meta=report.meta,
        started=report.meta.get("started_at") or report.started_at, duration=f"{report.duration_s:.1f}",
        lazy=_lazy_blob(report.results), bad=[b.value for b in BAD_STATUSES], links=links,
    )


def write_html(report: RunResult, path: Path, docs_url: str | None = None) -> None:
    path.write_text(render_html(report, path, docs_url), encoding="utf-8")


def spec_page() -> str:
    """docs/wire-spec.md as a plain HTML page whose headings carry GitHub's anchors (for a published site)."""
    from .paths import DOCS_DIR

    text = (DOCS_DIR / "wire-spec.md").read_text(encoding="utf-8")
    out, block = [], []

    def flush() -> None:
        if block:
            out.append(f"<pre>{escape(chr(10).join(block))}</pre>")
            block.clear()

    for line in text.splitlines():
        match = re.match(r"^(#{1,4})\s+(.*)$", line)
        if match:
            flush()
            level = len(match.group(1))
            out.append(f'<h{level} id="{github_anchor(match.group(2))}">{escape(match.group(2))}</h{level}>')
        elif line.strip():
            block.append(line)
        else:
            flush()
    flush()
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>acemq wire specification</title><style>'
            'body{font:14px/1.45 system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}'
            'pre{white-space:pre-wrap;font:13px/1.45 system-ui,sans-serif;margin:.4em 0}h3{margin-top:1.6em}</style></head><body>'
            + "\n".join(out) + "</body></html>\n")


TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }} {{ started }}</title>
<style>
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0 auto;padding:1em 1.5em 4em;color:#1d1d1f;max-width:1400px}
h1{margin:.2em 0}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}h3{margin:.3em 0}
a{color:#0b5cad}code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#f6f7f9;border:1px solid #e3e5e8;border-radius:4px;padding:6px 8px;margin:.3em 0;white-space:pre-wrap;overflow-wrap:anywhere;max-height:28em;overflow-y:auto}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #d5d8dc;padding:4px 8px;vertical-align:top}th{background:#f1f3f5;text-align:left}
.wrap{overflow-wrap:anywhere;word-break:break-word}.nw{white-space:nowrap}
.PASS{background:#dcf3dc}.FAIL,.XPASS{background:#f9d0d0}.ERROR{background:#f3d3f3}.SKIP{background:#eceff1;color:#666}.XFAIL{background:#fcefc4}
.badge{display:inline-block;padding:0 .45em;border-radius:3px;font-weight:600;font-size:12px;border:1px solid rgba(0,0,0,.12)}
.verdict{padding:.8em 1em;border-radius:6px;margin:.8em 0;font-size:16px}
.verdict.bad{background:#fbe3e3;border:1px solid #e8a6a6}.verdict.good{background:#e3f6e3;border:1px solid #9fd89f}
.problem{border:1px solid #e2c4c4;border-left:6px solid #d64545;border-radius:4px;padding:.5em .8em;margin:.7em 0;background:#fffafa}
.problem.ERROR{border-left-color:#a444a4;background:#fff9ff}.problem.XPASS{border-left-color:#c0392b}
.eo{display:grid;grid-template-columns:1fr 1fr;gap:.6em}.eo>div{min-width:0}
.rerun{display:block;background:#f3f4f6;padding:3px 6px;border-radius:3px;overflow-wrap:anywhere;white-space:pre-wrap}
.matrix td{text-align:center;min-width:5.5em}.matrix td a{display:block;text-decoration:none;color:inherit;font-weight:600}
.drill{display:none;border:1px solid #ccd;border-radius:4px;padding:.5em .8em;margin:.5em 0;background:#fbfcff}
.drill:target{display:block}
.grid td{text-align:center;font-size:12px}.grid th.sc{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:500;font-size:12px;white-space:nowrap;max-height:22em}
.grid td a{text-decoration:none;color:inherit;display:block}
.cell{border-top:1px solid #e5e5e5;padding:.4em 0}.cell.inline{padding:.6em 0}
.cell h3{font-size:15px}.muted{color:#666}
.seq{table-layout:fixed;width:100%}.seq td,.seq th{border:none;border-bottom:1px solid #eef0f2;padding:2px 4px}
.seq th.lane{text-align:center;font-size:12px;overflow-wrap:anywhere;background:#f4f6f8;border-radius:3px}
.seq th.lane.exchange{background:#fff1d6}.seq th.lane.queue{background:#e3efff}
.seq td.ar{position:relative;height:1.6em;padding:0}
.seq td.ar.mid::before,.seq td.ar[class*="from"]::before,.seq td.ar[class*="to"]::before{content:"";position:absolute;top:50%;height:2px;background:#44607d;left:0;right:0}
.seq td.ar.from-r::before{left:50%}.seq td.ar.from-l::before{right:50%}.seq td.ar.to-r::before{right:50%}.seq td.ar.to-l::before{left:50%}
.seq td.ar.to-r::after{content:"\25B6";position:absolute;left:calc(50% - 12px);top:calc(50% - .68em);color:#44607d}
.seq td.ar.to-l::after{content:"\25C0";position:absolute;left:50%;top:calc(50% - .68em);color:#44607d}
.seq td.ar.self::after{content:"\25CF";position:absolute;left:calc(50% - 5px);top:calc(50% - .7em);color:#44607d}
.seq tr.routed td.ar::before{background:#9fb3c8}.seq tr.unroutable td{background:#fdeaea}
.seq td.what{overflow-wrap:anywhere;font-size:12.5px}
.h{display:inline-block;margin:1px 6px 1px 0}.ty{font-family:ui-monospace,monospace;font-weight:700;padding:0 3px;border-radius:2px;background:#e9e3ff;color:#3c2a8a}
.ty.x{background:#ffe0b3;color:#7a3b00}
.absent{font-style:italic;color:#a33}
details>summary{cursor:pointer}
.steps td{font-size:12.5px}.steps td.d{width:70%}.steps tr.failed td{background:#fde7e7}
.toc a{margin-right:1em}
table.todo{width:100%;table-layout:fixed;font-size:13px}table.todo td,table.todo th{overflow-wrap:anywhere;padding:2px 6px}
h3 .note{font-weight:400;font-size:13px}
ol.failures{padding-left:1.4em}.failure{margin:.5em 0}.failure:target{background:#fff6d6}.who{font-size:13px}
.steps tr:target td{outline:2px solid #d64545}.not-evaluated{margin:.4em 0}.not-evaluated ul{margin:.2em 0}
</style></head><body>
<header>
<h1>{{ title }}</h1>
<div class="muted">{{ started }} &middot; suite {{ suite.get('version', '') }}{% if suite.get('git_commit') %} ({{ suite.git_commit[:12] }}){% endif %}
 &middot; {{ total }} cells in {{ duration }}s &middot; {% for b in brokers %}{{ b.description }}{% if not loop.last %}; {% endif %}{% endfor %}</div>
<div id="verdict" class="verdict {{ 'good' if ok else 'bad' }}"><b>{{ 'PASSED' if ok else 'FAILED' }}</b>:
{% for st, n in counts %}<span class="badge {{ st }}">{{ n }} {{ st }}</span> {% endfor %} of {{ total }} cells.
{% if not ok %}{{ failures|length }} conformance failure(s){% if errors %}, {{ errors|map(attribute='cells')|map('length')|sum }} error(s) in {{ errors|length }} cause(s){% endif %}: listed first below.{% endif %}
{% if meta.get('aborted') %}<div id="aborted"><b>The run was cut short:</b> {{ meta.aborted }}. The cells that ran keep their results; the rest are ERROR (not run).</div>{% endif %}</div>
<nav class="toc">{% if todo %}<a href="#todo">to do</a>{% endif %}<a href="#problems">needs attention</a><a href="#matrices">matrices</a><a href="#peers">per peer</a><a href="#rules">rules</a>{% if xfails %}<a href="#xfails">known failures</a>{% endif %}<a href="#cells">every cell</a></nav>
</header>

<section id="problems"><h2>Needs attention ({{ failures|length + errors|map(attribute='cells')|map('length')|sum }})</h2>
{% if not failures and not errors %}<p>Nothing: every cell passed or is a known failure.</p>{% endif %}
{% if todo or unattributed %}<div id="todo"><h3>To do, per peer <span class="muted note">every clause each peer broke, once, however many cells broke it; the clearest cell (the fewest other clauses broken beside it) links to its failure</span></h3>
{% if todo %}<table class="todo"><colgroup><col style="width:10em"><col style="width:30%"><col style="width:4em"><col style="width:28%"><col><col></colgroup>
<thead><tr><th>peer</th><th>clause</th><th>cells</th><th>clearest cell</th><th>expected</th><th>observed</th></tr></thead>
{% for p in todo %}<tbody data-peer="{{ p.label }}">{% for t in p.rows %}<tr>{% if loop.first %}<th class="wrap" rowspan="{{ p.rows|length + (1 if p.more else 0) }}">{{ p.label }}<br><span class="muted">{{ p.total }} clause(s)</span></th>{% endif %}
<td><a href="{{ t.href }}" title="{{ t.text }}"><b>{{ t.clause }}</b></a> <span class="muted">{{ t.title }}</span></td><td style="text-align:center">{{ t.cells }}</td>
<td><a class="mono" href="#{{ t.target }}">{{ t.clearest }}</a>{% if t.shared %} <span class="muted">{{ t.shared }}</span>{% endif %}</td><td><code>{{ t.expected }}</code></td><td><code>{{ t.observed }}</code></td></tr>{% endfor %}
{% if p.more %}<tr><td colspan="5"><details><summary>and {{ p.more|length }} more clause(s)</summary><ul>{% for t in p.more %}<li><a href="{{ t.href }}"><b>{{ t.clause }}</b></a> {{ t.title }}: {{ t.cells }} cell(s), clearest <a class="mono" href="#{{ t.target }}">{{ t.clearest }}</a></li>{% endfor %}</ul></details></td></tr>{% endif %}
</tbody>{% endfor %}</table>{% endif %}
{% if unattributed %}<div id="unattributed"><b>Not charged to one peer</b> (several peers play the side that broke it):<ul>{% for u in unattributed %}<li><a class="mono wrap" href="#{{ u.anchor }}">{{ u.id }}</a>: {{ u.clauses }}; could be any of: {{ u.suspects }}</li>{% endfor %}</ul></div>{% endif %}
</div><h3>Cells</h3>{% endif %}
<ol id="failures" class="problems">
{% for x in failures %}<li class="problem {{ x.status }}" data-cell="{{ x.id }}">
<div><span class="badge {{ x.status }}">{{ x.status }}</span> <a href="#{{ x.anchor }}" class="mono wrap">{{ x.id }}</a></div>
{% if x.status == 'FAIL' %}<div class="rule">broke <a href="{{ x.rule_href }}"><b>{{ x.rule }}</b></a> {% if x.rule_id %}({{ x.rule_id }} {{ x.rule_title }}){% else %}{{ x.rule_title }}{% endif %}{% if x.clause_text %}: <i>{{ x.clause_text }}</i>{% endif %}{% if x.seen_as %} &middot; seen as <a href="{{ x.seen_as_href }}">{{ x.seen_as }}</a>{% endif %}</div>
<div class="wrap">{{ x.message }}</div>
<div class="eo"><div>expected<pre>{{ x.expected }}</pre></div><div>observed<pre{% if x.observed_absent %} class="absent"{% endif %}>{{ x.observed }}</pre></div></div>
{% if x.more %}<div>and <a href="#{{ x.anchor }}-failures">{{ x.more }}</a></div>{% endif %}
{% else %}<div class="wrap">{{ x.reason|linkify }}</div>{% endif %}
<div>rerun: <code class="rerun">{{ x.rerun }}</code></div>
<div><a href="#{{ x.anchor }}">evidence</a>{% if x.transcript_len %} &middot; <a href="#{{ x.anchor }}-transcript">broker transcript ({{ x.transcript_len }} messages)</a>{% endif %}</div>
</li>{% endfor %}
</ol>
{% if errors %}<h3>Errors, by cause</h3><ol id="errors" class="problems">
{% for g in errors %}<li class="problem ERROR">
<div><span class="badge ERROR">ERROR</span> {{ g.cells|length }} cell(s): <span class="wrap">{{ g.cause }}</span></div>
{% set first = g.cells[0] %}{% if first.message.strip() != g.cause.strip() %}<pre>{{ first.message }}</pre>{% endif %}<div>first: <a href="#{{ first.anchor }}" class="mono wrap">{{ first.id }}</a></div>
<div>rerun: <code class="rerun">{{ first.rerun }}</code></div>
{% if g.cells|length > 1 %}<details><summary>all {{ g.cells|length }} cells with this cause</summary><ul>{% for c in g.cells %}<li><a class="mono wrap" href="#{{ c.anchor }}">{{ c.id }}</a></li>{% endfor %}</ul></details>{% endif %}
</li>{% endfor %}</ol>{% endif %}
</section>

<section id="matrices"><h2>Compatibility</h2>
{% for m in matrices %}<h3>Pairs: requester (row) &times; responder (column){% if brokers|length > 1 %} on {{ m.broker }}{% endif %}</h3>
<p class="muted">Scenarios passed per pair; click a pair for its scenarios.</p>
<table class="matrix"><tr><th>requester \ responder</th>{% for c in m.labels %}<th class="wrap">{{ c }}</th>{% endfor %}</tr>
{% for row in m.rows %}<tr><th class="wrap">{{ row.label }}</th>{% for p in row.cells %}<td class="{{ p.counts.worst if p.counts else '' }}">{% if p.counts %}<a href="#{{ p.id }}" title="{{ p.req }} requests, {{ p.resp }} responds">{{ p.counts.text }}</a>{% endif %}</td>{% endfor %}</tr>{% endfor %}
</table>
{% for row in m.rows %}{% for p in row.cells %}{% if p.counts %}<div class="drill" id="{{ p.id }}"><b>{{ p.req }}</b> requests, <b>{{ p.resp }}</b> responds{% if brokers|length > 1 %}, on {{ m.broker }}{% endif %}: {{ p.counts.text }}
<table><tr><th>scenario</th><th>status</th><th>rule broken / reason</th></tr>{% for c in p.cells %}<tr><td class="mono"><a href="#{{ c.anchor }}">{{ c.scenario }}</a></td><td class="{{ c.status }}">{{ c.status }}</td><td class="wrap">{% if c.rule %}<a href="{{ c.rule_href }}">{{ c.rule }}</a> {{ c.first_line }}{% if c.more %} <span class="muted">({{ c.more }})</span>{% endif %}{% elif c.status == 'ERROR' %}{{ c.first_line }}{% else %}{{ c.reason|linkify }}{% endif %}</td></tr>{% endfor %}</table></div>{% endif %}{% endfor %}{% endfor %}
{% endfor %}
{% for g in grids %}<h3>{{ 'Requesters' if g.matrix == 'requesters' else 'Responders' }} against the probe: peer &times; scenario{% if brokers|length > 1 %} on {{ g.broker }}{% endif %}</h3>
<div style="overflow-x:auto"><table class="grid" id="grid-{{ g.matrix }}"><tr><th>peer</th>{% for sc in g.scenarios %}<th class="sc" title="{{ sc }}">{{ sc }}</th>{% endfor %}</tr>
{% for row in g.rows %}<tr><th class="nw">{{ row.label }}</th>{% for c in row.cells %}<td class="{{ c.status if c else '' }}">{% if c %}<a href="#{{ c.anchor }}" title="{{ c.id }}">{{ c.status }}</a>{% endif %}</td>{% endfor %}</tr>{% endfor %}
</table></div>{% endfor %}
</section>

<section id="peers"><h2>Per-peer conformance</h2>
<table><tr><th>peer</th>{% for _, t in peer_columns %}<th>{{ t }}</th>{% endfor %}<th>mutant coverage</th><th>binding on client</th></tr>
{% for row in peer_rows %}<tr><th class="nw">{{ row.label }}</th>{% for c in row.columns %}<td class="{{ c.worst if c else '' }}" style="text-align:center">{{ c.text if c else '' }}</td>{% endfor %}
<td>{{ row.mutants }}</td><td class="wrap">{% if row.unavailable %}<span class="muted">unavailable: {{ row.unavailable }}</span>{% else %}{{ row.binding }} on {{ row.client }}{% endif %}</td></tr>{% endfor %}
</table>
{% if level_rows %}<h3>By conformance level</h3>
<table><tr><th>peer</th>{% for lv in level_names %}<th>{{ lv }}</th>{% endfor %}</tr>
{% for row in level_rows %}<tr><th class="nw">{{ row.label }}</th>{% for c in row.columns %}<td class="{{ c.worst if c else '' }}" style="text-align:center">{{ c.text if c else '' }}</td>{% endfor %}</tr>{% endfor %}
</table>{% endif %}
</section>

<section id="rules"><h2>Rules</h2>
<p class="muted">"Broke it": cells whose FAIL names a clause of the rule. "Seen through it": cells where a check of this rule failed because another rule's clause broke (the check's <span class="mono">consequence_of</span>); those count as breaking that other rule.</p>
<table><tr><th>rule</th><th>title</th><th>asserted by (its clauses)</th><th>cells breaking it</th><th>seen through it, broken elsewhere</th></tr>
{% for r in rules %}<tr><td class="mono nw"><a href="{{ r.href }}">{{ r.id }}</a></td><td>{{ r.title }}</td><td class="mono wrap" style="font-size:12px">{{ r.checked_by|join(', ') or '(no scenario in this run)' }}</td>
<td class="{{ 'FAIL' if r.failing else '' }} wrap">{% for c in r.failing %}<a class="mono" style="font-size:12px" href="#{{ c.anchor }}">{{ c.id }}</a> <span class="mono" style="font-size:12px">{{ c.rule }}</span>{% if not loop.last %}<br>{% endif %}{% endfor %}</td>
<td class="wrap">{% for c in r.seen_as %}<a class="mono" style="font-size:12px" href="#{{ c.anchor }}">{{ c.id }}</a> <span class="mono" style="font-size:12px">{{ c.seen_as }} &rarr; {{ c.rule }}</span>{% if not loop.last %}<br>{% endif %}{% endfor %}</td></tr>{% endfor %}
</table></section>

{% if xfails %}<section id="xfails"><h2>Known failures (XFAIL)</h2><ul>
{% for x in xfails %}<li><a class="mono wrap" href="#{{ x.anchor }}">{{ x.id }}</a>: {{ x.reason|linkify }}</li>{% endfor %}</ul></section>{% endif %}

{% macro transcript(x) %}<div id="{{ x.anchor }}-transcript" class="transcript"><b>the broker's transcript</b> (firehose: every publish and delivery of this cell, in the order the broker saw them)
<table class="seq"><colgroup><col style="width:3.5em">{% for l in x.sequence.lanes %}<col style="width:{{ (42 / x.sequence.lanes|length)|round(1) }}%">{% endfor %}<col></colgroup>
<tr><th>t (s)</th>{% for l in x.sequence.lanes %}<th class="lane {{ l.kind }}" title="{{ l.kind }}">{{ l.name }}</th>{% endfor %}<th>message</th></tr>
{% for row in x.sequence.rows %}<tr class="msg {{ row.event }}" data-n="{{ row.n }}"><td class="mono">{{ row.t }}</td>{% for a in row.span %}<td class="ar {{ a }}"></td>{% endfor %}
<td class="what"><b>{{ row.label }}</b>{% if row.event == 'publish' %} &middot; by {{ row.who }}{% endif %}<br>
{% for p in row.props %}<span class="h mono">{{ p.name }}=<b>{{ p.value }}</b></span>{% endfor %}
<br>{% for h in row.headers %}<span class="h mono">{{ h.name }}: <span class="ty {{ h.type }}" title="AMQP field type">{{ h.type }}</span> {{ h.value }}</span>{% else %}<span class="h muted absent">no headers</span>{% endfor %}
{% if row.body %}<details><summary class="muted">body ({{ row.body_length }} bytes)</summary><pre>{{ row.body }}</pre></details>{% endif %}</td></tr>
{% for q in row.routed %}<tr class="routed"><td></td>{% for a in q.span %}<td class="ar {{ a }}"></td>{% endfor %}<td class="what muted">routed to {{ q.queue }}</td></tr>{% endfor %}
{% if row.unroutable %}<tr class="unroutable"><td></td>{% for l in x.sequence.lanes %}<td></td>{% endfor %}<td class="what">routed to no queue</td></tr>{% endif %}
{% endfor %}</table></div>{% endmacro %}
<section id="cells"><h2>Every cell</h2>
{% for sc in scenarios %}<h3 class="mono">{{ sc.id }}</h3><p class="muted">{{ sc.title }} &middot; {% for r in sc.rules %}<a href="{{ r.href }}">{{ r.id }}</a>{% if not loop.last %}, {% endif %}{% endfor %}</p>
{% for x in sc.cells %}<div class="cell{{ ' inline' if x.inline else '' }}" id="{{ x.anchor }}" data-status="{{ x.status }}">
<div><span class="badge {{ x.status }}">{{ x.status }}</span> <span class="mono wrap">{{ x.id }}</span> <span class="muted">{{ x.duration }}s{% if brokers|length > 1 %} &middot; {{ x.broker }}{% endif %}</span></div>
{% if x.inline %}
{% if x.failures %}<div id="{{ x.anchor }}-failures"><b>{{ x.failures|length }} failure(s)</b>, each charged to the peer playing the side its clause obliges:
<ol class="failures">{% for f in x.failures %}<li class="failure" id="{{ f.id }}">
<div class="wrap">broke <a href="{{ f.href }}"><b>{{ f.clause }}</b></a> {% if f.rule_id %}({{ f.rule_id }} {{ f.rule_title }}){% else %}{{ f.rule_title }}{% endif %}{% if f.clause_text %}: <i>{{ f.clause_text }}</i>{% endif %}{% if f.seen_as %} &middot; seen as <a href="{{ f.seen_as_href }}">{{ f.seen_as }}</a>{% endif %}</div>
<div class="who">{{ f.side }} side{% if f.role and f.role != f.side %} (the {{ f.role }}){% endif %}: {% if f.peer %}peer <b>{{ f.peer }}</b>{% else %}not one peer: {{ f.charged }}{% endif %}</div>
<div class="wrap">check: <span class="mono">{{ f.check }}</span></div>
<div class="eo"><div>expected<pre>{{ f.expected }}</pre></div><div>observed<pre{% if f.observed_absent %} class="absent"{% endif %}>{{ f.observed }}</pre></div></div>
{% if f.step %}<div>evidence: <a href="#{{ x.anchor }}-step-{{ f.step.n }}">step {{ f.step.n }}</a> <span class="muted wrap">{{ f.step.summary }}</span></div>{% endif %}
</li>{% endfor %}</ol></div>
{% elif x.status == 'FAIL' %}<p class="wrap">broke <a href="{{ x.rule_href }}"><b>{{ x.rule }}</b></a> {% if x.rule_id %}({{ x.rule_id }} {{ x.rule_title }}){% else %}{{ x.rule_title }}{% endif %}{% if x.clause_text %}: <i>{{ x.clause_text }}</i>{% endif %}{% if x.seen_as %} &middot; seen as <a href="{{ x.seen_as_href }}">{{ x.seen_as }}</a>{% endif %} &mdash; {{ x.message }}</p>
<div class="eo"><div>expected<pre>{{ x.expected }}</pre></div><div>observed<pre{% if x.observed_absent %} class="absent"{% endif %}>{{ x.observed }}</pre></div></div>{% endif %}
{% if x.not_evaluated %}<div class="not-evaluated"><b>not evaluated</b> ({{ x.not_evaluated|length }}): an earlier failure left these checks without their input<ul>{% for n in x.not_evaluated %}<li><a href="{{ n.href }}">{{ n.clause }}</a> <span class="mono wrap">{{ n.check }}</span>: {{ n.needs }}</li>{% endfor %}</ul></div>{% endif %}
{% if x.status == 'ERROR' %}<pre>{{ x.message }}</pre>{% endif %}
{% if x.reason %}<p class="wrap">{{ x.reason|linkify }}</p>{% endif %}
{% if x.status != 'SKIP' %}<div>rerun: <code class="rerun">{{ x.rerun }}</code></div>{% endif %}
{% if x.failing %}<div class="failing"><b>the failing check</b> (step {{ x.failing.n }} of {{ x.steps|length }}): {{ x.failing.summary }}<pre>{{ x.failing.details }}</pre></div>{% endif %}
{% if x.sequence %}{{ transcript(x) }}{% elif x.status in ('FAIL', 'XPASS') %}<p class="muted">No broker transcript for this cell (run with the default --transcripts failed).</p>{% endif %}
<details class="steps"><summary>every step ({{ x.steps|length }})</summary><table class="steps" style="width:100%;table-layout:fixed"><colgroup><col style="width:3em"><col style="width:4em"><col style="width:28%"><col></colgroup>
{% for st in x.steps %}<tr id="{{ x.anchor }}-step-{{ st.n }}" class="{{ 'failed' if st.failed else '' }}"><td>{{ st.n }}</td><td class="mono">{{ st.t }}</td><td class="wrap">{{ st.summary }}</td><td class="d"><pre>{{ st.details }}</pre></td></tr>{% endfor %}</table></details>
{% for peer, tail in x.stderr.items() %}<details><summary>{{ peer }} stderr (tail)</summary><pre>{{ tail }}</pre></details>{% endfor %}
{% else %}{% if x.sequence %}<details><summary class="muted">the broker's transcript ({{ x.transcript_len }} messages)</summary>{{ transcript(x) }}</details>{% endif %}
<details class="lazy" data-id="{{ x.anchor }}"><summary class="muted">steps</summary><div class="body muted">unpacking&hellip;</div></details>{% endif %}
</div>{% endfor %}{% endfor %}
</section>
<script id="lazy-steps" type="application/octet-stream">{{ lazy }}</script>
<script>
(function(){
  // A link to a step (a failure's evidence) lands inside a closed <details>: open it.
  function reveal(){
    var id=decodeURIComponent(location.hash.slice(1)),el=id&&document.getElementById(id);
    if(!el)return;
    var opened=false;
    for(var p=el.parentElement;p;p=p.parentElement){if(p.tagName==='DETAILS'&&!p.open){p.open=true;opened=true;}}
    if(opened)el.scrollIntoView();
  }
  window.addEventListener('hashchange',reveal);reveal();
  var cache=null;
  function load(){
    if(cache) return cache;
    var b=atob(document.getElementById('lazy-steps').textContent.trim());
    var bytes=new Uint8Array(b.length);for(var i=0;i<b.length;i++)bytes[i]=b.charCodeAt(i);
    if(!window.DecompressionStream){cache=Promise.resolve(null);return cache;}
    var s=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    cache=new Response(s).text().then(JSON.parse);return cache;
  }
  document.querySelectorAll('details.lazy').forEach(function(d){
    d.addEventListener('toggle',function(){
      if(!d.open||d.dataset.done)return;d.dataset.done='1';
      load().then(function(all){
        var body=d.querySelector('.body');
        if(!all){body.textContent='this browser cannot unpack the steps: they are in results.json';return;}
        var steps=all[d.dataset.id]||[];body.textContent='';
        steps.forEach(function(st,i){var p=document.createElement('pre');p.textContent=(i+1)+'. '+JSON.stringify(st,null,1);body.appendChild(p);});
        if(!steps.length)body.textContent='no steps';
      });
    });
  });
})();
</script>
</body></html>
"""
