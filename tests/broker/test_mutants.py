"""The suite proves its power: every mutant of every peer is caught by every scenario that
claims it (`catches:`), and fails no scenario that does not check the mutant's rule
(`rules:`): it FAILs the scenarios that check that rule, and only those.

One diagonal run per peer: each mutant plays every role against itself and the probe (the
harness gives a mutant only to the side it acts on, so the other side is the clean binding).
"""
from __future__ import annotations

from collections import defaultdict

import pytest

from acemq_interop import catalogue as spec
from acemq_interop.cells import FAIL, PASS
from acemq_interop.manifests import PeerSpec, discover
from acemq_interop.scenarios import load_all
from support import describe, run

pytestmark = pytest.mark.broker

CAUGHT_BY: dict[str, set[str]] = defaultdict(set)
CHECKING: dict[str, set[str]] = defaultdict(set)  # rule -> scenarios that check it
for _scenario in load_all():
    for _mutant in _scenario.catches:
        CAUGHT_BY[_mutant].add(_scenario.id)
    for _rule in _scenario.rules:
        CHECKING[_rule].add(_scenario.id)


@pytest.mark.parametrize("peer", sorted(discover()))
def test_every_mutant_is_caught_by_its_scenarios_and_only_where_its_rule_is_checked(broker, peer: str) -> None:
    mutants = sorted(spec.mutants())
    report = run(broker, [f"{peer}+{m}" for m in mutants], diagonal=True, with_known_failures=False, concurrency=6)
    offered = set(next(iter(report.peers.values())).hello.get("mutants", []))
    assert offered == set(mutants), f"{peer} must offer every catalogue mutant; missing {set(mutants) - offered}"
    by_mutant = defaultdict(list)
    for result in report.results:
        by_mutant[PeerSpec.parse(result.peers[0]).mutant].append(result)
    problems = []
    for mutant in mutants:
        results = by_mutant[mutant]
        rule = spec.mutants()[mutant].rule
        failed = {r.scenario for r in results if r.status == FAIL}
        others = [r for r in results if r.status not in (PASS, FAIL)]
        missed = CAUGHT_BY[mutant] - failed
        stray = failed - CHECKING[rule]
        if missed or stray or others:
            problems.append(
                f"{peer}+{mutant} (breaks {rule}): not caught by {sorted(missed)}; "
                f"failed scenarios that do not check {rule}: {sorted(stray)}\n"
                + describe([r for r in results if r.status != PASS])
            )
    assert not problems, "\n\n".join(problems)
