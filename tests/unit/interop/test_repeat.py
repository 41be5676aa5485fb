"""The repeat report (repeat.py): which cells' verdicts vary across runs of one selection."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from acemq_interop.commands import cli
from acemq_interop.core.errors import UsageError
from acemq_interop.reports.flakes import repeat_text, write_repeat
from acemq_interop.results.repeat import RepeatReport, load_runs


def _cell(cell_id: str, status: str = "PASS", clauses: tuple[str, ...] = (), message: str = "",
          roles: dict | None = None) -> dict:
    return {"id": cell_id, "scenario": cell_id.split("[")[0], "status": status,
            "roles": roles or {"requester": "python", "responder": "go"},
            "failed_rule": clauses[0] if clauses else None, "message": message,
            "failures": [{"clause": c, "peer": "go"} for c in clauses]}


def _write(tmp_path: Path, name: str, cells: list[dict]) -> Path:
    path = tmp_path / name / "results.json"
    path.parent.mkdir()
    counts = {s: sum(c["status"] == s for c in cells) for s in ("PASS", "FAIL", "ERROR")}
    path.write_text(json.dumps({"cells": cells, "summary": counts}), encoding="utf-8")
    return path


def test_same_verdicts_every_run_vary_nowhere(tmp_path):
    cells = [_cell("a[x]"), _cell("b[x]", "FAIL", ("RR-4.3",), "no content type")]
    report = RepeatReport.of(load_runs([_write(tmp_path, "r1", cells), _write(tmp_path, "r2", cells)]))
    assert report.varying == []
    assert report.summary_line() == "2 runs of 2 cells: 0 cell(s) whose verdict varied"


def test_a_status_a_clause_or_an_absence_that_changes_is_a_varying_cell(tmp_path):
    first = [_cell("a[x]"), _cell("b[x]", "FAIL", ("RR-4.3",)), _cell("c[x]"), _cell("d[x]")]
    second = [_cell("a[x]", "ERROR", message="peer go: lost\nmore"), _cell("b[x]", "FAIL", ("RR-8.1",)), _cell("d[x]")]
    report = RepeatReport.of(load_runs([_write(tmp_path, "r1", first), _write(tmp_path, "r2", second)]))
    varying = {c.id: [o.short() for o in c.outcomes] for c in report.varying}
    assert varying == {"a[x]": ["PASS", "ERROR"], "b[x]": ["FAIL RR-4.3", "FAIL RR-8.1"], "c[x]": ["PASS", "ABSENT"]}
    assert report.cells[0].outcomes[1].message == "peer go: lost"
    assert report.by("peer")["go"].varying == 3 and report.by("peer")["go"].cells == 4
    assert report.by("scenario")["d"].varying == 0
    assert "3 cell(s) whose verdict varied (75.0%)" in report.summary_line()
    record = report.record()
    assert [v["id"] for v in record["varying"]] == ["a[x]", "b[x]", "c[x]"]
    assert record["by_peer"]["python"] == {"cells": 4, "varying": 3, "rate": 0.75}


def test_the_renderings_link_each_varying_verdict_to_its_run_report(tmp_path):
    first, second = [_cell("a[x]")], [_cell("a[x]", "FAIL", ("RR-9.6",))]
    report = RepeatReport.of(load_runs([_write(tmp_path, "run-1", first), _write(tmp_path, "run-2", second)]))
    paths = write_repeat(report, tmp_path)
    markdown = (tmp_path / "summary.md").read_text()
    assert "[FAIL RR-9.6](run-2/report.html#cell-a-x)" in markdown
    assert 'href="run-2/report.html#cell-a-x"' in (tmp_path / "report.html").read_text()
    assert json.loads(paths[0].read_text())["varying"][0]["outcomes"][1]["clauses"] == ["RR-9.6"]
    assert "VARIES a[x]: run 1: PASS | run 2: FAIL RR-9.6" in repeat_text(report)


def test_flakes_refuses_what_is_not_two_results_files(tmp_path):
    one = _write(tmp_path, "r1", [_cell("a[x]")])
    with pytest.raises(UsageError, match="two runs or more"):
        load_runs([one])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(UsageError, match="no 'cells' list"):
        load_runs([one, bad])


def test_flakes_exits_1_on_a_varying_cell_and_0_without(tmp_path, capsys):
    a = _write(tmp_path, "r1", [_cell("a[x]")])
    b = _write(tmp_path, "r2", [_cell("a[x]", "ERROR")])
    assert cli.main(["flakes", str(a), str(b), "--out", str(tmp_path / "o1")]) == 1
    assert cli.main(["flakes", str(a), str(a), "--out", str(tmp_path / "o2")]) == 0
    assert "VARIES a[x]" in capsys.readouterr().out


def test_repeat_counts_out_of_range_are_a_usage_error(capsys):
    assert cli.main(["run", "--repeat", "101"]) == 2
    assert cli.main(["run", "--repeat", "0"]) == 2
    assert "give 2 to 100 runs" in capsys.readouterr().err
