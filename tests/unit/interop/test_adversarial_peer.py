"""Every scenario against peers whose answers are valid by the protocol's schema, and odd.

A peer may leave out what the schema lets it leave out (`reply_queue`, `counters`,
`request_id`...), send nulls, empty and long strings, huge numbers, deep values, empty
lists and events with fields no one expects. Whatever it sends within the schema, the
harness must judge it (PASS, FAIL, or an ERROR naming a cause), never crash on it: a
"harness error" is a bug of this suite. The probe and the management API are in memory
too, and as strict about argument types as pika and urllib (adversarial_peer.py).

Seeded: ACEMQ_ADVERSARIAL_SEED replays a run (the seed is printed, and named in every
failure with the round and cell), ACEMQ_ADVERSARIAL_ROUNDS sets how many times every cell
runs, each round with other answers.
"""
from __future__ import annotations

import os
import time
import traceback
from typing import Any

import pytest

from acemq_interop.spec import catalogue
from acemq_interop.run import cells
from acemq_interop.run import engine
from acemq_interop.amqp import raw_client as raw_amqp
from acemq_interop.run import steps
from acemq_interop.amqp import transcript
from acemq_interop.run.engine import RunContext, run_cell
from acemq_interop.core.errors import BrokerError, CheckFailed, PeerError, TemplateError
from acemq_interop.peers.manifests import PeerSpec
from acemq_interop.results.model import PROBE, Status
from acemq_interop.spec.scenarios import load_all
from adversarial_peer import Clock, World

SEED = os.environ.get("ACEMQ_ADVERSARIAL_SEED", "20250611")
ROUNDS = int(os.environ.get("ACEMQ_ADVERSARIAL_ROUNDS", "4"))


def every_cell() -> list[cells.Cell]:
    scenarios = load_all()
    # One peer playing every role, then two peers in every combination (all-peers roles
    # get both): every cell `plan` makes for one or two peers.
    return cells.plan(scenarios, [PeerSpec("a")]) + cells.plan(scenarios, [PeerSpec("a"), PeerSpec("b")])


def run_every_cell(monkeypatch: pytest.MonkeyPatch, rounds: int, label: str, **world: Any) -> None:
    """Run every cell `rounds` times, each with other answers; assert no harness error, no
    exception out of run_cell, and only catalogue clauses charged to peers (never the probe)."""
    clock = Clock()
    monkeypatch.setattr(steps, "time", clock)  # the engine's bounded waits pass at once
    monkeypatch.setattr(transcript, "SETTLE_S", 0.0)
    world_of: dict[str, World] = {}
    monkeypatch.setattr(raw_amqp, "RawConnection", lambda *a, **k: world_of["now"].raw_connection(*a, **k))
    crashes: list[str] = []
    real_run_step = engine._run_step

    def run_step(state: Any, index: int, kind: str, args: Any) -> None:
        # Where a harness error comes from: the engine keeps only its text.
        try:
            real_run_step(state, index, kind, args)
        except (PeerError, BrokerError, CheckFailed, TemplateError):
            raise
        except Exception:
            crashes.append(f"step {index + 1} {kind}:\n{traceback.format_exc()}")
            raise

    monkeypatch.setattr(engine, "_run_step", run_step)
    planned = every_cell()
    clauses = catalogue.catalogue().clauses
    print(f"\n{label}: seed {SEED}, {rounds} round(s) of {len(planned)} cells "
          f"(ACEMQ_ADVERSARIAL_SEED / ACEMQ_ADVERSARIAL_ROUNDS)")
    problems: list[str] = []
    statuses: dict[str, int] = {}
    lines = 0
    started = time.monotonic()
    for round_ in range(rounds):
        for number, cell in enumerate(planned):
            where = f"{label}: seed {SEED} round {round_} cell {cell.id}"
            now = world_of["now"] = World(f"{SEED}:{label}:{round_}:{cell.id}", clock, **world)
            peers = {spec.name: now.peer(spec.name) for spec in cell.specs()}
            ctx = RunContext(amqp_url="amqp://in-memory/", vhost="v", management=now.management(),  # type: ignore[arg-type]
                             peers=peers, op_bound_s=1.0, broker="memory", probe_factory=now.probe,  # type: ignore[arg-type]
                             tracer=now.tracer(), keep_transcript=lambda result: now.odd.chance(0.7))
            crashes.clear()
            try:
                result = run_cell(cell, f"c{number:04d}", ctx)
            except Exception:
                problems.append(f"{where}: an exception escaped run_cell:\n{traceback.format_exc()}")
                continue
            finally:
                lines += now.lines
            statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
            if result.status == Status.ERROR and (result.message or "").startswith("harness error"):
                problems.append(f"{where}: {result.message}\n" + "\n".join(crashes))
            if result.status == Status.FAIL:
                assert result.failures, f"{where}: a FAIL without its failures"
                for failure in result.failures:
                    if failure.peer == PROBE or failure.clause not in clauses:
                        problems.append(f"{where}: failure {failure.clause} charged to {failure.peer!r}: {failure.check}")
    elapsed = time.monotonic() - started
    print(f"{label}: {rounds * len(planned)} cells, {lines} schema-checked peer lines in {elapsed:.1f}s: {statuses}")
    sites = sorted({site_of(p) for p in problems})
    assert not problems, (f"{len(problems)} problem(s) at {len(sites)} site(s):\n" + "\n".join(sites)
                          + "\n\nthe first ones:\n\n" + "\n\n".join(problems[:5]))


def test_no_schema_valid_answer_makes_a_harness_error(monkeypatch: pytest.MonkeyPatch) -> None:
    run_every_cell(monkeypatch, ROUNDS, "adversarial peers")


def test_a_requester_that_never_names_its_reply_queue_makes_no_harness_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # The user's report: `requester.open` without `reply_queue` (the schema allows it) gave a
    # TypeError in queue_facts and a pika AssertionError on a publish with no routing key.
    # The probe and management fakes raise exactly those on a None name.
    run_every_cell(monkeypatch, 1, "no reply_queue", reply_queue_p=0.0)


def test_a_peer_answering_only_what_the_schema_requires_makes_no_harness_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # {"id": N, "ok": true} to every command, `request` and `gather` included, and no events.
    run_every_cell(monkeypatch, 1, "minimal peers", minimal=True)


def site_of(problem: str) -> str:
    """Where a problem comes from: the innermost frame in the harness, and the exception."""
    frames = [line.strip() for line in problem.splitlines() if line.strip().startswith('File "') and "acemq_interop" in line]
    last = problem.strip().splitlines()[-1] if "Traceback" in problem else problem.splitlines()[0].partition(": ")[2]
    return f"{frames[-1] if frames else '(no harness frame)'} -> {last[:160]}"
