"""The history the version profiles replay (seed 003), asserted cell by cell.

Up to 0.3.0 .NET and Java wrote and read only the native reply_to while Go, Python and Ruby
used only the header: those pairs cannot talk, in either direction, and no others fail.
Up to 0.7.12 a .NET responder whose handler throws sends nothing (the caller times out) and
a .NET requester decodes a failure reply's empty body (a decode error at once).
Every such cell is a listed known failure (known-failures/history.yaml): the run must show
exactly those, as XFAIL, and nothing else failing.
"""
from __future__ import annotations

import itertools

import pytest

from acemq_interop.run.cells import PASS, XFAIL
from support import describe, run

pytestmark = pytest.mark.broker

NATIVE_ONLY = ["dotnet@0.3.0", "java@0.3.0"]
HEADER_ONLY = ["go@0.3.0", "python@0.3.0", "ruby@0.3.0"]
OLD_DOTNET = ["dotnet@0.3.0", "dotnet@0.7.12"]
PEERS = NATIVE_ONLY + HEADER_ONLY + ["dotnet@0.7.12", "dotnet", "go", "java", "node", "python", "ruby"]

SPLIT = {(a, b) for a, b in itertools.product(NATIVE_ONLY, HEADER_ONLY)} | {(b, a) for a, b in itertools.product(NATIVE_ONLY, HEADER_ONLY)}


@pytest.fixture(scope="module")
def history(broker):
    # At the CLI's default concurrency, as a user runs it (the verdicts do not depend on the
    # load: test_flakes.py); at 6 this run took 450 s of the CI, waiting out timeouts.
    return run(broker, PEERS, ["rr-pair-*"])


def pair(result) -> tuple[str, str]:
    return result.roles["requester"], result.roles["responder"]


def answer(result, name: str) -> dict:
    """The peer's answer to the scenario's call `name`, from the cell's evidence."""
    return next(step["answer"] for step in result.trace if step.get("step") == "answer" and step.get("of") == name)


def cells(history, scenario: str) -> dict[tuple[str, str], object]:
    return {pair(r): r for r in history.results if r.scenario == scenario}


def test_only_the_histories_incompatibilities_fail(history) -> None:
    unexpected = [r for r in history.results if r.status not in (PASS, XFAIL)]
    assert not unexpected, describe(unexpected)


def test_native_only_and_header_only_bindings_cannot_talk_and_all_others_can(history) -> None:
    round_trip = cells(history, "rr-pair-round-trip")
    failing = {p for p, r in round_trip.items() if r.status == XFAIL}
    assert failing == SPLIT
    assert answer(round_trip[("dotnet@0.3.0", "go@0.3.0")], "call")["outcome"] == "timeout"
    assert answer(round_trip[("go@0.3.0", "dotnet@0.3.0")], "call")["outcome"] == "timeout"
    for both_ways in [("dotnet@0.7.12", "go@0.3.0"), ("go@0.3.0", "dotnet@0.7.12"), ("dotnet", "go@0.3.0"), ("go@0.3.0", "dotnet")]:
        assert round_trip[both_ways].status == PASS, both_ways
    # The header-only 0.3.0 bindings talk to each other and to every current peer.
    current = ["dotnet", "go", "java", "node", "python", "ruby"]
    for old in HEADER_ONLY:
        for other in HEADER_ONLY + current:
            assert round_trip[(old, other)].status == PASS, (old, other)
            assert round_trip[(other, old)].status == PASS, (other, old)


def test_old_dotnet_failures_time_out_or_fail_to_decode(history) -> None:
    crosses = cells(history, "rr-pair-failure-crosses")
    failing = {p for p, r in crosses.items() if r.status == XFAIL}
    old_dotnet = {p for p in crosses if p[0] in OLD_DOTNET or p[1] in OLD_DOTNET}
    assert failing == old_dotnet | SPLIT
    # A 0.7.12 responder's failure sends nothing: a current requester waits out its timeout.
    assert answer(crosses[("go", "dotnet@0.7.12")], "call")["outcome"] == "timeout"
    # A 0.7.12 requester decodes the empty failure reply: a decode error at once.
    decoded = answer(crosses[("dotnet@0.7.12", "go")], "call")
    assert decoded["outcome"] == "decode_error"
    assert decoded["elapsed_ms"] < 4000
