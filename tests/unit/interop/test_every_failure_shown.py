"""Verdicts a maintainer can trust: a cell that broke three clauses shows all three in every
view (console, summary.md, report.html, JUnit), each charged to the peer of its side, and
every view leads with each peer's to-do list (each clause once, the clearest cell's evidence)."""
from __future__ import annotations

import io
import re
from pathlib import Path

from junitparser import Failure as JUnitFailure, JUnitXml
from rich.console import Console

from acemq_interop.reports.console import print_report
from acemq_interop.reports.html import render_html
from acemq_interop.reports.markdown import render_markdown
from acemq_interop.results.model import BrokerInfo, CellResult, Failure, NotEvaluated, PeerStatus, RunResult, Status
from acemq_interop.reports.junit import write_junit

MULTI = "rr-pair-round-trip[requester=go,responder=python]"
PROBE_ONLY = "rr-requester-late-reply[requester=go]"
GATHER = "sg-mixed-publish-every-language[responders=go,python]"

TRACE = [{"t": 0.01, "step": "requester.open", "peer": "go", "sent": {"op": "requester.open", "name": "c1.q"},
          "answer": {"ok": True}},
         {"t": 0.02, "step": "queue_facts", "queue": "amq.gen-1"},
         {"t": 0.1, "step": "expect", "that": "facts.exclusive", "rule": "RR-7.2", "ok": False, "observed": False},
         {"t": 0.2, "step": "expect", "that": "reply.properties.content_type", "rule": "RR-4.3", "ok": False,
          "observed": "text/plain"},
         {"t": 0.3, "step": "expect", "that": "call.outcome", "rule": "RR-8.1", "ok": False, "observed": "timeout"},
         {"t": 0.4, "step": "expect", "that": "call.body", "rule": "RR-8.1", "ok": None, "not_evaluated": "needs call"}]


def failure(clause: str, side: str, peer: str | None, at: int, expected: object, observed: object,
            suspects: tuple[str, ...] = ()) -> Failure:
    return Failure(clause=clause, rule=clause.partition(".")[0], side=side, role=side, peer=peer,
                   check=f"step {at + 1} expect: checks {clause}", message=f"{clause} did not hold",
                   expected=expected, observed=observed, at=at, suspects=suspects)


def fail_cell(cell_id: str, matrix: str, roles: dict, failures: list[Failure], **extra: object) -> CellResult:
    first = failures[0]
    return CellResult(id=cell_id, scenario=cell_id.partition("[")[0], title="title", matrix=matrix, rules=("RR-4", "RR-7", "RR-8"),
                      roles=roles, peers=tuple(p for v in roles.values() for p in (v if isinstance(v, list) else [v]) if p != "probe"),
                      status=Status.FAIL, broker="b", rule=first.clause, message=first.message, expected=first.expected,
                      observed=first.observed, failures=failures, trace=list(TRACE), rerun=f"acemq-interop run --cell '{cell_id}'",
                      **extra)


def run_result() -> RunResult:
    multi = fail_cell(MULTI, "pairs", {"requester": "go", "responder": "python"}, [
        failure("RR-8.1", "requester", "go", 4, "reply", "timeout"),
        failure("RR-7.2", "requester", "go", 2, True, False),
        failure("RR-4.3", "responder", "python", 3, "application/json", "text/plain"),
    ], not_evaluated=[NotEvaluated("RR-8.1", "step 6 expect: call.body equals 'x'", "needs call (RR-8.1: call.outcome)")])
    alone = fail_cell(PROBE_ONLY, "requesters", {"requester": "go", "responder": "probe"},
                      [failure("RR-8.1", "requester", "go", 4, "reply", "late-reply-seen")])
    gather = fail_cell(GATHER, "mixed", {"gatherer": "probe", "responders": ["go", "python"]},
                       [failure("SG-3.1", "responder", None, 4, "m-1", "(absent)", suspects=("go", "python"))])
    passing = CellResult(id="rr-pair-round-trip[requester=go,responder=go]", scenario="rr-pair-round-trip", title="title",
                         matrix="pairs", rules=("RR-4",), roles={"requester": "go", "responder": "go"}, peers=("go", "go"),
                         status=Status.PASS, broker="b", trace=TRACE[:1])
    peers = {"go": PeerStatus("go", "Go", hello={"binding": "acemq-go", "client": "amqp091"}),
             "python": PeerStatus("python", "Python", hello={"binding": "acemq-py", "client": "pika"})}
    return RunResult([passing, multi, alone, gather], peers, ["go", "python"], [BrokerInfo("b")], 1.0, "now")


def console_text(report: RunResult) -> str:
    out = io.StringIO()
    print_report(report, Console(file=out, width=250, highlight=False, color_system=None))
    return out.getvalue()


def test_the_model_gives_each_peer_its_to_do_list() -> None:
    """A shared role's failure nothing pins on one member is on no member's list (issue 29):
    it is listed once, as shared, with its suspects."""
    summary = run_result().summary
    assert [(i.clause, len(i.cells), i.clearest) for i in summary.todo["go"]] == \
        [("RR-8.1", 2, PROBE_ONLY), ("RR-7.2", 1, MULTI)]
    assert [i.clause for i in summary.todo["python"]] == ["RR-4.3"]
    assert summary.unattributed == (GATHER,)


def test_the_console_shows_every_failure_count_and_leads_with_the_to_do_lists() -> None:
    text = console_text(run_result())
    todo, attention = text.index("To do, per peer"), text.index("cell(s) need attention")
    assert text.index("Per-peer conformance") < todo < attention
    go_todo = text[text.index("go: 2 clause(s) to fix", todo):text.index("python: 1 clause(s) to fix", todo)]
    assert re.search(r"RR-8\.1 \(RR-8 Replies are matched[^\n]*: 2 cell\(s\); clearest "
                     + re.escape(PROBE_ONLY) + r': expected "reply", observed "late-reply-seen"', go_todo), go_todo
    assert "RR-7.2 (RR-7 The reply queue is classic" in go_todo and "RR-4.3" not in go_todo
    assert "SG-3.1" not in go_todo
    python_todo = text[text.index("python: 1 clause(s) to fix"):attention]
    assert 'RR-4.3 (RR-4 How a reply is addressed): 1 cell(s); clearest ' + MULTI in python_todo
    assert "shared, on no peer's list (nothing on the wire names one of them): 1 FAIL cell(s)" in text
    assert f"{GATHER}: SG-3.1; could be any of: go, python" in text
    cells = text[attention:]
    assert re.search(r"broke RR-8\.1 \(RR-8 [^\n]*\) \[requester go\]: RR-8\.1 did not hold "
                     r"\(\+2 more: RR-7\.2, RR-4\.3; 1 check\(s\) not evaluated\)", cells), cells
    assert re.search(r"broke SG-3\.1 [^\n]*\[responder: one of go, python\]", cells)


def test_the_console_to_do_list_is_bounded() -> None:
    report = run_result()
    many = [failure(f"RR-{n}.1", "requester", "go", 4, "x", "y") for n in range(1, 14)] + \
           [failure(f"RR-{n}.2", "requester", "go", 4, "x", "y") for n in range(1, 6)]
    report.results.append(fail_cell("rr-requester-many[requester=go]", "requesters", {"requester": "go", "responder": "probe"}, many))
    text = console_text(RunResult(report.results, report.peers, report.labels, report.brokers, 1.0, "now"))
    go_todo = text[text.index("go: 19 clause(s) to fix"):text.index("python: 1 clause(s) to fix")]
    assert len(re.findall(r"^  RR-|^  SG-", go_todo, re.M)) == 15, go_todo
    assert "... and 4 more clause(s)" in go_todo


def test_summary_md_has_the_to_do_lists_first_and_every_failure_of_a_cell() -> None:
    text = render_markdown(run_result())
    todo = text.index("## To do, per peer")
    assert todo < text.index("## Per-peer conformance") < text.index("## Cells not passing")
    go = text[text.index("### go", todo):text.index("### python", todo)]
    row = next(line for line in go.splitlines() if line.startswith("| **RR-8.1**"))
    assert "Replies are matched by correlation id" in row and "| 2 |" in row and f"`{PROBE_ONLY}`" in row
    assert '`"reply"`' in row and '`"late-reply-seen"`' in row and f"acemq-interop run --cell '{PROBE_ONLY}'" in row
    assert "could be any of: go, python" in text[todo:]
    detail = text[text.index(f"### `{MULTI}`"):]
    detail = detail[:detail.index("\n### ", 5)]
    rows = [line for line in detail.splitlines() if line.startswith("| RR-")]
    assert [r.split(" | ")[0] for r in rows] == ["| RR-8.1", "| RR-7.2", "| RR-4.3"], detail
    assert "| requester | go |" in rows[1] and "| responder | python |" in rows[2]
    assert '`"application/json"`' in rows[2] and '`"text/plain"`' in rows[2] and "step 4 expect: checks RR-4.3" in rows[2]
    assert "Not evaluated: RR-8.1 step 6 expect: call.body equals 'x' (needs call (RR-8.1: call.outcome))" in detail
    assert f"| FAIL | `{MULTI}` | RR-8.1 (RR-8 Replies are matched by correlation id; a reply nobody waits for is Unmatched) " \
           "(+2 more: RR-7.2, RR-4.3; 1 check(s) not evaluated) |" in text


def test_the_page_opens_with_the_to_do_lists_linked_to_the_evidence(tmp_path: Path) -> None:
    page = render_html(run_result(), tmp_path / "report.html", docs_url="https://x.invalid/docs")
    todo, failures = page.index('id="todo"'), page.index('id="failures"')
    assert page.index('id="problems"') < todo < failures < page.index('id="matrices"')
    table = page[todo:failures]
    go = table[table.index('data-peer="go"'):table.index('data-peer="python"')]
    assert 'href="https://x.invalid/docs/wire-spec.md#rr-8-' in go and "<b>RR-8.1</b></a>" in go
    clearest = "cell-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", PROBE_ONLY).strip("-") + "-failure-1"
    assert f'href="#{clearest}"' in go and f'id="{clearest}"' in page, "the clearest cell's failure is one click away"
    assert "&#34;late-reply-seen&#34;" in go and "RR-4.3" not in go
    assert 'id="unattributed"' in page and "could be any of: go, python" in page


def test_a_failing_cells_view_lists_every_failure_with_its_evidence_step(tmp_path: Path) -> None:
    page = render_html(run_result(), tmp_path / "report.html")
    anchor = "cell-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", MULTI).strip("-")
    view = page[page.index(f'<div class="cell inline" id="{anchor}"'):]
    view = view[:view.index('<div class="cell', 10)]
    items = re.findall(rf'<li class="failure" id="{anchor}-failure-(\d)">(.*?)</li>', view, re.S)
    assert [n for n, _ in items] == ["1", "2", "3"]
    clauses = [re.search(r"<b>(RR-[\d.]+)</b>", body).group(1) for _, body in items]
    assert clauses == ["RR-8.1", "RR-7.2", "RR-4.3"]
    third = items[2][1]
    assert "responder" in third and "python" in third and "step 4 expect: checks RR-4.3" in third
    assert "&#34;application/json&#34;" in third and "&#34;text/plain&#34;" in third
    assert f'href="#{anchor}-step-4"' in third and f'id="{anchor}-step-4"' in view, "the link reaches the trace entry `at`"
    assert 'class="not-evaluated"' in view and "needs call (RR-8.1: call.outcome)" in view
    assert "not evaluated" in view[view.index(f'id="{anchor}-step-6"'):], "a check not made is not shown as broken"
    problem = page[page.index(f'data-cell="{MULTI}"'):]
    assert "+2 more: RR-7.2, RR-4.3" in problem[:problem.index("</li>")]


def test_junit_carries_every_failure_of_a_cell(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(run_result(), path)
    cases = {c.name: c for suite in JUnitXml.fromfile(str(path)) for c in suite}
    (result,) = cases[MULTI].result
    assert isinstance(result, JUnitFailure) and result.type == "RR-8.1"
    assert result.message.startswith("RR-8.1 (RR-8 Replies are matched") and "(+2 more: RR-7.2, RR-4.3" in result.message
    text = result.text
    blocks = re.split(r"\n(?=\d\. )", text)
    assert [b[:9] for b in blocks[:3]] == ["1. RR-8.1", "2. RR-7.2", "3. RR-4.3"], text
    assert "side: responder, peer: python" in blocks[2] and 'expected: "application/json"' in blocks[2] \
        and 'observed: "text/plain"' in blocks[2]
    assert "side: requester, peer: go" in blocks[1] and "expected: true" in blocks[1] and "observed: false" in blocks[1]
    assert "not evaluated:" in text and "rerun: acemq-interop run --cell" in text
    (gather,) = cases[GATHER].result
    assert "peer: one of go, python" in gather.text
