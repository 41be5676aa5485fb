"""Running the harness from tests, exactly as the CLI does, on the session's broker."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acemq_interop.spec import known_failures
from acemq_interop.spec import scenarios
from acemq_interop.spec.scenarios import Scenario
from acemq_interop.broker.endpoint import BrokerEndpoint
from acemq_interop.results.model import CellResult, RunResult
from acemq_interop.peers.manifests import Manifest, PeerSpec, discover, load_manifest
from acemq_interop.broker.lifecycle import BrokerSource
from acemq_interop.run.request import DEFAULT_CONCURRENCY, RunRequest
from acemq_interop.run.session import run_session

FIXTURE_PEERS = Path(__file__).parent / "fixtures" / "peers"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# The session broker's queue holder (broker/control.py), by endpoint: set by conftest's
# `broker` fixture for the private node it starts; none for $ACEMQ_TEST_BROKER.
BROKER_CONTROL: dict[int, object] = {}


def run_request(broker: BrokerEndpoint, peers: list[str], chosen: list[Scenario], manifests: dict[str, Manifest],
                control: bool = False, **fields: Any) -> RunRequest:
    """The one way a test makes a run's request: `peers` (specs as --peers gives them) on
    `chosen` scenarios, on `broker`; with `control`, the session broker's queue holder (the
    scenarios that hold a queue run instead of SKIP). `fields` are RunRequest's own (the log
    is the test's unless given)."""
    fields.setdefault("log", log)
    return RunRequest(manifests=manifests, specs=tuple(PeerSpec.parse(p) for p in peers), scenarios=tuple(chosen),
                      brokers=(BrokerSource.given(broker, BROKER_CONTROL.get(id(broker)) if control else None),),
                      **fields)


def run(
    broker: BrokerEndpoint,
    peers: list[str],
    scenario_globs: list[str] | None = None,
    diagonal: bool = False,
    with_known_failures: bool = True,
    manifests: dict[str, Manifest] | None = None,
    op_bound_s: float = 20.0,
    concurrency: int = DEFAULT_CONCURRENCY,
    only_cells: frozenset[str] | None = None,
) -> RunResult:
    """A run through the one session the `run` command uses, on the test session's broker."""
    chosen = scenarios.select(scenarios.load_all(), scenario_globs)
    if scenario_globs is None:  # what the CLI runs when it names none (on one node: no cluster scenario)
        chosen = scenarios.by_default(chosen)
    known = tuple(known_failures.load([known_failures.DEFAULT_DIR])) if with_known_failures else ()
    request = run_request(broker, peers, chosen, manifests or discover(), control=True, known=known,
                          concurrency=concurrency, build=True, diagonal=diagonal, op_bound_s=op_bound_s,
                          only_cells=only_cells)
    outcome = run_session(request)
    if outcome.failure is not None:
        raise outcome.failure
    return outcome.report


def fixture_manifest(name: str) -> dict[str, Manifest]:
    """A deliberately broken peer from tests/fixtures/peers, as the only manifest."""
    manifest = load_manifest(FIXTURE_PEERS / name / "peer.yaml")
    return {manifest.name: manifest}


def describe(results: list[CellResult]) -> str:
    return "\n".join(f"{r.status} {r.id} {r.rule or ''} {r.message[:300]}" for r in results)
