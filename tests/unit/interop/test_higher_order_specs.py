"""Higher-order mutants: a peer spec carrying several mutants, each on an object of its own."""
from __future__ import annotations

import pytest

from acemq_interop.spec import catalogue as spec
from acemq_interop.run.cells import Cell, plan, skip_reason
from acemq_interop.core.errors import UsageError
from acemq_interop.peers.manifests import PeerSpec, discover, parse_peer_list
from acemq_interop.spec.scenarios import load_all
from acemq_interop.run.steps import _mutant_for

SCENARIOS = {s.id: s for s in load_all()}


def _one(side: str) -> str:
    return next(m.name for m in spec.mutants().values() if m.side == side)


REQUESTER, RESPONDER, GATHERER = _one("requester"), _one("responder"), _one("gatherer")


def test_a_spec_may_carry_a_requester_and_a_responder_mutant_in_the_order_given() -> None:
    parsed = PeerSpec.parse(f"go+{REQUESTER}+{RESPONDER}")
    assert parsed == PeerSpec("go", "current", (REQUESTER, RESPONDER))
    assert parsed.mutants == (REQUESTER, RESPONDER)
    assert parsed.label == f"go+{REQUESTER}+{RESPONDER}"  # the text as given: the row and column name
    reverse = PeerSpec.parse(f"go@0.3.0+{RESPONDER}+{REQUESTER}")
    assert reverse.label == f"go@0.3.0+{RESPONDER}+{REQUESTER}" and reverse.profile == "0.3.0"
    assert reverse != PeerSpec.parse(f"go@0.3.0+{REQUESTER}+{RESPONDER}")  # another label, another row
    # A gatherer mutant lives on the requester: with a responder mutant it is fine.
    assert PeerSpec.parse(f"ruby+{GATHERER}+{RESPONDER}").mutants == (GATHERER, RESPONDER)


def test_the_old_single_mutant_forms_still_work() -> None:
    assert PeerSpec.parse("go") == PeerSpec("go", "current", None) == PeerSpec("go")
    assert PeerSpec.parse("go").mutants == () and PeerSpec.parse("go").mutant is None
    single = PeerSpec.parse(f"python+{REQUESTER}")
    assert single == PeerSpec("python", "current", REQUESTER)  # a str third argument is one mutant
    assert single.mutants == (REQUESTER,) and single.mutant == REQUESTER
    assert single.label == f"python+{REQUESTER}"


def test_each_side_is_given_only_its_own_mutant() -> None:
    both = PeerSpec.parse(f"go+{RESPONDER}+{REQUESTER}")
    assert _mutant_for(both, "requester.open") == REQUESTER == both.mutant_on("requester.open")
    assert _mutant_for(both, "responder.start") == RESPONDER == both.mutant_on("responder.start")
    gathering = PeerSpec.parse(f"go+{GATHERER}")
    assert _mutant_for(gathering, "requester.open") == GATHERER
    assert _mutant_for(gathering, "responder.start") is None
    assert _mutant_for(PeerSpec("go"), "requester.open") is None


@pytest.mark.parametrize("first, second, says", [
    (REQUESTER, next(m.name for m in spec.mutants().values() if m.side == "requester" and m.name != REQUESTER),
     "both act on requesters"),
    (RESPONDER, next(m.name for m in spec.mutants().values() if m.side == "responder" and m.name != RESPONDER),
     "both act on responders"),
    (REQUESTER, GATHERER, "a gatherer mutant lives on the requester"),
    (GATHERER, REQUESTER, "a gatherer mutant lives on the requester"),
])
def test_two_mutants_on_one_object_are_refused_naming_both(first: str, second: str, says: str) -> None:
    with pytest.raises(UsageError) as refused:
        PeerSpec.parse(f"go+{first}+{second}")
    message = str(refused.value)
    assert f"'{first}'" in message and f"'{second}'" in message and says in message
    assert "one mutant, not a list" in message


def test_a_mutant_named_twice_is_refused() -> None:
    with pytest.raises(UsageError, match="named twice"):
        PeerSpec.parse(f"go+{RESPONDER}+{RESPONDER}")


@pytest.mark.parametrize("text", ["go+no-such-mutant", f"go+{REQUESTER}+no-such-mutant", f"go+no-such-mutant+{RESPONDER}"])
def test_an_unknown_mutant_is_a_usage_error_listing_the_mutants(text: str) -> None:
    with pytest.raises(UsageError, match=r"unknown mutant 'no-such-mutant'; mutants: acks-on-delivery, acks-undeliverable"):
        PeerSpec.parse(text)


@pytest.mark.parametrize("text", ["go+", f"go++{REQUESTER}", f"go+{REQUESTER}+", f"go+{REQUESTER}@0.3.0"])
def test_a_malformed_mutant_list_is_not_a_peer_spec(text: str) -> None:
    with pytest.raises(UsageError, match="is not a peer spec"):
        PeerSpec.parse(text)


def test_a_peer_list_takes_higher_order_specs() -> None:
    specs = parse_peer_list(f"go+{REQUESTER}+{RESPONDER},ruby+{RESPONDER},python", discover())
    assert [s.label for s in specs] == [f"go+{REQUESTER}+{RESPONDER}", f"ruby+{RESPONDER}", "python"]


def test_a_cell_is_planned_when_any_of_its_mutants_acts() -> None:
    requester_only, pair = SCENARIOS["rr-requester-writes-both-addresses"], SCENARIOS["rr-pair-round-trip"]
    responder_only = PeerSpec("a", "current", RESPONDER)
    assert plan([requester_only], [responder_only], diagonal=True) == []
    both = PeerSpec("a", "current", (RESPONDER, REQUESTER))
    assert [c.id for c in plan([requester_only], [both], diagonal=True)] == [
        f"rr-requester-writes-both-addresses[requester=a+{RESPONDER}+{REQUESTER}]"]
    assert len(plan([pair], [both], diagonal=True)) == 1
    # A pair of single mutants: the cell where neither acts (the responder mutant's peer
    # requesting of the requester mutant's peer) is left out.
    req, resp = PeerSpec("a", "current", REQUESTER), PeerSpec("b", "current", RESPONDER)
    assert [c.id for c in plan([pair], [req, resp])] == [
        f"rr-pair-round-trip[requester=a+{REQUESTER},responder=a+{REQUESTER}]",
        f"rr-pair-round-trip[requester=a+{REQUESTER},responder=b+{RESPONDER}]",
        f"rr-pair-round-trip[requester=b+{RESPONDER},responder=b+{RESPONDER}]",
    ]


def test_every_mutant_of_a_spec_must_be_offered() -> None:
    pair = SCENARIOS["rr-pair-round-trip"]
    both = PeerSpec("a", "current", (REQUESTER, RESPONDER))
    cell = Cell(pair, (("requester", both), ("responder", both)))
    hello = {"protocol": 99, "capabilities": sorted({c for caps in pair.needs.values() for c in caps}), "profiles": ["current"]}
    assert skip_reason(cell, {"a": {**hello, "mutants": [REQUESTER, RESPONDER]}}, {}) is None
    assert skip_reason(cell, {"a": {**hello, "mutants": [REQUESTER]}}, {}) == f"peer a does not offer mutant {RESPONDER}"
    assert skip_reason(cell, {"a": {**hello, "mutants": [RESPONDER]}}, {}) == f"peer a does not offer mutant {REQUESTER}"
