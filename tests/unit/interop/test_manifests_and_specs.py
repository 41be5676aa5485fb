"""Peer specs, manifests and the spec-derived catalogue."""
from __future__ import annotations

from pathlib import Path

import pytest

from acemq_interop.spec import catalogue as spec
from acemq_interop.run.cells import plan
from acemq_interop.core.errors import UsageError
from acemq_interop.spec.known_failures import KnownFailure
from acemq_interop.peers.manifests import PeerSpec, discover, load_manifest, parse_peer_list
from acemq_interop.spec.scenarios import load_all


def test_peer_spec_syntax() -> None:
    assert PeerSpec.parse("go") == PeerSpec("go", "current", None)
    assert PeerSpec.parse("dotnet@0.7.12") == PeerSpec("dotnet", "0.7.12", None)
    assert PeerSpec.parse("python@0.3.0+native-only").label == "python@0.3.0+native-only"
    assert PeerSpec.parse("python+native-only").label == "python+native-only"
    with pytest.raises(UsageError, match="is not a peer spec"):
        PeerSpec.parse("Go Lang")


def test_unknown_peer_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown peer 'cobol'.*known: .*python"):
        parse_peer_list("python,cobol", discover())


def test_every_peer_folder_has_a_complete_manifest() -> None:
    manifests = discover()
    assert {"python", "go", "ruby", "dotnet", "java", "node"} <= set(manifests)
    for manifest in manifests.values():
        assert manifest.run and manifest.language
        assert (manifest.folder / "README.md").exists(), manifest.name
        assert (manifest.folder / manifest.docker.get("dockerfile", "Dockerfile")).exists(), manifest.name


def test_a_manifest_without_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "peer.yaml").write_text("name: x\nlanguage: X\n")
    with pytest.raises(UsageError, match="missing 'run'"):
        load_manifest(tmp_path / "peer.yaml")


def test_the_catalogue_is_read_from_the_wire_spec() -> None:
    mutants = spec.mutants()
    assert len(mutants) >= 15
    assert mutants["native-only"].acts_on == "requester.open"
    assert mutants["gather-by-correlation-id"].acts_on == "requester.open"
    assert mutants["no-strip"].acts_on == "responder.start"
    assert all(m.rule in spec.rules() for m in mutants.values())


def test_every_mutant_is_caught_by_some_scenario() -> None:
    caught = {m for s in load_all() for m in s.catches}
    assert caught == set(spec.mutants())


def test_pairs_are_the_full_product_and_diagonal_only_the_diagonal() -> None:
    scenario = next(s for s in load_all() if s.id == "rr-pair-round-trip")
    specs = [PeerSpec("a"), PeerSpec("b"), PeerSpec("a", "0.3.0")]
    assert len(plan([scenario], specs)) == 9
    diagonal = plan([scenario], specs, diagonal=True)
    assert [c.id for c in diagonal] == [
        "rr-pair-round-trip[requester=a,responder=a]",
        "rr-pair-round-trip[requester=b,responder=b]",
        "rr-pair-round-trip[requester=a@0.3.0,responder=a@0.3.0]",
    ]


def test_a_mutant_cell_is_planned_only_where_the_mutant_has_code_to_run() -> None:
    """A responder mutant on a requester-only scenario is the clean binding again: left out.
    On a pair, it acts only from the responder's role."""
    scenarios = {s.id: s for s in load_all()}
    responder_mutant = next(m for m in spec.mutants().values() if m.side == "responder").name
    requester_only, pair = scenarios["rr-requester-writes-both-addresses"], scenarios["rr-pair-round-trip"]
    assert requester_only.opens == {"requester": frozenset({"requester"}), "responder": frozenset()}
    mutated = PeerSpec("a", "current", responder_mutant)
    assert plan([requester_only], [mutated], diagonal=True) == []
    assert len(plan([requester_only], [PeerSpec("a")], diagonal=True)) == 1
    assert [c.id for c in plan([pair], [mutated, PeerSpec("b")])] == [
        f"rr-pair-round-trip[requester=a+{responder_mutant},responder=a+{responder_mutant}]",
        f"rr-pair-round-trip[requester=b,responder=a+{responder_mutant}]",
        "rr-pair-round-trip[requester=b,responder=b]",
    ]
    # A gatherer mutant acts on gathers: a round trip of requests leaves it nothing to run.
    gatherer_mutant = next(m for m in spec.mutants().values() if m.side == "gatherer").name
    assert plan([pair], [PeerSpec("a", "current", gatherer_mutant)], diagonal=True) == []
    gathering = scenarios["sg-pair-multi-full-count"]
    assert "gatherer" in gathering.opens["requester"]
    assert len(plan([gathering], [PeerSpec("a", "current", gatherer_mutant)], diagonal=True)) == 1


def test_known_failure_patterns_match_cell_ids_literally_but_for_stars() -> None:
    known = KnownFailure("rr-x[requester=*@0.3.0]", "why", "", "f")
    assert known.matches("rr-x[requester=go@0.3.0]")
    assert not known.matches("rr-x[requester=go]")
    assert not known.matches("rr-y[requester=go@0.3.0]")


# A clause scenarios assert that no mutant proves yet, with why. Exact: a mutant added for
# one of these must take it off, and a clause losing its mutant must be added with a reason.
WITHOUT_MUTANT = {
    "RR-4.1": "a reply sent anywhere but the default exchange with the reply address as routing key is lost in every "
              "scenario with a reply, so a mutant of it FAILs them all under RR-8.1; rr-responder-header-only reads the "
              "exchange and routing key of the reply itself",
    "RR-6.1": "a reply address naming a queue the requester never declared loses every reply (RR-8.1 everywhere); "
              "queue-per-request breaks the one-queue half of RR-6 as RR-6.2",
}


def test_every_clause_a_scenario_asserts_has_a_mutant_to_prove_it() -> None:
    asserted = {clause for s in load_all() for clause in s.clauses}
    proven = {m.clause for m in spec.mutants().values()}
    assert asserted - proven == set(WITHOUT_MUTANT)
