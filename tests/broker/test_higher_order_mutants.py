"""Higher-order mutants prove it: with two defects in one cell, the cell names both, and each
is charged to the peer that has it.

test_mutants.py proves every mutant alone. Here a seeded sample of combinations runs:

(a) one peer with a requester-side mutant (a requester or gatherer one: both live on
    `requester.open`) and a responder-side mutant of another clause (`go+X+Y`), `--diagonal`;
(b) a pair: peer X with a requester-side mutant facing peer Y (another language) with a
    responder-side mutant, in the `pairs` scenarios (rr-pair-*, sg-pair-*).

Only the scenarios claiming one of the combination's mutants (`catches:`) run. For every
cell, the expected clauses are those of the mutants that act in it (the side its role opens)
and that its scenario claims; the cell FAILs iff there are some, its `broken_clauses` are
exactly those, and each failure is charged (`failure.peer`) to the label carrying the mutant.
One exception: an expected clause the other mutant's defect hides (not broken, but listed in
`not_evaluated`, while the cell broke another expected clause) is right per the spec and is
only logged.

The sample is drawn from ACEMQ_HO_SEED (default fixed, so CI is reproducible for one
catalogue and scenario set; the seed and the combinations are printed): `ACEMQ_HO_SEED=7 pytest -s tests/broker/test_higher_order_mutants.py`.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass

import pytest

from acemq_interop.spec import catalogue as spec
from acemq_interop.run.cells import FAIL, PASS
from acemq_interop.peers.manifests import PeerSpec, discover
from acemq_interop.results.model import CellResult
from acemq_interop.spec.scenarios import Scenario, load_all
from support import log, run

pytestmark = pytest.mark.broker

DEFAULT_SEED = 20240611
SEED = int(os.environ.get("ACEMQ_HO_SEED", DEFAULT_SEED))
ONE_PEER_COMBINATIONS = int(os.environ.get("ACEMQ_HO_ONE_PEER", 4))  # (a)
PAIR_COMBINATIONS = int(os.environ.get("ACEMQ_HO_PAIRS", 2))  # (b)
# A mutant whose claimed scenarios include one that waits longer than this is left out of
# the sample (rr-pair-responder-redeploy waits ~170 s): the test stays within minutes.
MAX_SCENARIO_S = 35.0
CONCURRENCY = 6

SCENARIOS: dict[str, Scenario] = {s.id: s for s in load_all() if s.nodes == 1}  # the cluster scenarios need --cluster
PAIRS = {sid for sid, s in SCENARIOS.items() if s.matrix == "pairs"}
LANGUAGES = sorted(discover())


def claimed_by(mutant: str, among: set[str] | None = None) -> set[str]:
    return {sid for sid, s in SCENARIOS.items() if mutant in s.catches and (among is None or sid in among)}


def _cheap(mutant: str, among: set[str] | None = None) -> bool:
    claimed = claimed_by(mutant, among)
    return bool(claimed) and max(SCENARIOS[s].estimate_s for s in claimed) <= MAX_SCENARIO_S


def _pool(acts_on: str, among: set[str] | None = None) -> list[str]:
    """The sampled mutants acting on `acts_on`: every peer can have them (no only_where), a
    scenario (of `among`) claims them, and their scenarios are short enough."""
    return sorted(name for name, m in spec.mutants().items()
                  if m.acts_on == acts_on and not m.only_where and _cheap(name, among))


@dataclass(frozen=True)
class Combination:
    kind: str  # "one-peer" (a) or "pair" (b)
    specs: tuple[str, ...]  # the peer specs, as given to --peers
    scenarios: tuple[str, ...]  # the scenarios that claim one of its mutants

    @property
    def mutants(self) -> list[str]:
        return [m for s in self.specs for m in PeerSpec.parse(s).mutants]

    def describe(self) -> str:
        parts = [f"{m} ({spec.mutants()[m].side}, {spec.mutants()[m].clause})" for m in self.mutants]
        return f"{self.kind} {' vs '.join(self.specs)}: {'; '.join(parts)}; scenarios {list(self.scenarios)}"


def sample(seed: int) -> list[Combination]:
    rng = random.Random(seed)
    requester_side, responder_side = _pool("requester.open"), _pool("responder.start")
    chosen: list[Combination] = []
    used: set[str] = set()  # no mutant twice in one sample: more of the catalogue is combined
    while len(chosen) < ONE_PEER_COMBINATIONS:
        peer, first = rng.choice(LANGUAGES), rng.choice(requester_side)
        second = rng.choice([m for m in responder_side if spec.mutants()[m].clause != spec.mutants()[first].clause])
        text = f"{peer}+{first}+{second}" if rng.random() < 0.5 else f"{peer}+{second}+{first}"  # either order parses
        if {first, second} & used:
            continue
        used |= {first, second}
        chosen.append(Combination("one-peer", (text,), tuple(sorted(claimed_by(first) | claimed_by(second)))))
    pair_requester, pair_responder = _pool("requester.open", PAIRS), _pool("responder.start", PAIRS)
    while len(chosen) < ONE_PEER_COMBINATIONS + PAIR_COMBINATIONS:
        x, y = rng.sample(LANGUAGES, 2)
        first = rng.choice(pair_requester)
        others = [m for m in pair_responder if spec.mutants()[m].clause != spec.mutants()[first].clause]
        # Prefer a responder mutant some scenario claims together with the requester's: that
        # is where one defect can hide or blur the other.
        sharing = [m for m in others if claimed_by(m, PAIRS) & claimed_by(first, PAIRS)]
        second = rng.choice(sharing if sharing and rng.random() < 0.75 else others)
        if {first, second} & used:
            continue
        used |= {first, second}
        chosen.append(Combination("pair", (f"{x}+{first}", f"{y}+{second}"),
                                  tuple(sorted(claimed_by(first, PAIRS) | claimed_by(second, PAIRS)))))
    return chosen


SAMPLE = sample(SEED)


def _specs(who) -> list[PeerSpec]:
    return [PeerSpec.parse(label) for label in (who if isinstance(who, list) else [who])] if who and who != "probe" else []


def acting(result: CellResult) -> list[str]:
    """`label:mutant (clause)` for each mutant that runs its code in the cell, claimed or not."""
    scenario = SCENARIOS[result.scenario]
    return [f"{peer.label}:{m} ({spec.mutants()[m].clause}{'' if m in scenario.catches else ', unclaimed'})"
            for role, who in result.roles.items() for peer in _specs(who) for m in peer.mutants
            if scenario.mutant_acts(role, m)]


def expected_charges(result: CellResult) -> dict[str, set[str]]:
    """clause -> the labels to charge: one per mutant that acts in the cell and that its
    scenario claims."""
    scenario = SCENARIOS[result.scenario]
    expected: dict[str, set[str]] = {}
    for role, who in result.roles.items():
        for peer in _specs(who):
            for mutant in peer.mutants:
                if scenario.mutant_acts(role, mutant) and mutant in scenario.catches:
                    expected.setdefault(spec.mutants()[mutant].clause, set()).add(peer.label)
    return expected


def hidden(result: CellResult) -> set[str]:
    """The expected clauses one mutant's defect legitimately hides: not broken, listed as not
    evaluated, in a cell that broke another expected clause (a responder that leaves out
    responseMessageId leaves a gather no reply to judge its count by). Right per the spec:
    the check cannot be made, and the cell says so; it is logged, not a problem."""
    expected = set(expected_charges(result))
    broken = set(result.broken_clauses)
    if not broken & expected:
        return set()
    return (expected - broken) & {n.clause for n in result.not_evaluated}


def also_named(result: CellResult) -> dict[str, set[str]]:
    """clause -> labels: an acting mutant's clause the cell names where its scenario does not
    claim it, by the two routes that judge beyond a scenario's own checks (the same rule as
    test_mutants.py): the broker's transcript showed a message of the mutant's peer breaking
    it, or the scenario presumes the clause (`assumes:`) and the peer broke it elsewhere."""
    scenario = SCENARIOS[result.scenario]
    mine = {(spec.mutants()[m].clause, peer.label) for role, who in result.roles.items() for peer in _specs(who)
            for m in peer.mutants if scenario.mutant_acts(role, m)}
    found: dict[str, set[str]] = {}
    for f in result.failures:
        beyond = (f.wire or "").startswith("transcript") or (f.seen_as and "seen through" in f.message)
        if beyond and (f.clause, f.peer) in mine:
            found.setdefault(f.clause, set()).add(str(f.peer))
    return found


def cell_problems(result: CellResult) -> list[str]:
    expected = expected_charges(result)
    for clause, labels in also_named(result).items():
        expected.setdefault(clause, set()).update(labels)
    problems = []
    if result.status not in (PASS, FAIL):
        problems.append(f"{result.status}: {result.message[:300]}")
    elif (result.status == FAIL) != bool(expected):
        problems.append(f"{result.status}, expected {'FAIL' if expected else 'PASS'}")
    broken = set(result.broken_clauses) | hidden(result)
    if result.status in (PASS, FAIL) and broken != set(expected):
        problems.append(f"broke {sorted(broken)}, expected exactly {sorted(expected)}"
                        + (f" (missing {sorted(set(expected) - broken)})" if set(expected) - broken else "")
                        + (f" (extra {sorted(broken - set(expected))})" if broken - set(expected) else ""))
    for failure in result.failures:
        labels = expected.get(failure.clause)
        if labels and failure.peer not in labels:
            who = failure.peer if failure.peer else f"no one (suspects {list(failure.suspects)})"
            problems.append(f"{failure.clause} charged to {who}, expected {sorted(labels)}")
    return problems


def show(result: CellResult) -> str:
    lines = [f"  {result.status} {result.id}; acting: {', '.join(acting(result))}"]
    lines += [f"    failure {f.clause} side={f.side} role={f.role} peer={f.peer} ({f.check}): {f.message[:240]}"
              + (f" [seen as {f.seen_as}]" if f.seen_as else "") for f in result.failures]
    lines += [f"    not evaluated {n.clause} ({n.check}): {n.needs[:200]}" for n in result.not_evaluated]
    return "\n".join(lines)


def judge(results: list[CellResult]) -> list[str]:
    problems = []
    for result in results:
        found = cell_problems(result)
        expected = expected_charges(result)
        log(f"{result.status} {result.id}: broke {result.broken_clauses}, expected {sorted(expected)}"
            + (f", {len(result.not_evaluated)} not evaluated" if result.not_evaluated else "")
            + (f", hidden by the other defect (not evaluated): {sorted(hidden(result))}" if hidden(result) else "")
            + ("" if not found else " <- " + "; ".join(found)))
        if found:
            # Where one mutant acts alone, the problem is that mutant's own (test_mutants.py
            # judges a cell by its first clause only, so an extra one goes unseen there).
            alone = len(acting(result)) < 2
            problems.append(f"{result.id}: " + "; ".join(found) + (" [one mutant acts alone]" if alone else " [two act]")
                            + "\n" + show(result))
    return problems


def _announce(kind: str) -> list[Combination]:
    chosen = [c for c in SAMPLE if c.kind == kind]
    log(f"higher-order mutants, seed {SEED} (ACEMQ_HO_SEED to override; default {DEFAULT_SEED}):")
    for combination in chosen:
        log(f"  {combination.describe()}")
    return chosen


def test_the_sample_is_what_it_says() -> None:
    """Each combination is valid: (a) one peer, a requester-side and a responder-side mutant of
    different clauses; (b) two languages, each with one mutant, on different sides."""
    assert len(SAMPLE) == ONE_PEER_COMBINATIONS + PAIR_COMBINATIONS
    assert sample(SEED) == SAMPLE  # reproducible from its seed
    for combination in SAMPLE:
        specs = [PeerSpec.parse(s) for s in combination.specs]
        mutants = [spec.mutants()[m] for m in combination.mutants]
        assert sorted(m.acts_on for m in mutants) == ["requester.open", "responder.start"], combination
        assert mutants[0].clause != mutants[1].clause, combination
        assert combination.scenarios, combination
        if combination.kind == "pair":
            assert len({s.name for s in specs}) == 2 and set(combination.scenarios) <= PAIRS, combination
        else:
            assert len(specs) == 1, combination


def test_one_peer_with_two_mutants_names_both_clauses_diagonal(broker) -> None:
    chosen = _announce("one-peer")
    scenarios = sorted({s for c in chosen for s in c.scenarios})
    report = run(broker, [s for c in chosen for s in c.specs], scenarios, diagonal=True, with_known_failures=False,
                 concurrency=CONCURRENCY)
    assert report.results, "no cell was planned"
    problems = judge(report.results)
    assert not problems, f"seed {SEED}: {len(problems)} cell(s) misattributed:\n" + "\n".join(problems)


@pytest.mark.parametrize("index", range(PAIR_COMBINATIONS))
def test_a_pair_of_mutant_peers_charges_each_its_own_clause(broker, index: int) -> None:
    combination = _announce("pair")[index]
    report = run(broker, list(combination.specs), list(combination.scenarios), with_known_failures=False,
                 concurrency=CONCURRENCY)
    assert report.results, "no cell was planned"
    # The cell where each mutant faces the other is the point of (b): it must be there.
    x, y = combination.specs
    assert any(r.roles.get("requester") == x and r.roles.get("responder") == y for r in report.results), \
        [r.id for r in report.results]
    problems = judge(report.results)
    assert not problems, f"seed {SEED}, {combination.describe()}: {len(problems)} cell(s) misattributed:\n" + "\n".join(problems)
