"""Scenario files are checked before anything runs: path, line and what is wrong."""
from __future__ import annotations

from pathlib import Path

import pytest

from acemq_interop.errors import UsageError
from acemq_interop.scenarios import load_all, load_file

GOOD = """\
id: demo-round-trip
title: A demo round trip for the loader
rules: [RR-4]
roles: {requester: peer, responder: peer}
procedure: One request, one echo reply.
steps:
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-4}
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
        (("rules: [RR-4]", "rules: [RR-99]"), 3, "RR-99 is not in docs/wire-spec.md"),
        (("role: responder, queue", "role: waiter, queue"), 7, "role 'waiter' is not declared"),
        (("{that: call.outcome", "{that: kall.outcome"), 11, "'kall' is not named by an earlier step"),
        (("rule: RR-4}", "rule: RR-3}"), 11, "RR-3, which is not in this scenario's rules"),
        (("  - expect:", "  - expectt:"), 10, "expectt"),
        (("roles: {requester: peer", "roles: {requester: robot"), 4, "'robot' is not one of"),
        (("rule: RR-4}", "rule: RR-4.9}"), 11, "clause RR-4.9 is not in catalogue/catalogue.yaml"),
        (("rule: RR-4}", "rule: RR-3.1}"), 11, "RR-3.1, which is not in this scenario's rules"),
    ],
)
def test_a_bad_file_names_its_path_line_and_problem(tmp_path: Path, change: tuple[str, str], line: int, words: str) -> None:
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(UsageError) as raised:
        load_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


def test_a_step_may_name_a_clause_of_a_listed_rule(tmp_path: Path) -> None:
    scenario = load_file(write(tmp_path, GOOD.replace("rule: RR-4}", "rule: RR-4.2}")))
    assert scenario.rules == ("RR-4",)


def test_broken_yaml_gives_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("rules: [RR-4]", "rules: [RR-4"))
    with pytest.raises(UsageError, match=rf"{path}:\d+: not valid YAML"):
        load_file(path)


def test_a_mutant_claimed_must_break_a_rule_the_scenario_lists(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("roles:", "catches: [native-first]\nroles:"))
    with pytest.raises(UsageError, match="breaks RR-3, which this scenario does not list"):
        load_file(path)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(GOOD)
    with pytest.raises(UsageError, match="id 'demo-round-trip' is also used by"):
        load_all(tmp_path)
