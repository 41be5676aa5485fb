"""Counters, profiles and the mutant catalogue."""

import re
import threading
from pathlib import Path

import pytest

from acemq.counters import Counter
from acemq.errors import UnknownOption
from acemq.mutants import (
    MUTANT_NAMES,
    PROFILES,
    Mutant,
    Side,
    check_mutant,
    check_profile,
    header_only,
)

WIRE_SPEC = Path(__file__).resolve().parents[3] / "docs" / "wire-spec.md"


def test_counter_starts_at_zero_and_counts():
    counter = Counter()
    assert counter.value == 0
    counter.increment()
    counter.increment()
    counter.decrement()
    assert counter.value == 1


def test_counter_is_exact_under_threads():
    counter = Counter()
    threads = [threading.Thread(target=lambda: [counter.increment() for _ in range(1000)]) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.value == 8000


def test_profiles():
    assert check_profile(None) == "current"
    assert set(PROFILES) == {"current", "0.5.0", "0.3.0"}
    assert header_only("0.3.0")
    assert not header_only("0.5.0") and not header_only("current")
    with pytest.raises(UnknownOption):
        check_profile("0.7.12")


def test_every_mutant_of_the_catalogue_is_implemented():
    if not WIRE_SPEC.exists():
        pytest.skip("docs/wire-spec.md not found")
    text = WIRE_SPEC.read_text(encoding="utf-8").split("## Mutant catalogue", 1)[1]
    catalogue = set(re.findall(r"^\| `([a-z-]+)` \|", text, flags=re.M))
    assert catalogue == set(MUTANT_NAMES)


def test_mutant_sides():
    assert check_mutant(None, Side.RESPONDER) is None
    assert check_mutant("no-strip", Side.RESPONDER) is Mutant.NO_STRIP
    assert check_mutant("shortfall-resolves", Side.REQUESTER, Side.GATHERER) is Mutant.SHORTFALL_RESOLVES
    with pytest.raises(UnknownOption):
        check_mutant("no-strip", Side.REQUESTER, Side.GATHERER)
    with pytest.raises(UnknownOption):
        check_mutant("not-a-mutant", Side.RESPONDER)
