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

from .text import (LEVEL_ORDER, MAX_TODO_SHOWN, charged_to, fold_errors, mutants_text, others_text, shared_text,
                   shared_clauses, short_value, slug, suspects_of)
from ..results.model import COUNT_ORDER, BAD_STATUSES, CellResult, Failure, RunResult, Status, TodoItem

TEMPLATES_DIR = Path(__file__).parent / "templates"  # the page itself: templates/report.html.j2
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
    from ..core.paths import DOCS_DIR

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
    from ..core.paths import DOCS_DIR

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
    from ..spec.catalogue import catalogue

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
    from ..spec.catalogue import catalogue

    cat = catalogue()
    steps = _steps(r.trace)
    clause = cat.clauses.get(r.rule or "") if r.rule and "." in r.rule else None
    anchor = "cell-" + slug(r.id)
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
        "transcript_gap": r.transcript_gap,
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
    from ..spec.catalogue import catalogue

    cat = catalogue()
    cell, f = report.cell(item.clearest), item.failure
    clause = cat.clauses.get(item.clause)
    anchor = "cell-" + slug(cell.id)
    # The link lands on the clearest cell's failure of this clause: its check, expected
    # against observed and the trace entry, one click from the top of the page.
    number = next((i for i, g in enumerate(cell.failures, 1) if g == f), None)
    return {"clause": item.clause, "href": links.rule(item.clause), "title": cat.title(item.clause),
            "text": clause.text if clause else "", "cells": len(item.cells), "clearest": cell.id,
            "target": f"{anchor}-failure-{number}" if number else anchor, "shared": shared_text(f),
            "expected": short_value(f.expected), "observed": short_value(f.observed)}


def _unattributed_view(report: RunResult) -> list[dict[str, Any]]:
    return [{"id": r.id, "anchor": "cell-" + slug(r.id), "clauses": ", ".join(shared_clauses(r)),
             "suspects": ", ".join(suspects_of(r))} for r in report.cells(report.summary.unattributed)]


def _counts_view(counts: Any) -> dict[str, Any] | None:
    if counts is None:
        return None
    return {"text": counts.text, "worst": counts.worst.value if counts.worst else "", "total": counts.total,
            "passed": counts.passed}


def _lazy_blob(results: list[CellResult]) -> str:
    """The PASS cells' steps, as one gzip-compressed JSON object (base64): unpacked on demand."""
    data = {"cell-" + slug(r.id): r.trace for r in results if r.status == Status.PASS and r.trace}
    raw = json.dumps(data, separators=(",", ":"), default=str, ensure_ascii=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode("ascii")


_FOREIGN_CSS = {"works": "PASS", "fails": "FAIL", "lacks": "SKIP", "error": "ERROR", "skip": "SKIP", "absent": ""}


def _foreign_view(report: RunResult) -> list[dict[str, Any]]:
    """The foreign-interop matrix: each case links its cell, each note its evidence."""
    from . import foreign_view

    def anchor(cell_id: str | None) -> str:
        return "cell-" + slug(cell_id) if cell_id else ""

    out = []
    for t in foreign_view.tables(report):
        rows = [{"binding": row.binding,
                 "cases": [{"short": row.cases[c].short, "css": _FOREIGN_CSS[row.cases[c].state],
                            "reason": row.cases[c].reason, "anchor": anchor(row.cases[c].cell)} for c in t.cases]}
                for row in t.rows]
        notes = [{"line": foreign_view.note_line(n, len(t.rows)), "anchor": anchor(n.cell)} for n in foreign_view.notes(t)]
        out.append({"heading": t.heading, "titles": t.titles, "rows": rows, "notes": notes})
    return out


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
                pid = "pair-" + slug(f"{m.broker}-{req}-{resp}")
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
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["linkify"] = lambda text: _linkify(text, links)
    return env.get_template("report.html.j2").render(
        title=title or "acemq-interop report", report=report, ok=report.ok, counts=counts,
        total=len(report.results) - len(s.foreign_cells), foreign=_foreign_view(report),
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
    from ..core.paths import DOCS_DIR

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

