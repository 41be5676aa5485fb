"""Every clause of the catalogue is asserted by a scenario, or says why no scenario can see it."""
from __future__ import annotations

import json
import re

import pytest

from acemq_interop.spec import catalogue
from acemq_interop.commands.cli import main
from acemq_interop.spec.clause_table import clause_rows, totals
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
    assert set(data[0]) == {"rule", "clause", "text", "asserted_by", "unobservable"}
    by_clause = {d["clause"]: d for d in data}
    assert "rr-requester-writes-both-addresses" in by_clause["RR-1.2"]["asserted_by"]
    assert by_clause["RR-13.1"]["unobservable"] and by_clause["RR-13.1"]["asserted_by"] == []


def test_list_rules_prints_each_clause_with_what_asserts_it(capsys) -> None:
    assert main(["list", "--rules"]) == 0
    out = capsys.readouterr().out
    assert "  RR-4.2   A reply's correlation_id MUST equal the request's id: its message_id, or its\n           correlation_id when it has no message_id." in out
    assert "unobservable: The mandatory flag" in out
    assert re.search(r"^\d+ clauses: \d+ asserted by a scenario, \d+ unobservable on the wire$", out, re.M)
