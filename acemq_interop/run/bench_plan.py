"""The order of a bench's measurements, pure: interleaved so that a ratio's two figures are
always taken side by side, and a peer's repetitions spread over the whole bench.

A round is one peer's measurements of one repetition. The raw client's measurement sits in
the middle, so both binding figures (requester, responder) are next to it, and the
per-request figure next to the binding requester it is divided by:

    even repetitions:  per_request_queue, binding, raw, binding_responder
    odd repetitions:   binding_responder, raw, binding, per_request_queue

The order turns every repetition because a measurement right after another in the same
process inherits its state (warm caches, a garbage collector's debt, a JIT that just
compiled): reversed every other time, that falls on each figure of a pair as often.

Rounds go peer by peer within a repetition, repetition after repetition (dotnet #1, go #1,
..., dotnet #2, ...), not a peer's repetitions one after another: a minute of someone
else's load on a shared machine then costs each peer one repetition, which its median
drops, instead of every repetition of one peer. The pairs (requester peer x responder peer)
follow, in the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

ROUND = ("per_request_queue", "binding", "raw", "binding_responder")
PAIR = "pair"


@dataclass(frozen=True)
class Measure:
    """One `load`: what (a kind of results/bench.py's KINDS, or `pair`), which repetition,
    whose requester, whose responder."""

    kind: str
    repetition: int
    requester: str
    responder: str


def peer_rounds(peers: list[str], repetitions: int, seeded: set[str]) -> list[Measure]:
    """Every per-peer measurement in order; `seeded` are the peers offering the
    queue-per-request mutant (the others have no per-request figure)."""
    order = []
    for rep in range(repetitions):
        kinds = ROUND if rep % 2 == 0 else tuple(reversed(ROUND))
        for peer in peers:
            order += [Measure(kind, rep, peer, peer) for kind in kinds if kind != "per_request_queue" or peer in seeded]
    return order


def pair_rounds(peers: list[str], repetitions: int) -> list[Measure]:
    """Every requester x responder pair, once per repetition, repetition after repetition."""
    return [Measure(PAIR, rep, a, b) for rep in range(repetitions) for a in peers for b in peers]
