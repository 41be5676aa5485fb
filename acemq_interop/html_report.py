"""One self-contained HTML page: the matrices, every cell with a stable anchor, evidence one click away."""
from __future__ import annotations

import json
from pathlib import Path

import jinja2

from .model import WORST_FIRST, RunResult
from .results_files import cell_record

TEMPLATE = jinja2.Template(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>acemq-interop report {{ started_at }}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:center}
th{background:#f4f4f4}.PASS{background:#d9f2d9}.FAIL,.XPASS{background:#f8c9c9}.ERROR{background:#f0c9f0}
.SKIP{background:#eee;color:#777}.XFAIL{background:#fbeec1}td.l{text-align:left}
pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:30em}a{color:#036}
</style></head><body>
<h1>acemq-interop</h1>
<p>P pass &middot; F fail &middot; E error &middot; s skip &middot; x known failure &middot; X! known failure that passed. Each letter links to its cell's evidence.</p>
<p>{{ started_at }} &middot; {{ cells|length }} cells &middot; {{ summary }} &middot; {{ duration }}s on {{ broker }}</p>
{% if brokers|length > 1 or brokers[0].product %}<p>{% for b in brokers %}{{ b.description }}{% if not loop.last %} &middot; {% endif %}{% endfor %}</p>{% endif %}
<h2>Peers</h2>
<table><tr><th>peer</th><th>language</th><th>binding</th><th>client</th><th>build</th><th>start-up</th><th>note</th></tr>
{% for name, p in peers.items() %}<tr><td>{{ name }}</td><td>{{ p.language }}</td><td>{{ p.hello.get('binding','') }}</td>
<td>{{ p.hello.get('client','') }}</td><td>{{ '%.1fs'|format(p.build_s) if p.build_s is not none else '' }}</td>
<td>{{ '%.2fs'|format(p.startup_s) if p.startup_s is not none else '' }}</td><td class="l">{{ p.unavailable or '' }}</td></tr>{% endfor %}
</table>
{% for m in matrices %}<h2>Compatibility matrix (requester row &times; responder column){% if brokers|length > 1 %} on {{ m.broker }}{% endif %}</h2>
<table><tr><th>requester \\ responder</th>{% for c in m.labels %}<th>{{ c }}</th>{% endfor %}</tr>
{% for r in m.labels %}<tr><th>{{ r }}</th>{% for c in m.labels %}{% set counts = m.cells.get((r, c)) %}
<td class="{{ counts.worst if counts else '' }}">{% if counts %}{% for i in counts.cells %}{% set x = by_id[i] %}<a href="#{{ x.id }}" title="{{ x.scenario }}: {{ x.status }}">{{ short[x.status] }}</a>{% endfor %}{% endif %}</td>
{% endfor %}</tr>{% endfor %}</table>{% endfor %}
<h2>Scenarios</h2>
<table><tr><th>scenario</th><th>rules</th><th>title</th><th>cells</th></tr>
{% for sid, cs in by_scenario.items() %}<tr><td class="l">{{ sid }}</td><td>{{ cs[0].rules|join(', ') }}</td><td class="l">{{ cs[0].title }}</td>
<td class="l">{% for x in cs %}<a class="{{ x.status }}" href="#{{ x.id }}" title="{{ x.id }}">&nbsp;{{ short[x.status] }}&nbsp;</a> {% endfor %}</td></tr>{% endfor %}
</table>
<h2>Rules</h2>
<table><tr><th>rule</th><th>title</th><th>checked by</th><th>cells failing it</th></tr>
{% for row in rules %}<tr><td>{{ row.rule }}</td><td class="l">{{ row.title }}</td>
<td class="l">{{ row.checked_by|join(', ') or '(no scenario)' }}</td>
<td class="{{ 'FAIL' if row.failing else '' }}">{% for i in row.failing %}<a href="#{{ i }}">{{ i }}</a><br>{% endfor %}</td></tr>{% endfor %}
</table>
<h2>Cells</h2>
{% for x in cells %}<div id="{{ x.id }}"><h3><span class="{{ x.status }}">&nbsp;{{ x.status }}&nbsp;</span> {{ x.id }}</h3>
<p>{{ x.title }} ({{ x.rules|join(', ') }}) &middot; {{ x.duration_s }}s</p>
{% if x.status in ('FAIL',) %}<p><b>broke {{ x.failed_rule }}</b>: {{ x.message }}<br>expected: <code>{{ x.expected }}</code><br>observed: <code>{{ x.observed }}</code></p>{% endif %}
{% if x.status in ('ERROR',) %}<pre>{{ x.message }}</pre>{% endif %}
{% if x.reason %}<p>{{ x.reason }}</p>{% endif %}
{% if x.status not in ('PASS','SKIP') %}<p>rerun: <code>{{ x.rerun }}</code></p>{% endif %}
<details><summary>evidence ({{ x.trace|length }} steps)</summary><pre>{{ x.trace_text }}</pre>
{% for peer, tail in x.stderr.items() %}<p>{{ peer }} stderr (tail)</p><pre>{{ tail }}</pre>{% endfor %}</details></div>
{% endfor %}
</body></html>
""",
    autoescape=True,
)

_SHORT = {"PASS": "P", "FAIL": "F", "ERROR": "E", "SKIP": "s", "XFAIL": "x", "XPASS": "X!"}


def write_html(report: RunResult, path: Path) -> None:
    cells = [cell_record(r) for r in report.results]
    for c in cells:
        c["trace_text"] = "\n".join(json.dumps(step, default=str) for step in c["trace"])
    summary = report.summary
    by_id = {c["id"]: c for c in cells}
    counts = ", ".join(f"{report.count(s)} {s}" for s in reversed(WORST_FIRST) if report.count(s))
    path.write_text(
        TEMPLATE.render(
            started_at=report.started_at, cells=cells, summary=counts, duration=round(report.duration_s, 1),
            broker=report.broker, brokers=report.brokers, peers=report.peers, matrices=summary.pair_matrices,
            by_id=by_id, by_scenario={sid: [by_id[i] for i in ids] for sid, ids in summary.scenarios.items()}, short=_SHORT, rules=summary.rules,
        ),
        encoding="utf-8",
    )
