"""Zero flaky cells where timing is the premise: a short repeat under stress, every verdict the
same in every run (issue 23).

The scenarios are those whose verdict leans on time or order (budgets and their upper bounds,
timeouts, a held queue, a redeploy, a close with calls in flight, replies out of order) and
those a repeat or stress run has seen vary. Each of the three runs is a whole run of its own
(`run --repeat`), at a concurrency above the default with a busy process beside it
(`--cpu-hog 1`), so a load-dependent verdict shows here before it shows in a user's CI.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acemq_interop.run.request import DEFAULT_CONCURRENCY

pytestmark = pytest.mark.broker

TIMING_SENSITIVE = [
    "rr-pair-one-reply-queue",            # replies out of order (varied at 200 ms a callback, before it was held by order)
    "rr-pair-responder-redeploy",         # varied on 4.0.5 (a Node ack overtaken by its connection's close)
    "rr-pair-reply-to-closed-requester",  # varied under load (RR-14.1: three 800 ms handlings past a 10 s wait)
    "rr-pair-timeout-late-reply",         # varied under --cpu-hog 1 (a Java timer ended a 300 ms call at 1812 ms)
    "rr-requester-close-ends-pending",    # varied on 4.0.5 (a Java send ended by the close)
    "rr-requester-timeout-bound",
    "rr-responder-answered-before-confirm",  # varied in CI (a hold released through a slow CLI)
    "sg-gatherer-budget-bound",
    "sg-gatherer-failure-reply",          # varied under --cpu-hog 2 (1.8 s of probe work in a 1.5 s budget)
    "sg-pair-publish-no-count",
    "sg-pair-publish-shortfall",
]
RUNS = 3
# One busy process on a 2-core machine: two made a correct JVM wake a thread ~1 s after its
# future completed while it answered a round trip in 185 ms, which no grace measured from
# round trips can tell from a late timer (left open on the issue with its figures).
HOGS = 1
BOUND_S = 900


def test_timing_sensitive_cells_keep_their_verdict_over_a_stressed_repeat(tmp_path) -> None:
    command = [sys.executable, "-m", "acemq_interop", "run", "--scenarios", ",".join(TIMING_SENSITIVE),
               "--repeat", str(RUNS), "--cpu-hog", str(HOGS), "--concurrency", str(DEFAULT_CONCURRENCY + 12),
               "-q", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BOUND_S)
    summary = next((line for line in done.stdout.splitlines() if " runs of " in line), "")
    print(summary)
    report = json.loads((tmp_path / "repeat.json").read_text())
    assert report["varying"] == [], (summary + "\n" + done.stdout[-4000:])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert [r["counts"].get("FAIL", 0) + r["counts"].get("ERROR", 0) for r in report["runs"]] == [0] * RUNS
    assert report["cells"] > 100 and summary.startswith(f"{RUNS} runs of ")
