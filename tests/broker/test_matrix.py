"""The main job, asserted: the full matrix of every peer, and the history the profiles replay."""
from __future__ import annotations

from collections import Counter

import pytest

from acemq_interop.run.cells import FAIL, PASS, XFAIL
from acemq_interop.peers.manifests import PeerSpec, discover
from support import describe, run

pytestmark = pytest.mark.broker

ALL_PEERS = sorted(discover())


@pytest.fixture(scope="module")
def full_matrix(broker):
    return run(broker, ALL_PEERS)


def test_every_peer_started(full_matrix) -> None:
    broken = {name: s.unavailable for name, s in full_matrix.peers.items() if s.unavailable}
    assert not broken, broken


def test_every_cell_of_the_full_matrix_passes(full_matrix) -> None:
    statuses = Counter(r.status for r in full_matrix.results)
    bad = [r for r in full_matrix.results if r.status != PASS]
    assert not bad, f"{dict(statuses)}\n{describe(bad)}"


def test_the_pairs_matrix_is_complete(full_matrix) -> None:
    pairs = {(PeerSpec.parse(r.roles["requester"]).name, PeerSpec.parse(r.roles["responder"]).name)
             for r in full_matrix.results if r.matrix == "pairs"}
    assert pairs == {(a, b) for a in ALL_PEERS for b in ALL_PEERS}
