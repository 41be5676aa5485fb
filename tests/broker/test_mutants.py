"""The suite proves its power, and names exactly what broke: every mutant of every peer is
caught by every scenario that claims it (`catches:`), each of those FAILs names exactly the
mutant's clause (the catalogue's `clause:`) and no other (a cell runs to its end and lists
every clause it saw broken), each failure charged to the mutant's peer, and no other
scenario FAILs at all.

One diagonal run for every selected peer's mutants together: each mutant plays every role
against itself and the probe (the harness gives a mutant only to the side it acts on, so the
other side is the clean binding, and leaves out the cells where the mutant has no code to
run). Most mutant cells wait out a bound, so they run at the harness's own concurrency,
spread over all six peer processes, in two shards side by side (the `sweep` fixture says
why); each peer is then judged on its own cells (`-k python` runs only that peer's mutants).
"""
from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

import pytest

from acemq_interop.spec import catalogue as spec
from acemq_interop.run.cells import FAIL, PASS
from acemq_interop.peers.manifests import PeerSpec, discover
from acemq_interop.results.merge import merge_files
from acemq_interop.spec.scenarios import load_all
from support import describe, log

SWEEP_SHARDS = 2  # side by side, each on its own private node
SWEEP_BOUND_S = 1800  # the whole sweep (about 10 minutes here)

pytestmark = pytest.mark.broker

CAUGHT_BY: dict[str, set[str]] = defaultdict(set)
MAY_CATCH: dict[str, set[str]] = defaultdict(set)  # by chance only: a FAIL must name the clause, a PASS is no miss
for _scenario in load_all():
    for _mutant in _scenario.catches:
        CAUGHT_BY[_mutant].add(_scenario.id)
    for _mutant in _scenario.may_catch:
        MAY_CATCH[_mutant].add(_scenario.id)


def attribution_problems(mutant: str, results: list) -> list[str]:
    """What is wrong with one mutant's cells: a claimed catch that did not FAIL, a FAIL that
    names another clause than the mutant's, a FAIL where nothing claims the mutant, an ERROR."""
    clause = spec.mutants()[mutant].clause
    failed = {r.scenario: r for r in results if r.status == FAIL}
    problems = []
    missed = sorted(CAUGHT_BY[mutant] - set(failed))
    if missed:
        problems.append(f"not caught by {missed}")
    claimed = CAUGHT_BY[mutant] | MAY_CATCH[mutant]
    wrong = [f"{r.scenario} named {', '.join(r.broken_clauses)}" + (f" (seen as {r.seen_as})" if r.seen_as else "")
             for r in failed.values() if r.scenario in claimed and r.broken_clauses != [clause]]
    if wrong:
        problems.append(f"caught under another clause than {clause} alone: {wrong}")
    label = next((p for r in results for p in r.peers if p.endswith(f"+{mutant}")), None)
    misplaced = [f"{r.scenario}: {f.clause} charged to {f.peer or 'no one'}" for r in failed.values()
                 for f in r.failures if label is not None and f.peer != label]
    if misplaced:
        problems.append(f"charged to another peer than {label}: {misplaced}")
    # A scenario that does not claim the mutant may still FAIL where it presumes the mutant's
    # clause (`assumes:`) and names it, seen through its own check: the same defect, charged right.
    # The same holds where the broker's transcript shows a message of the mutant's peer
    # breaking the mutant's clause (a reply without its content type, in any scenario).
    presumed = {s for s, r in failed.items() if s not in claimed and r.failures
                and all(f.clause == clause and (f.seen_as or f.wire) for f in r.failures)}
    stray = sorted(set(failed) - claimed - presumed)
    if stray:
        problems.append(f"FAILed scenarios that do not claim it: {[f'{s} ({failed[s].broken_clauses})' for s in stray]}")
    others = [r for r in results if r.status not in (PASS, FAIL)]
    if others:
        problems.append(f"{len(others)} cell(s) neither PASS nor FAIL")
    return problems


PEERS = sorted(discover())


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, request) -> dict[str, Any]:
    """Every mutant of each peer whose test was selected: one run, cut in SWEEP_SHARDS shards
    run side by side, each its own `acemq-interop run --shard K/N` with its own private node,
    joined as `merge` joins them. The cells and what is judged of them are the unsplit run's
    (test_binding_ci.py shows shards merge into the same cells and statuses); two brokers
    share the load a single node's queue declarations and connection opens cap (a sweep on
    one node ran at about 24 cells a second whatever its concurrency, and past 64 cells its
    connections timed out)."""
    selected = sorted({item.callspec.params["peer"] for item in request.session.items
                       if item.module is request.module and hasattr(item, "callspec")})
    specs = ",".join(f"{peer}+{m}" for peer in selected for m in sorted(spec.mutants()))
    out = tmp_path_factory.mktemp("sweep")
    shards = []
    for k in range(1, SWEEP_SHARDS + 1):
        argv = [sys.executable, "-m", "acemq_interop", "run", "--peers", specs, "--diagonal", "--no-known-failures",
                "--shard", f"{k}/{SWEEP_SHARDS}", "--out", str(out / f"shard-{k}"), "-q"]
        log_file = (out / f"shard-{k}.log").open("w")
        shards.append((subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT), log_file))
    started = time.monotonic()
    try:
        for process, log_file in shards:
            process.wait(timeout=SWEEP_BOUND_S - (time.monotonic() - started))
            log_file.close()
    finally:
        for process, _ in shards:
            if process.poll() is None:
                process.terminate()  # the harness stops its cells, peers and node on SIGTERM
                process.wait(timeout=120)
    for k, (process, _) in enumerate(shards, start=1):
        # 0: every cell passed, 1: some failed (a mutant run fails by design); else no verdict.
        assert process.returncode in (0, 1), f"shard {k}/{SWEEP_SHARDS} exited {process.returncode}:\n" \
            + "\n".join((out / f"shard-{k}.log").read_text(errors="replace").splitlines()[-40:])
    report = merge_files([out / f"shard-{k}" / "results.json" for k in range(1, SWEEP_SHARDS + 1)])
    log(f"mutant sweep: {len(report.results)} cells in {SWEEP_SHARDS} shards, {time.monotonic() - started:.0f}s")
    cells: dict[str, list] = defaultdict(list)
    for result in report.results:
        cells[PeerSpec.parse(result.peers[0]).label].append(result)
    # What each peer offered, as results.json keeps it: the catalogue mutants it is not missing.
    offered = {name: set(spec.mutants()) - set((status.hello.get("mutants_offered") or {}).get("missing") or spec.mutants())
               for name, status in report.peers.items()}
    return {"offered": offered, "cells": cells}


@pytest.mark.parametrize("peer", PEERS)
def test_every_mutant_fails_exactly_its_scenarios_naming_exactly_its_clause(sweep, peer: str) -> None:
    offered = sweep["offered"].get(peer, set())
    required = {name for name, m in spec.mutants().items() if not m.only_where}
    assert required <= offered, f"{peer} must offer every catalogue mutant its client can have; missing {sorted(required - offered)}"
    mutants = sorted(offered)
    problems = []
    for mutant in mutants:
        results = sweep["cells"][f"{peer}+{mutant}"]
        found = attribution_problems(mutant, results)
        caught = sorted(r.scenario + ("" if r.scenario not in MAY_CATCH[mutant] else " (by chance)")
                        for r in results if r.status == FAIL)
        log(f"{peer}+{mutant} ({spec.mutants()[mutant].clause}): FAILs {caught}" + ("" if not found else "; " + "; ".join(found)))
        if found:
            problems.append(f"{peer}+{mutant} (breaks {spec.mutants()[mutant].clause}): " + "; ".join(found) + "\n"
                            + describe([r for r in results if r.status != PASS]))
    assert not problems, "\n\n".join(problems)


def test_a_mutant_only_some_clients_can_have_is_offered_by_one_of_them(sweep) -> None:
    """A clause whose defect only some clients can commit is still proven: by those peers."""
    offered = sweep["offered"]
    if set(offered) != set(PEERS):
        pytest.skip("judged on a sweep of every peer (this one ran " + ", ".join(sorted(offered)) + ")")
    offered_anywhere = set().union(*offered.values())
    partial = {name: m.only_where for name, m in spec.mutants().items() if m.only_where}
    assert not set(partial) - offered_anywhere, f"no peer offers {sorted(set(partial) - offered_anywhere)}"
