"""The statistics of a bench, pure: a figure's median and spread over its repetitions, a
ratio as the median of its per-pair ratios, and when a ratio cannot be quoted.

Why per-pair ratios: on a shared machine a burst of someone else's work lands in one
measurement, not in both. A raw measurement and the binding measurement taken right beside
it share the machine's state of that moment, so their ratio cancels most of it; the median
of several such ratios drops the pairs a burst split. A ratio of two medians taken minutes
apart cancels nothing.

The spread is the interquartile range (the quartiles by linear interpolation between the
ordered values, Python's `statistics.quantiles(method="inclusive")`, numpy's default): with
five repetitions it runs from the second to the fourth value, so one outlier on either side
does not widen it, as it would a min-max range. A ratio is unstable when its pairs' spread is
more than the bound (10%) of their median: two benches would then not be expected to agree
within the bound.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Sequence

SPREAD_NAME = "interquartile range"
DEFAULT_BOUND = 0.10
MIN_PAIRS = 3  # below this, quartiles say nothing of how the pairs agree


@dataclass(frozen=True)
class Summary:
    """A figure over its repetitions: the median, the quartiles, the extremes."""

    n: int
    median: float
    q1: float
    q3: float
    min: float
    max: float

    @property
    def relative_spread(self) -> float:
        """The interquartile range over the median (0.12 is 12%); 0 for a zero median."""
        return (self.q3 - self.q1) / self.median if self.median else 0.0

    def record(self, digits: int) -> dict[str, Any]:
        return {"n": self.n, **{k: round(getattr(self, k), digits) for k in ("median", "q1", "q3", "min", "max")}}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "Summary":
        return cls(int(record["n"]), *(float(record[k]) for k in ("median", "q1", "q3", "min", "max")))


def summarize(values: Sequence[float]) -> Summary:
    """Median, quartiles and extremes of one or more values."""
    if not values:
        raise ValueError("no values to summarize")
    ordered = sorted(float(v) for v in values)
    if len(ordered) == 1:
        q1 = q3 = ordered[0]
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return Summary(len(ordered), statistics.median(ordered), q1, q3, ordered[0], ordered[-1])


def pair_ratios(numerators: Sequence[float | None], denominators: Sequence[float | None]) -> list[float]:
    """numerator[i] / denominator[i] for each pair i measured whole (a None or a zero rate is
    a pair that did not happen: it has no ratio)."""
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} numerators for {len(denominators)} denominators: pairs are by repetition")
    return [n / d for n, d in zip(numerators, denominators) if n is not None and d is not None and d > 0]


@dataclass(frozen=True)
class Ratio:
    """A ratio as quoted: the summary of its per-pair ratios, and why it cannot be quoted
    (`unstable`), or None when its pairs agree within the bound."""

    summary: Summary
    pairs: tuple[float, ...]
    unstable: str | None

    @property
    def median(self) -> float:
        return self.summary.median


def judge_ratio(numerator: Sequence[float | None], denominator: Sequence[float | None], names: tuple[str, str],
                bound: float = DEFAULT_BOUND, context: str = "") -> Ratio | None:
    """The ratio numerator/denominator of paired measurements (by repetition), judged.

    `names` says what the two figures are ("binding requester", "raw client"), for the reason
    an unstable ratio gives: the figure whose own spread is over the bound is named with its
    spread; when neither's is, the two moved apart within their pairs (a burst that hit one
    measurement of a pair only), and both spreads are given; `context` (what the machine was
    doing meanwhile) follows. None: no pair was measured whole.
    """
    pairs = pair_ratios(numerator, denominator)
    if not pairs:
        return None
    summary = summarize(pairs)
    if len(pairs) < MIN_PAIRS:
        why: str | None = f"only {len(pairs)} pair(s): too few to judge how they agree"
    elif summary.relative_spread > bound:
        why = _why(summary, numerator, denominator, names, bound) + (f"; {context}" if context else "")
    else:
        why = None
    return Ratio(summary, tuple(pairs), why)


def _why(ratio: Summary, numerator: Sequence[float | None], denominator: Sequence[float | None],
         names: tuple[str, str], bound: float) -> str:
    spreads = [(name, summarize([v for v in values if v is not None]).relative_spread)
               for name, values in zip(names, (numerator, denominator)) if any(v is not None for v in values)]
    said = f"its pairs spread {percent(ratio.relative_spread)} (> {percent(bound)})"
    over = sorted(((s, n) for n, s in spreads if s > bound), reverse=True)
    if over:
        noisy = ", ".join(f"{n} req/s spread {percent(s)}" for s, n in over)
        calm = [f"{n} {percent(s)}" for n, s in spreads if s <= bound]
        return f"{said}: {noisy}" + (f" ({', '.join(calm)})" if calm else "")
    return (f"{said}, while {' and '.join(f'{n} req/s spread {percent(s)}' for n, s in spreads)}: the two moved apart "
            "within pairs (a burst hit one measurement of a pair)")


def change(before: float, after: float) -> float:
    """How far `after` is from `before`, as a fraction of `before` (0.12 is 12%)."""
    return abs(after - before) / before if before else float("inf")


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"
