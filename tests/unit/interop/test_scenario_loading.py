"""Scenario files are checked before anything runs: path, line and what is wrong."""
from __future__ import annotations

from pathlib import Path

import pytest

from acemq_interop.errors import UsageError
from acemq_interop.scenarios import load_all, load_file

GOOD = """\
id: demo-round-trip
title: A demo round trip for the loader
rules: [RR-8]
roles: {requester: peer, responder: peer}
procedure: One request, one echo reply.
steps:
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_every_scenario_in_the_repo_loads() -> None:
    loaded = load_all()
    assert len(loaded) >= 30
    assert len({s.id for s in loaded}) == len(loaded)


def test_a_good_file_loads_with_the_capabilities_its_roles_need(tmp_path: Path) -> None:
    scenario = load_file(write(tmp_path, GOOD))
    assert scenario.needs == {"requester": {"request"}, "responder": {"respond"}}
    assert scenario.matrix == "pairs"


@pytest.mark.parametrize(
    "change, line, words",
    [
        (("timeout_ms: 1000", "timeout_ms: soon"), 9, "is not of type 'integer'"),
        (("rules: [RR-8]", "rules: [RR-99]"), 3, "RR-99 is not in docs/wire-spec.md"),
        (("role: responder, queue", "role: waiter, queue"), 7, "role 'waiter' is not declared"),
        (("{that: call.outcome", "{that: kall.outcome"), 11, "'kall' is not named by an earlier step"),
        (("rule: RR-8.1}", "rule: RR-3.1}"), 11, "a check asserts RR-3.1, whose rule RR-3 is not in this scenario's rules"),
        (("rule: RR-8.1}", "rule: RR-8}"), 11, "rule: RR-8 names a rule; a check names the clause it asserts: one of RR-8.1, RR-8.2, RR-8.3"),
        (("rule: RR-8.1}", "rule: RR-8.9}"), 11, "rule: RR-8.9 is not a clause of catalogue/catalogue.yaml (RR-8 has RR-8.1, RR-8.2, RR-8.3)"),
        (("rules: [RR-8]", "rules: [RR-8, RR-4]"), 3, "rule RR-4 is listed but no check asserts a clause of it"),
        (("rule: RR-8.1}", "rule: RR-8.1, consequence_of: RR-8.1}"), 11, "consequence_of: RR-8.1 is the clause this check asserts"),
        (("rule: RR-8.1}", "rule: RR-8.1, consequence_of: RR-8}"), 11, "consequence_of: RR-8 names a rule"),
        (("  - expect:", "  - expectt:"), 10, "expectt"),
        (("roles: {requester: peer", "roles: {requester: robot"), 4, "'robot' is not one of"),
    ],
)
def test_a_bad_file_names_its_path_line_and_problem(tmp_path: Path, change: tuple[str, str], line: int, words: str) -> None:
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(UsageError) as raised:
        load_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


def test_broken_yaml_gives_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("rules: [RR-8]", "rules: [RR-8"))
    with pytest.raises(UsageError, match=rf"{path}:\d+: not valid YAML"):
        load_file(path)


def test_a_mutant_claimed_must_break_a_clause_the_scenario_asserts(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("roles:", "catches: [native-first]\nroles:"))
    with pytest.raises(UsageError, match=r"scenario.yaml:4: mutant 'native-first' breaks RR-3.1, which no check of this scenario asserts"):
        load_file(path)
    # The rule alone is not enough: timeouts-not-counted breaks RR-9.2, and the check asserts RR-9.1.
    text = GOOD.replace("rules: [RR-8]", "rules: [RR-9]").replace("rule: RR-8.1", "rule: RR-9.1")
    path = write(tmp_path, text.replace("roles:", "catches: [timeouts-not-counted]\nroles:"))
    with pytest.raises(UsageError, match=r"breaks RR-9.2, which no check of this scenario asserts \(it asserts RR-9.1\)"):
        load_file(path)


def test_the_clauses_come_from_the_checks_including_consequences(tmp_path: Path) -> None:
    text = GOOD.replace("rules: [RR-8]", "rules: [RR-8, RR-9, RR-2]").replace("rule: RR-8.1}", """rule: RR-8.1}
      - {that: call.outcome, equals: reply, rule: RR-9.1, consequence_of: RR-2.2}
  - wait_event: {of: q, event: unmatched, rule: RR-8.2}""")
    scenario = load_file(write(tmp_path, text))
    assert scenario.clauses == ("RR-8.1", "RR-9.1", "RR-2.2", "RR-8.2")
    assert scenario.rules == ("RR-8", "RR-9", "RR-2")


@pytest.mark.parametrize("step, key", [
    ("  - probe_get: {as: none, queue: requests, absent: true, timeout_ms: 0}", "absent"),
    ("  - counters: {as: k, of: q, until: {timed_out: 0}}", "until"),
])
def test_a_step_that_checks_must_name_its_clause(tmp_path: Path, step: str, key: str) -> None:
    """There is no default clause: a check without one is refused (it used to FAIL as RR-1)."""
    path = write(tmp_path, GOOD + step + "\n")
    with pytest.raises(UsageError, match=rf"scenario.yaml:12: \w+ with {key} is a check: give it `rule:`"):
        load_file(path)


def test_every_scenario_lists_exactly_the_rules_it_asserts_and_catches_only_what_it_asserts() -> None:
    from acemq_interop.catalogue import mutants, rule_of

    for scenario in load_all():
        assert set(scenario.rules) == {rule_of(c) for c in scenario.clauses}, scenario.id
        for name in scenario.catches:
            assert mutants()[name].clause in scenario.clauses, (scenario.id, name)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(GOOD)
    with pytest.raises(UsageError, match="id 'demo-round-trip' is also used by"):
        load_all(tmp_path)
