"""Every clause of the catalogue is asserted by a scenario, or says why no scenario can see it."""
from __future__ import annotations

import json
import re

import pytest

from acemq_interop.spec import catalogue
from acemq_interop.commands.cli import main
from acemq_interop.spec.clause_table import clause_rows, path_problems, totals
from acemq_interop.core.paths import DOCS_DIR
from acemq_interop.spec.scenarios import load_all


@pytest.fixture(scope="module")
def rows():
    return clause_rows(catalogue.catalogue(), load_all())


def test_every_clause_is_asserted_by_a_scenario_or_carries_its_reason(rows) -> None:
    t = totals(rows)
    assert t.clauses == len(catalogue.catalogue().clauses)
    assert not t.neither, f"clauses no scenario asserts and with no `unobservable:` reason: {', '.join(t.neither)}"
    assert t.asserted + t.unobservable == t.clauses


def test_a_clause_is_asserted_or_unobservable_never_both(rows) -> None:
    """A reason left on a clause a scenario now asserts would hide that the reason is stale."""
    both = [r.clause for r in rows if r.asserted_by and r.unobservable]
    assert not both, f"asserted by a scenario yet marked unobservable (drop the reason): {', '.join(both)}"


def test_the_wire_spec_says_so_under_the_rule_of_each_unobservable_clause() -> None:
    text = (DOCS_DIR / "wire-spec.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### ((?:RR|SG|WF)-\d+) .*?\n(.*?)(?=^##)", text, re.M | re.S))
    missing = [c.id for c in catalogue.catalogue().clauses.values()
               if c.unobservable and not re.search(rf"\*\*Unobservable:\*\* {re.escape(c.id)}\b", sections.get(c.rule, ""))]
    assert not missing, f"docs/wire-spec.md must say under the rule that these are unobservable, and why: {missing}"


def test_list_rules_json_is_the_table(capsys, rows) -> None:
    assert main(["list", "--rules", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == [r.as_json() for r in rows]
    assert set(data[0]) == {"rule", "clause", "text", "asserted_by", "unobservable", "paths"}
    by_clause = {d["clause"]: d for d in data}
    assert "rr-requester-writes-both-addresses" in by_clause["RR-1.2"]["asserted_by"]
    assert by_clause["RR-13.1"]["unobservable"] and by_clause["RR-13.1"]["asserted_by"] == []


def test_list_rules_prints_each_clause_with_what_asserts_it(capsys) -> None:
    assert main(["list", "--rules"]) == 0
    out = capsys.readouterr().out
    assert "  RR-4.2   A reply's correlation_id MUST equal the request's id: its message_id, or its\n           correlation_id when it has no message_id." in out
    assert "unobservable: The mandatory flag" in out
    assert re.search(r"^\d+ clauses: \d+ asserted by a scenario, \d+ unobservable on the wire$", out, re.M)


def test_every_clause_path_is_checked_by_a_scenario_or_says_why_it_cannot_be_observed() -> None:
    """The path table (issue 33): every path the spec makes a clause govern names the scenarios
    checking the clause on it (each asserting the clause; a gather path, with a gather of that
    mode and count), or the catalogue's reason it cannot be observed there."""
    problems = path_problems(catalogue.catalogue(), load_all())
    assert not problems, "the path table does not hold:\n" + "\n".join(problems)


def test_path_problems_names_a_pair_with_neither_a_scenario_nor_a_reason() -> None:
    import dataclasses

    cat = catalogue.catalogue()
    table = dict(cat.path_table)
    table["SG-7.1"] = (catalogue.PathEntry("gather_multi_no_count"),
                      catalogue.PathEntry("gather_publish_no_count", ("sg-gatherer-shortfall-partial",)),
                      catalogue.PathEntry("gather_multi_count", ("sg-gatherer-no-count-empty",)))
    problems = path_problems(dataclasses.replace(cat, path_table=table), load_all())
    assert "SG-7.1 on gather_multi_no_count: no scenario checks it and the catalogue gives no reason" in problems
    assert any(p.startswith("SG-7.1 on gather_publish_no_count: scenario sg-gatherer-shortfall-partial does not assert") for p in problems)
    assert any(p.startswith("SG-7.1 on gather_multi_count: scenario sg-gatherer-no-count-empty has no multi gather with") for p in problems)


@pytest.mark.parametrize("edit, message", [
    ("  RR-4.3: {normal_reply: [rr-responder-header-only]}\n", "give the paths these clauses govern: RR-4.3"),
    ("  RR-4.3: {normal_reply: [rr-responder-header-only]}\n", None),
])
def test_the_loader_refuses_a_bad_path_table_with_its_file_and_line(tmp_path, edit, message) -> None:
    text = catalogue.CATALOGUE_FILE.read_text(encoding="utf-8")
    assert edit in text
    bad = tmp_path / "catalogue.yaml"
    if message:  # a clause left out of the table
        bad.write_text(text.replace(edit, ""), encoding="utf-8")
        with pytest.raises(catalogue.CatalogueError, match=re.escape(message)) as err:
            catalogue.load(bad)
        assert re.match(rf"{re.escape(str(bad))}:\d+: ", str(err.value))
        return
    for wrong, said in [("{normal_reply: [rr-responder-header-only], nowhere: [x]}", "path 'nowhere' is not in paths:"),
                        ("{normal_reply: {unchecked: no}}", "a non-empty list of scenario ids, or {unchecked:"),
                        ("{normal_reply: []}", "a non-empty list of scenario ids")]:
        bad.write_text(text.replace(edit, f"  RR-4.3: {wrong}\n"), encoding="utf-8")
        line = 1 + text[:text.index(edit)].count("\n")
        with pytest.raises(catalogue.CatalogueError, match=re.escape(said)) as err:
            catalogue.load(bad)
        assert str(err.value).startswith(f"{bad}:{line}: "), str(err.value)


def test_list_rules_prints_each_clause_s_paths(capsys) -> None:
    assert main(["list", "--rules"]) == 0
    out = capsys.readouterr().out
    assert "on gather_multi_no_count: sg-gatherer-multi-no-count" in out
    assert re.search(r"^\d+ \(clause, path\) pairs: \d+ checked by a scenario, \d+ unchecked with a reason", out, re.M)


def test_an_unchecked_path_shows_its_reason_in_the_table() -> None:
    """A path no scenario can observe is printed with the catalogue's reason, and counted."""
    import dataclasses

    from acemq_interop.spec.clause_table import as_text

    cat = catalogue.catalogue()
    reason = "a reason no scenario can observe it there, written in the catalogue"
    table = {**cat.path_table, "RR-4.3": (*cat.path_table["RR-4.3"], catalogue.PathEntry("failure_reply", (), reason))}
    changed = dataclasses.replace(cat, path_table=table)
    assert path_problems(changed, load_all()) == []
    text = as_text(clause_rows(changed, load_all()))
    assert f"on failure_reply: unchecked: {reason}" in " ".join(text.split())
    assert re.search(r"unchecked with a reason \(RR-4.3 on failure_reply\)$", text, re.M)
