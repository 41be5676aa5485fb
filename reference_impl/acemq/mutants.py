"""Version profiles and the mutant catalogue (docs/wire-spec.md).

A profile makes the binding behave like an older release; a mutant is a named,
deliberate defect that breaks exactly one rule, so the suite can show it
catches it. Both are chosen per Requester / Responder.
"""

from __future__ import annotations

from enum import Enum
from typing import Optional

from .errors import UnknownOption

CURRENT = "current"
# 0.5.0 already wrote both addresses and read the header first: the same as current.
# 0.3.0 wrote and read only the acemq-reply-to header.
PROFILES: tuple[str, ...] = (CURRENT, "0.5.0", "0.3.0")
HEADER_ONLY_PROFILES = frozenset({"0.3.0"})


class Side(Enum):
    REQUESTER = "requester"
    GATHERER = "gatherer"
    RESPONDER = "responder"


class Mutant(str, Enum):
    """Every mutant of the catalogue, with the rule it breaks."""

    NATIVE_ONLY = "native-only"  # RR-1
    HEADER_BYTES = "header-bytes"  # RR-2
    QUEUE_PER_REQUEST = "queue-per-request"  # RR-6
    LATE_REPLY_TO_NEXT = "late-reply-to-next"  # RR-8
    IGNORES_ERROR_HEADER = "ignores-error-header"  # RR-10
    NATIVE_FIRST = "native-first"  # RR-3
    NO_STRIP = "no-strip"  # RR-5
    NO_DLQ_ON_FAILURE = "no-dlq-on-failure"  # RR-11
    COUNTS_FAILURES = "counts-failures"  # RR-11
    DEAD_LETTER_UNANSWERABLE = "dead-letter-unanswerable"  # RR-12
    NO_ROLLBACK = "no-rollback"  # RR-15
    ANSWERED_AFTER_PUBLISH = "answered-after-publish"  # RR-15
    COUNTERS_AFTER_SUBSCRIBE = "counters-after-subscribe"  # RR-16
    GATHER_BY_CORRELATION_ID = "gather-by-correlation-id"  # SG-4
    SHORTFALL_RESOLVES = "shortfall-resolves"  # SG-6

    @property
    def side(self) -> Side:
        return _SIDES[self]


_SIDES: dict[Mutant, Side] = {
    Mutant.NATIVE_ONLY: Side.REQUESTER,
    Mutant.HEADER_BYTES: Side.REQUESTER,
    Mutant.QUEUE_PER_REQUEST: Side.REQUESTER,
    Mutant.LATE_REPLY_TO_NEXT: Side.REQUESTER,
    Mutant.IGNORES_ERROR_HEADER: Side.REQUESTER,
    Mutant.NATIVE_FIRST: Side.RESPONDER,
    Mutant.NO_STRIP: Side.RESPONDER,
    Mutant.NO_DLQ_ON_FAILURE: Side.RESPONDER,
    Mutant.COUNTS_FAILURES: Side.RESPONDER,
    Mutant.DEAD_LETTER_UNANSWERABLE: Side.RESPONDER,
    Mutant.NO_ROLLBACK: Side.RESPONDER,
    Mutant.ANSWERED_AFTER_PUBLISH: Side.RESPONDER,
    Mutant.COUNTERS_AFTER_SUBSCRIBE: Side.RESPONDER,
    Mutant.GATHER_BY_CORRELATION_ID: Side.GATHERER,
    Mutant.SHORTFALL_RESOLVES: Side.GATHERER,
}

MUTANT_NAMES: tuple[str, ...] = tuple(m.value for m in Mutant)


def check_profile(profile: Optional[str]) -> str:
    """The profile to use; absent means current. Unknown profiles are refused."""
    if profile is None:
        return CURRENT
    if profile not in PROFILES:
        raise UnknownOption(f"unknown profile {profile!r}; this binding supports {', '.join(PROFILES)}")
    return profile


def check_mutant(mutant: Optional[str], *sides: Side) -> Optional[Mutant]:
    """The mutant to use (None for none), refusing unknown names and other sides' mutants."""
    if mutant is None:
        return None
    try:
        chosen = Mutant(mutant)
    except ValueError:
        raise UnknownOption(f"unknown mutant {mutant!r}") from None
    if chosen.side not in sides:
        raise UnknownOption(f"mutant {mutant!r} acts on a {chosen.side.value}, not here")
    return chosen


def header_only(profile: str) -> bool:
    """Whether the profile writes and reads only the acemq-reply-to header."""
    return profile in HEADER_ONLY_PROFILES
