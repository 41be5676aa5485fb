"""Verdicts a maintainer can trust: a deliberately slowed peer gets the same verdicts as
itself unslowed, at the harness's default concurrency.

The slowed peer is tests/fixtures/peers/slow-python: the real Python binding behind its own
adapter, run by a wrapper that makes each of the binding's delivery callbacks (a reply
reaching a requester, a request reaching a responder) sleep first (ACEMQ_SLOW_CALLBACK_MS in
its manifest). Nothing about it lives in the binding.

One diagonal run holds both: the clean binding and a selection of its mutants, as `python`
and as `slow-python`, over the scenarios that claim those mutants and a few clean ones.
Every (scenario, mutant) cell must end the same in both: the same status, the same broken
clauses, each charged to the same side; only a scenario that may catch the mutant by chance
(`may_catch:`) may catch it on one side alone, and then only under the mutant's clause.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from acemq_interop.spec import catalogue as spec
from acemq_interop.peers.manifests import PeerSpec, discover
from acemq_interop.run.request import DEFAULT_CONCURRENCY
from acemq_interop.spec.scenarios import load_all
from support import fixture_manifest, log, run

pytestmark = pytest.mark.broker

FAST, SLOW = "python", "slow-python"

# Mutants of every side, chosen where timing matters: late and duplicate replies, timeouts
# and their counters, Answered read right after a reply, a redeploy, the return of a reply
# to a closed requester, gathers that wait out a budget or resolve early.
MUTANTS = [
    # requester
    "late-reply-to-next", "timeouts-not-counted", "unmatched-not-counted", "close-abandons-pending",
    # responder
    "answered-after-publish", "counters-after-subscribe", "no-rollback", "counts-failures",
    # gatherer
    "shortfall-resolves", "no-early-resolve", "gather-timeouts-counted", "stray-reply-to-oldest-gather",
]
# Scenarios that claim none of them: they must PASS for every mutant, slowed or not.
CLEAN = ["rr-pair-round-trip", "rr-requester-error-header", "rr-responder-header-wins"]
SCENARIOS = sorted({s.id for s in load_all() if set(s.catches) & set(MUTANTS)} | set(CLEAN))


def _unnamed(label: str | None) -> str | None:
    return None if label is None else "+".join(["PEER", *PeerSpec.parse(label).mutants])


def verdict(result) -> tuple:
    """What a maintainer reads off a cell, the peer's name taken out of its labels: its status,
    the clauses it saw broken, and whom each is charged to. Not how many checks saw a clause
    broken: a mutant's wrong answers may land on other calls when the timing differs (a reply
    handed to the oldest waiter is some caller's own by chance), under the same clause."""
    charged = sorted({(f.clause, f.side, f.role, _unnamed(f.peer)) for f in result.failures})
    return str(result.status), tuple(result.broken_clauses), tuple(charged)


def evidence(result) -> tuple:
    """Which checks saw each clause broken, and which could not be made: shown, not judged."""
    return (tuple(sorted((f.clause, f.check) for f in result.failures)),
            tuple(sorted((n.clause, n.check) for n in result.not_evaluated)))


def key(result) -> tuple[str, str, str]:
    """(peer name, scenario, mutants) of a diagonal cell."""
    spec = PeerSpec.parse(result.peers[0])
    return spec.name, result.scenario, "+".join(spec.mutants) or "(clean)"


def describe_cell(result) -> str:
    lines = [f"    {result.status} {result.id} ({result.duration_s:.2f}s) broken={result.broken_clauses}"]
    lines += [f"      failure {f.clause} [{f.side}/{f.role}] charged to {f.peer}: {f.check}: {str(f.message)[:300]}"
              for f in result.failures]
    lines += [f"      not evaluated {n.clause}: {n.check} ({n.needs})" for n in result.not_evaluated]
    if result.status not in ("PASS", "FAIL") and result.message:
        lines.append(f"      message: {result.message[:400]}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def manifests():
    return {**discover(), **fixture_manifest(SLOW)}


@pytest.fixture(scope="module")
def both(broker, manifests) -> dict:
    peers = [name + "".join(f"+{m}" for m in mutant) for name in (FAST, SLOW) for mutant in ([], *([m] for m in MUTANTS))]
    started = time.monotonic()
    report = run(broker, peers, SCENARIOS, diagonal=True, with_known_failures=False, manifests=manifests,
                 concurrency=DEFAULT_CONCURRENCY)
    elapsed = time.monotonic() - started
    cells: dict[str, dict] = {FAST: {}, SLOW: {}}
    for result in report.results:
        name, scenario, mutant = key(result)
        cells[name][(scenario, mutant)] = result
    for name in (FAST, SLOW):
        total = sum(r.duration_s for r in cells[name].values())
        log(f"{name}: {len(cells[name])} cells, {total:.1f} s of cell time")
    log(f"run of {len(report.results)} cells at concurrency {DEFAULT_CONCURRENCY}: {elapsed:.1f} s")
    return {"report": report, "cells": cells}


def test_the_slowed_peer_is_the_python_adapter_offering_every_selected_mutant(both) -> None:
    statuses = both["report"].peers
    for name in (FAST, SLOW):
        status = statuses[name]
        assert not status.unavailable, f"{name}: {status.unavailable}"
        offered = set(status.hello.get("mutants") or [])
        assert set(MUTANTS) <= offered, f"{name} does not offer {sorted(set(MUTANTS) - offered)}"
    assert statuses[SLOW].hello.get("binding") == statuses[FAST].hello.get("binding")
    assert statuses[SLOW].hello.get("profiles") == ["current"]


MAY_CATCH = {(s.id, m) for s in load_all() for m in s.may_catch}


def by_chance_alike(scenario: str, mutant: str, fast, slow) -> bool:
    """A scenario that may catch a mutant only by chance (`may_catch:`, a timing window of the
    mutant's) is allowed to catch it on one side and not the other: a PASS there is no miss.
    What stays judged: each side PASSes, or FAILs naming only the mutant's clause, charged to
    the mutant's peer."""
    if (scenario, mutant) not in MAY_CATCH:
        return False
    clause = spec.mutants()[mutant].clause
    return all(str(r.status) == "PASS" or (str(r.status) == "FAIL" and r.broken_clauses == [clause]
                                           and all(_unnamed(f.peer) == f"PEER+{mutant}" for f in r.failures))
               for r in (fast, slow))


def test_a_slowed_peer_gets_the_same_verdicts_as_itself_unslowed(both) -> None:
    fast, slow = both["cells"][FAST], both["cells"][SLOW]
    assert set(fast) == set(slow), f"planned differently: only fast {sorted(set(fast) - set(slow))}, only slow {sorted(set(slow) - set(fast))}"
    assert len(fast) > 100, f"only {len(fast)} cells a peer: the selection is too narrow"
    chance = [k for k in sorted(fast) if verdict(fast[k]) != verdict(slow[k]) and by_chance_alike(*k, fast[k], slow[k])]
    for scenario, mutant in chance:
        log(f"caught by chance on one side only (may_catch): {scenario} / {mutant}:\n    fast:\n{describe_cell(fast[(scenario, mutant)])}\n"
            f"    slow:\n{describe_cell(slow[(scenario, mutant)])}")
    differences = [k for k in sorted(fast) if verdict(fast[k]) != verdict(slow[k]) and k not in chance]
    bad = [k for k in sorted(fast) if str(fast[k].status) not in ("PASS", "FAIL")]
    table = []
    for scenario, mutant in differences:
        table.append(f"  {scenario} / {mutant}:\n    fast:\n{describe_cell(fast[(scenario, mutant)])}\n"
                     f"    slow:\n{describe_cell(slow[(scenario, mutant)])}")
    if table:
        log("verdicts that differ, slowed against unslowed:\n" + "\n".join(table))
    noted = [k for k in sorted(fast) if k not in differences and evidence(fast[k]) != evidence(slow[k])]
    for scenario, mutant in noted:
        log(f"same verdict, other evidence: {scenario} / {mutant}:\n    fast:\n{describe_cell(fast[(scenario, mutant)])}\n"
            f"    slow:\n{describe_cell(slow[(scenario, mutant)])}")
    assert not differences, f"{len(differences)} cell(s) differ slowed:\n" + "\n".join(table)
    assert not bad, "cells neither PASS nor FAIL:\n" + "\n".join(describe_cell(fast[k]) for k in bad)


def test_the_wrapper_really_slows_each_delivery_callback(broker, manifests) -> None:
    """One round trip through the slowed peer alone: its request delivery and its reply
    delivery each sleep, so the call takes at least twice the delay."""
    manifest = manifests[SLOW]
    delay_ms = float(manifest.env["ACEMQ_SLOW_CALLBACK_MS"])
    process = subprocess.Popen(manifest.argv(manifest.run), cwd=manifest.cwd, env=manifest.environment(),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    queue = f"slowed-peer-check-{os.getpid()}"

    def call(command_id: int, op: str, **fields) -> dict:
        process.stdin.write(json.dumps({"id": command_id, "op": op, **fields}) + "\n")
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            assert line, f"the slowed peer ended during {op}"
            message = json.loads(line)
            if message.get("id") == command_id:
                assert message.get("ok"), f"{op}: {message}"
                return message

    try:
        call(1, "hello", protocol=3, protocols=[3], amqp_url=broker.amqp_url("/"))
        call(2, "responder.start", name="r", queue=queue)
        call(3, "requester.open", name="q")
        answer = call(4, "request", requester="q", routing_key=queue, body={"n": 1}, timeout_ms=10000)
        assert answer["outcome"] == "reply", answer
        log(f"{SLOW}: one round trip took {answer['elapsed_ms']} ms with {delay_ms:g} ms a callback")
        assert answer["elapsed_ms"] >= 2 * delay_ms, answer
    finally:
        try:
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(broker.amqp_url("/")))
        try:
            channel = connection.channel()
            for name in (queue, f"{queue}.dlq"):
                channel.queue_delete(name)
        finally:
            connection.close()
