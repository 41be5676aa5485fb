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
    IMPLICIT_QUEUE_TYPE = "implicit-queue-type"  # RR-7
    TIMEOUTS_NOT_COUNTED = "timeouts-not-counted"  # RR-9
    IGNORES_RETURNS = "ignores-returns"  # RR-13
    TRUNCATES_SHORT_STRINGS = "truncates-short-strings"  # RR-18
    DROPS_UNDECODABLE = "drops-undecodable"  # RR-19
    CORRELATION_FROM_CORRELATION_ID = "correlation-from-correlation-id"  # RR-4
    ACKS_UNDELIVERABLE = "acks-undeliverable"  # RR-14
    CLASSIC_DLQ = "classic-dlq"  # RR-17
    NO_RESPONSE_MESSAGE_ID = "no-response-message-id"  # SG-3
    STRICT_HEADER_TYPES = "strict-header-types"  # WF-1
    COPIES_DISTINCT_IDS = "copies-distinct-ids"  # SG-1
    MULTI_ONE_COPY = "multi-one-copy"  # SG-2
    NO_EARLY_RESOLVE = "no-early-resolve"  # SG-5
    NO_COUNT_MEANS_ONE = "no-count-means-one"  # SG-7
    STRAY_REPLY_TO_OLDEST_GATHER = "stray-reply-to-oldest-gather"  # SG-8

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
    Mutant.IMPLICIT_QUEUE_TYPE: Side.REQUESTER,
    Mutant.TIMEOUTS_NOT_COUNTED: Side.REQUESTER,
    Mutant.IGNORES_RETURNS: Side.REQUESTER,
    Mutant.TRUNCATES_SHORT_STRINGS: Side.REQUESTER,
    Mutant.DROPS_UNDECODABLE: Side.REQUESTER,
    Mutant.CORRELATION_FROM_CORRELATION_ID: Side.RESPONDER,
    Mutant.ACKS_UNDELIVERABLE: Side.RESPONDER,
    Mutant.CLASSIC_DLQ: Side.RESPONDER,
    Mutant.NO_RESPONSE_MESSAGE_ID: Side.RESPONDER,
    Mutant.STRICT_HEADER_TYPES: Side.RESPONDER,
    Mutant.COPIES_DISTINCT_IDS: Side.GATHERER,
    Mutant.MULTI_ONE_COPY: Side.GATHERER,
    Mutant.NO_EARLY_RESOLVE: Side.GATHERER,
    Mutant.NO_COUNT_MEANS_ONE: Side.GATHERER,
    Mutant.STRAY_REPLY_TO_OLDEST_GATHER: Side.GATHERER,
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
