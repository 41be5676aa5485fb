"""Issue 13 without a broker: the HTML report's order and links, the probe grids, page size,
publish's site and badge, and the transcript's attribution and typed headers."""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from acemq_interop.amqp import transcript as tr
from acemq_interop.amqp.codec import decode_content_header
from acemq_interop.spec.catalogue import rules
from acemq_interop.reports.html import github_anchor, render_html, rule_anchors
from acemq_interop.results.model import BrokerInfo, CellResult, PeerStatus, RunResult, Status
from acemq_interop.core.paths import DOCS_DIR
from acemq_interop.reports.publish import badge, publish
from acemq_interop.results.files import results_data as _data, run_from_data
from acemq_interop.reports.junit import write_junit
from acemq_interop.results.files import results_data, write_json


def cell(scenario: str, matrix: str, roles: dict, status: Status, **extra) -> CellResult:
    peers = tuple(v for v in roles.values() if v != "probe")
    parts = ",".join(f"{k}={v}" for k, v in roles.items() if v != "probe")
    return CellResult(id=f"{scenario}[{parts}]", scenario=scenario, title=f"title of {scenario}", matrix=matrix,
                      rules=("RR-1", "RR-4"), roles=roles, peers=peers, status=status, broker="b",
                      rerun=f"acemq-interop run --cell '{scenario}[{parts}]'", **extra)


STEPS = [{"t": 0.01, "step": "requester.open", "peer": "go", "sent": {"op": "requester.open", "name": "c1.q"},
          "answer": {"ok": True, "reply_queue": "amq.gen-1"}},
         {"t": 0.2, "step": "expect", "that": "m.headers.acemq-reply-to", "rule": "RR-1", "ok": False, "observed": "(absent)"}]


def run_result(passing: int = 0) -> RunResult:
    results = [
        cell("rr-pair-a", "pairs", {"requester": "go", "responder": "go"}, Status.PASS, trace=STEPS[:1]),
        cell("rr-pair-a", "pairs", {"requester": "go", "responder": "python"}, Status.FAIL, rule="RR-4.2",
             message="reply.seen.reply_to_source equals 'header'", expected="header", observed="(absent)", trace=list(STEPS)),
        cell("rr-pair-a", "pairs", {"requester": "python", "responder": "go"}, Status.ERROR,
             message="peer 'python' exited (status 3); last stderr lines:\nboom", stderr={"python": "boom", "go": "  "}),
        cell("rr-pair-a", "pairs", {"requester": "python", "responder": "python"}, Status.XFAIL,
             reason="known: see https://example.invalid/issue/1 and docs/wire-spec.md#rr-1-the-reply-address-is-written-twice"),
        cell("rr-requester-b", "requesters", {"requester": "go", "responder": "probe"}, Status.PASS),
        cell("rr-requester-b", "requesters", {"requester": "python", "responder": "probe"}, Status.XPASS, reason="listed"),
    ]
    for i in range(passing):
        results.append(cell(f"rr-pair-p{i // 36}", "pairs", {"requester": f"p{i % 6}", "responder": f"q{(i // 6) % 6}"},
                            Status.PASS, trace=STEPS[:1] * 12, duration_s=0.4))
    peers = {"go": PeerStatus("go", "Go", hello={"binding": "acemq-go", "client": "amqp091", "mutants": []}),
             "python": PeerStatus("python", "Python")}
    return RunResult(results, peers, ["go", "python"], [BrokerInfo("b", "RabbitMQ", "3.13.7", "26.2")], 1.5, "now",
                     meta={"suite": {"name": "acemq-interop", "version": "9.9", "git_commit": "abc"},
                           "started_at": "2026-12-01T10:00:00Z", "selection": {"peers": ["go", "python"]}})


def test_every_rule_has_its_spec_anchor_as_github_makes_it() -> None:
    assert github_anchor("RR-5 The `x-acemq-` namespace is stripped; other headers pass") == \
        "rr-5-the-x-acemq--namespace-is-stripped-other-headers-pass"
    anchors = rule_anchors()
    assert set(rules()) <= set(anchors)
    assert anchors["RR-1"] == "rr-1-the-reply-address-is-written-twice"
    assert anchors["RR-2"] == "rr-2-spec-headers-are-utf-8-strings-readers-accept-byte-arrays-client-fact"


def test_the_page_opens_with_the_verdict_and_the_failures(tmp_path: Path) -> None:
    page = render_html(run_result(), tmp_path / "report.html", docs_url="https://x.invalid/docs")
    verdict, problems, matrices = page.index('id="verdict"'), page.index('id="problems"'), page.index('id="matrices"')
    assert verdict < problems < matrices
    failures = page[problems:matrices]
    assert failures.index("rr-pair-a[requester=go,responder=python]") < failures.index("rr-requester-b[requester=python]")
    assert "https://x.invalid/docs/wire-spec.md#rr-4-" in failures and "RR-4.2" in failures
    assert "Errors, by cause" in failures and "boom" in failures
    assert "PPPP" not in page and "<object" not in page
    assert 'href="https://example.invalid/issue/1"' in page  # XFAIL reasons' links are links
    assert 'href="https://x.invalid/docs/wire-spec.md#rr-1-the-reply-address-is-written-twice"' in page
    assert "go stderr" not in page and "python stderr" in page  # empty stderr is not shown
    assert re.search(r'<div class="drill" id="pair-b-go-python">', page)
    assert 'id="grid-requesters"' in page


def test_the_model_has_the_probe_grids() -> None:
    (grid,) = run_result().summary.probe_grids
    assert grid.matrix == "requesters" and grid.labels == ("go", "python") and grid.scenarios == ("rr-requester-b",)
    assert grid.cells[("python", "rr-requester-b")] == "rr-requester-b[requester=python]"


def test_a_large_all_pass_page_stays_small(tmp_path: Path) -> None:
    report = run_result(passing=540)
    page = render_html(report, tmp_path / "report.html")
    assert len(page.encode()) < 1_000_000, len(page.encode())


def test_no_absent_marker_leaks_as_a_python_object(tmp_path: Path) -> None:
    from acemq_interop.spec import assertions

    report = run_result()
    report.results[1].trace.append({"step": "expect", "observed": assertions.lookup({}, "a.b")})
    write_json(report, tmp_path / "results.json")
    write_junit(report, tmp_path / "junit.xml")
    for name in ("results.json", "junit.xml"):
        assert "<object" not in (tmp_path / name).read_text()
    assert '"(absent)"' in (tmp_path / "results.json").read_text()


def test_publish_builds_an_index_pages_and_badges(tmp_path: Path) -> None:
    paths = []
    for n in range(2):
        data = results_data(run_result())
        data["started_at"] = f"2026-12-0{n + 1}T10:00:00Z"
        path = tmp_path / f"r{n}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    index = publish(paths, tmp_path / "site", log=lambda m: None)
    text = index.read_text()
    runs = sorted((tmp_path / "site" / "runs").iterdir())
    assert len(runs) == 2 and all(f"runs/{r.name}/report.html" in text for r in runs)
    assert (tmp_path / "site" / "docs" / "wire-spec.html").read_text().count('id="rr-1-the-reply-address-is-written-twice"') == 1
    assert json.loads((tmp_path / "site" / "badge.json").read_text())["message"] == "2/6 pass, 1 fail, 1 error, 1 xpass, 1 xfail"
    all_pass = {"summary": {"PASS": 540, "FAIL": 0}}
    assert badge(all_pass) == {"schemaVersion": 1, "label": "acemq-interop", "message": "540/540 pass", "color": "brightgreen"}
    assert run_from_data(json.loads(paths[0].read_text())).summary.problems == run_result().summary.problems


def _table(**values: tuple[str, bytes]) -> bytes:
    body = b"".join(struct.pack(">B", len(k)) + k.encode() + v[0].encode() + v[1] for k, v in values.items())
    return struct.pack(">I", len(body)) + body


def test_the_tracer_keeps_each_header_value_type() -> None:
    """A firehose message, hand-built as the broker sends it: its `properties` table and the
    headers inside keep every value's type, a `b` of -7 and a `d` of 0.25 included (pika 1.2
    read them as 249 and 0)."""
    headers = _table(a=("S", struct.pack(">I", 3) + b"abc"), b=("x", struct.pack(">I", 2) + b"hi"), n=("l", struct.pack(">q", 5)),
                     sb=("b", struct.pack(">b", -7)), dd=("d", struct.pack(">d", 0.25)))
    properties = _table(message_id=("S", struct.pack(">I", 2) + b"m1"), headers=("F", headers))
    firehose = _table(exchange_name=("S", struct.pack(">I", 0)), properties=("F", properties),
                      connection=("S", struct.pack(">I", 30) + b"127.0.0.1:40001 -> 127.0.0.1:1"))
    payload = struct.pack(">HHQH", 60, 0, 2, 1 << 13) + firehose  # the headers flag only
    _, _, decoded = decode_content_header(payload)  # what the tracer's raw client does with it
    raw = tr.Raw(0.0, "publish.", decoded, b"{}")
    (record,) = tr.transcript([raw], 0.0, {}, ["127.0.0.1:40001"])
    assert record["headers"] == {
        "a": {"type": "S", "value": "abc"}, "b": {"type": "x", "value": "hi"}, "n": {"type": "l", "value": 5},
        "sb": {"type": "b", "value": -7}, "dd": {"type": "d", "value": 0.25}}
    assert record["properties"] == {"message_id": "m1"} and record["who"] == "probe"


def _raw(at: float, key: str, exchange: str, routing_key: str, **props) -> tr.Raw:
    headers = {"exchange_name": exchange, "routing_keys": [routing_key], "connection": props.pop("conn", "c1"),
               "properties": props, "user": "guest"}
    if key.startswith("publish"):
        headers["routed_queues"] = [routing_key]
    return tr.Raw(tr.time.monotonic() - 10 + at, key, headers, b"{}")


def test_a_cell_takes_its_namespace_and_the_reply_queues_it_named() -> None:
    tracer = tr.Tracer("amqp://unused/", None, "v", log=lambda m: None)
    raws = [
        _raw(1.0, "publish.", "", "c0001.requests", reply_to="amq.gen-A", message_id="m1", conn="req"),
        _raw(1.1, "publish.", "", "c0002.requests", reply_to="amq.gen-B", conn="other"),
        _raw(1.2, "deliver.c0001.requests", "", "c0001.requests", reply_to="amq.gen-A", conn="resp"),
        _raw(1.3, "publish.", "", "amq.gen-A", correlation_id="m1", conn="resp"),
        _raw(1.4, "publish.", "", "amq.gen-B", conn="other"),
        _raw(1.5, "deliver.amq.gen-A", "", "amq.gen-A", conn="req"),
    ]
    for raw in raws:
        tracer.received += 1
        tracer._file(raw)
    t0 = raws[0].at - 1.0
    trace = [{"step": "responder.start", "peer": "go", "sent": {"queue": "c0001.requests"}},
             {"step": "requester.open", "peer": "python", "answer": {"reply_queue": "amq.gen-A"}}]
    who, replies = tr.participants(trace, {"requester": "python+native-only", "responder": "go"})
    mine = tracer.take("c0001", replies, keep=True)
    assert [round(r.at - t0, 1) for r in mine] == [1.0, 1.2, 1.3, 1.5]
    records = tr.transcript(mine, t0, who)
    assert [r["who"] for r in records] == ["python+native-only (requester)", "go (responder)", "go (responder)",
                                           "python+native-only (requester)"]
    assert records[0]["properties"]["reply_to"] == "amq.gen-A" and "guest" not in json.dumps(records)
    assert tracer.take("c0002", set(), keep=False) == []
    assert not [r for entries in tracer._keys.values() for r in entries if not r.taken]


def test_a_responder_dead_lettering_a_probe_request_is_still_the_responder() -> None:
    """RR-11: a conformant responder dead-letters the probe's request keeping its message_id.
    The probe is known by its connections' own addresses, never by a message id, so the
    responder's connection (and its failure reply, whose body RR-10.1 forbids) stays its own
    and the wire checks judge it."""
    from acemq_interop.run.wire_checks import message_breaks

    probe, responder = "127.0.0.1:40001 -> 127.0.0.1:5672", "127.0.0.1:40002 -> 127.0.0.1:5672"
    raws = [
        _raw(1.0, "publish.", "", "c0001.requests", message_id="c0001-m1", reply_to="c0001.inbox", conn=probe,
             headers={"acemq-reply-to": "c0001.inbox"}),
        _raw(1.1, "deliver.c0001.requests", "", "c0001.requests", message_id="c0001-m1", conn=responder),
        _raw(1.2, "publish.", "", "c0001.requests.dlq", message_id="c0001-m1", conn=responder,
             headers={"acemq-dead-letter-reason": "bad"}),
        _raw(1.3, "publish.", "", "c0001.inbox", correlation_id="c0001-m1", content_type="application/json", conn=responder,
             headers={"acemq-error": "ScenarioFailure: bad", "responseMessageId": "c0001-m1"}),
        _raw(1.4, "deliver.c0001.inbox", "", "c0001.inbox", correlation_id="c0001-m1", conn=probe),
    ]
    trace = [{"step": "responder.start", "peer": "go", "sent": {"queue": "c0001.requests"}},
             {"step": "probe_publish", "published": [{"message_id": "c0001-m1", "routed": True}]},
             {"step": "probe_get", "queue": "c0001.inbox"}]
    who, _ = tr.participants(trace, {"responder": "go"})
    records = tr.transcript(raws, 0.0, who, ["127.0.0.1:40001"])
    assert [r["who"] for r in records] == ["probe", "go (responder)", "go (responder)", "go (responder)", "probe"]
    breaks = {(b.clause, b.peer, b.n) for b in message_breaks(records, {"go"}, {"c0001.inbox"})}
    assert ("RR-10.1", "go", 4) in breaks, "the failure reply's body is judged (the connection was named right)"
    # Without the probe's addresses nothing names the responder the probe either.
    assert [r["who"] for r in tr.transcript(raws, 0.0, who)][1:4] == ["go (responder)"] * 3


def test_responders_taking_turns_on_a_queue_are_named_by_when_each_consumed_it() -> None:
    """A redeploy (rr-pair-responder-redeploy): go's responder answers, stops, and the new
    one of another peer takes the queue over, then dead-letters with the caller's address
    kept (RR-11.4). Found certifying a binding whose replies went out through amq.direct:
    its connection was named the requester by its dead-letter copies, and RR-4.1 charged to
    the requester's peer. Now each delivery names the responder consuming at that moment, and
    a dead-letter copy never names a requester."""
    old, new, req = "127.0.0.1:1 -> 127.0.0.1:5672", "127.0.0.1:2 -> 127.0.0.1:5672", "127.0.0.1:3 -> 127.0.0.1:5672"
    raws = [
        _raw(1.0, "publish.", "", "c0001.requests", reply_to="amq.gen-A", message_id="m1", conn=req),
        _raw(1.1, "deliver.c0001.requests", "", "c0001.requests", reply_to="amq.gen-A", message_id="m1", conn=old),
        _raw(1.2, "publish.", "", "amq.gen-A", correlation_id="m1", conn=old),
        _raw(3.0, "publish.", "", "c0001.requests", reply_to="amq.gen-A", message_id="m2", conn=req),
        _raw(4.0, "deliver.c0001.requests", "", "c0001.requests", reply_to="amq.gen-A", message_id="m2", conn=new),
        _raw(4.1, "publish.", "amq.direct", "c0001.requests.dlq", reply_to="amq.gen-A", message_id="m2", conn=new,
             headers={"acemq-dead-letter-reason": "UndeliverableReply: x"}),
    ]
    t0 = raws[0].at - 1.0
    roles = {"requester": "go", "responder": "odd"}
    trace = [{"t": 0.5, "step": "responder.start", "peer": "go", "sent": {"name": "c0001.old", "queue": "c0001.requests"}},
             {"t": 0.6, "step": "requester.open", "peer": "go", "answer": {"reply_queue": "amq.gen-A"}},
             {"t": 2.0, "step": "responder.stop", "peer": "go", "sent": {"name": "c0001.old"}},
             {"t": 3.9, "step": "responder.start", "peer": "odd", "sent": {"name": "c0001.new", "queue": "c0001.requests"},
              "rtt_ms": 200}]
    who, _ = tr.participants(trace, roles)
    assert "c0001.requests" not in who, "two peers' responders: the queue alone names neither"
    windows = tr.consumer_windows(trace, roles)
    records = tr.transcript(raws, t0, who, windows=windows)
    assert [r["who"] for r in records] == ["go (requester)", "go (responder)", "go (responder)", "go (requester)",
                                           "odd (responder)", "odd (responder)"]
    unnamed = tr.transcript(raws, t0, who)
    assert unnamed[5]["who"] != "go (requester)", "a dead-letter copy keeps the caller's address and is no request"


def test_a_fail_shows_its_clause_its_rule_and_what_it_was_seen_as() -> None:
    """The failure names the clause with its rule and text; a consequence says what it was
    seen as; the rule table's "asserted by" comes from the clauses, and "seen through it"
    is apart from "cells breaking it"."""
    failing = cell("rr-requester-e", "requesters", {"requester": "go", "responder": "probe"}, Status.FAIL,
                   rule="RR-2.2", seen_as="RR-10.3", clauses=("RR-10.3", "RR-2.2"), message="second.outcome equals 'x'")
    report = RunResult([failing], {"go": PeerStatus("go", "Go")}, ["go"], [BrokerInfo("b")], 1.0, "now")
    page = render_html(report)
    assert re.search(r"broke <a [^>]*><b>RR-2.2</b></a> \(RR-2 Spec headers are UTF-8 strings; readers accept byte arrays\): "
                     r"<i>A reader MUST accept", page)
    assert re.search(r"seen as <a [^>]*>RR-10.3</a>", page)
    rules_table = page[page.index('<section id="rules">'):page.index("</section>", page.index('<section id="rules">'))]
    row = lambda rule: next(r for r in rules_table.split("<tr>") if f">{rule}</a></td>" in r)
    assert "rr-requester-e (RR-2.2)" in row("RR-2") and "rr-requester-e (RR-10.3)" in row("RR-10")
    assert "(no scenario in this run)" in row("RR-1"), "listed in rules: but asserted by no clause"
    assert "RR-10.3 &rarr; RR-2.2" in row("RR-10") and "&rarr;" not in row("RR-2")
