"""The bench's statistics and its order of measurements, pure: no broker, no peer, no clock.

What a quoted ratio is (the median of per-pair ratios, not a ratio of medians), when it is
unstable and which figure the bench blames, and that every ratio's two figures are measured
side by side."""
from __future__ import annotations

import pytest

from acemq_interop.core.machine import others_share
from acemq_interop.reports.bench import comparison_text
from acemq_interop.results.bench import BenchSettings, Load, PeerBench, bench_data, bench_from_data, compare_ratios
from acemq_interop.results.bench_stats import judge_ratio, pair_ratios, summarize
from acemq_interop.results.model import BrokerInfo
from acemq_interop.run.bench_plan import pair_rounds, peer_rounds


def test_the_summary_is_the_median_and_the_inclusive_quartiles() -> None:
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (s.n, s.median, s.q1, s.q3, s.min, s.max) == (5, 3.0, 2.0, 4.0, 1.0, 5.0)
    assert s.relative_spread == pytest.approx(2.0 / 3.0)
    assert summarize([7.0]).relative_spread == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_a_ratio_is_the_median_of_the_per_pair_ratios_not_the_ratio_of_the_medians() -> None:
    # Three pairs, each taken at another speed of the machine: the binding is half the raw
    # client in every pair. The ratio of the medians (20/30) says otherwise.
    binding, raw = [5.0, 20.0, 40.0], [10.0, 40.0, 30.0]
    ratio = judge_ratio(binding, raw, ("binding requester", "raw client"), bound=0.5)
    assert ratio is not None
    assert ratio.pairs == (0.5, 0.5, 40 / 30)
    assert ratio.median == 0.5 != summarize(binding).median / summarize(raw).median


def test_a_pair_missing_either_figure_has_no_ratio() -> None:
    assert pair_ratios([1.0, None, 3.0, 4.0], [2.0, 2.0, None, 0.0]) == [0.5]
    with pytest.raises(ValueError):
        pair_ratios([1.0], [1.0, 2.0])  # pairs are by repetition: the two lists are as long
    assert judge_ratio([None], [1.0], ("a", "b")) is None


def test_pairs_that_agree_within_the_bound_are_stable() -> None:
    # The machine's speed moves by 3x, but each pair sees one speed: the pairs agree.
    raw = [1000.0, 3000.0, 2000.0, 1500.0, 2500.0]
    binding = [r * f for r, f in zip(raw, (0.70, 0.72, 0.71, 0.69, 0.73))]
    ratio = judge_ratio(binding, raw, ("binding requester", "raw client"), bound=0.10)
    assert ratio is not None and ratio.unstable is None
    assert ratio.median == pytest.approx(0.71)


def test_unstable_pairs_name_the_figure_whose_spread_is_over_the_bound() -> None:
    binding = [700.0, 710.0, 690.0, 705.0, 695.0]
    raw = [1000.0, 1600.0, 900.0, 1300.0, 700.0]  # the raw client's measurements disagree
    ratio = judge_ratio(binding, raw, ("binding requester", "raw client"), bound=0.10, context="others used 5%-80%")
    assert ratio is not None and ratio.unstable
    assert "raw client req/s spread" in ratio.unstable
    assert "(binding requester 1%)" in ratio.unstable  # the calm one is given, not blamed
    assert ratio.unstable.endswith("; others used 5%-80%")


def test_two_calm_figures_that_moved_apart_within_pairs_are_said_so() -> None:
    # Each figure alone within 10%, but the bursts hit the raw client and the binding in
    # different pairs: the pairs' ratios disagree while neither figure's spread says so.
    binding = [1000.0, 1080.0, 1000.0, 1080.0, 1040.0]
    raw = [1080.0, 1000.0, 1080.0, 1000.0, 1040.0]
    ratio = judge_ratio(binding, raw, ("binding requester", "raw client"), bound=0.10)
    assert ratio is not None and ratio.unstable and "moved apart within pairs" in ratio.unstable


def test_too_few_pairs_are_never_quoted_as_stable() -> None:
    ratio = judge_ratio([1.0, 1.0], [2.0, 2.0], ("a", "b"))
    assert ratio is not None and ratio.unstable and "too few" in ratio.unstable


def test_every_ratio_pairs_two_measurements_taken_side_by_side() -> None:
    order = peer_rounds(["dotnet", "go", "java"], 4, seeded={"dotnet", "java"})
    for peer in ("dotnet", "go", "java"):
        for rep in range(4):
            kinds = [m.kind for m in order if m.requester == peer and m.repetition == rep]
            for top, bottom in (("binding", "raw"), ("binding_responder", "raw"), ("binding", "per_request_queue")):
                if bottom in kinds:
                    assert abs(kinds.index(top) - kinds.index(bottom)) == 1, (peer, rep, kinds)
            # The order turns every repetition: no figure is always measured first.
            assert kinds[0] != [m.kind for m in order if m.requester == peer and m.repetition == rep ^ 1][0]
    assert not [m for m in order if m.requester == "go" and m.kind == "per_request_queue"]
    # Repetition after repetition across the peers, not one peer's repetitions in a row.
    assert [m.repetition for m in order] == sorted(m.repetition for m in order)
    assert len(pair_rounds(["a", "b"], 3)) == 12


def test_others_share_is_the_cpu_not_ours_over_the_window() -> None:
    assert others_share(wall_s=2.0, busy_s=3.0, ours_s=1.0, cpus=2) == 0.5
    assert others_share(wall_s=1.0, busy_s=0.5, ours_s=0.9, cpus=2) == 0.0  # clocks read apart: never negative
    assert others_share(wall_s=0.0, busy_s=1.0, ours_s=0.0, cpus=2) == 0.0


def _load(rate: float, client: str = "raw") -> Load:
    return Load(client, 100, 100, 0, 0, 100_000 / rate, rate, {"p50": 1000.0, "p90": 2000.0, "p99": 3000.0, "max": 4000.0})


def test_bench_json_reads_back_to_the_same_figures() -> None:
    from acemq_interop.results.bench import BenchResult

    peer = PeerBench("go", "acemq-go", "amqp091-go", 4, 0.02, 5.0, 11.0)
    peer.loads["raw"] = [_load(r) for r in (1000, 1100, 900)]
    peer.loads["binding"] = [_load(r, "binding") for r in (700, 800, 600)]
    result = BenchResult(BenchSettings(repetitions=3), "2026-01-01T00:00:00+00:00", 10.0, {}, {"cpus": 2}, BrokerInfo("rabbitmq-x"),
                         [peer], [])
    data = bench_data(result)
    assert bench_data(bench_from_data(data)) == data
    assert data["peers"][0]["ratios"]["binding_over_raw"]["pairs"] == [0.7, 0.727, 0.667]
    assert data["peers"][0]["ratios"]["shared_over_per_request"] is None  # no per-request figure: no ratio


def test_two_benches_are_compared_ratio_by_ratio_whatever_their_schema_version() -> None:
    old = {"schema_version": 1, "peers": [{"peer": "go", "binding_over_raw": 0.8, "responder_over_raw": None}]}
    new = {"schema_version": 2, "peers": [{"peer": "go", "ratios": {"binding_over_raw": {"median": 0.9}}}]}
    [change] = compare_ratios(old, new)
    assert (change.peer, change.ratio, change.before, change.after) == ("go", "binding_over_raw", 0.8, 0.9)
    assert change.change == pytest.approx(0.125)


def test_a_comparison_says_whether_a_bench_warned_of_each_disagreement() -> None:
    def bench(ratios: dict[str, tuple[float, str | None]]) -> dict:
        return {"schema_version": 2, "peers": [{"peer": peer, "ratios": {"binding_over_raw": {"median": m, "unstable": why}}}
                                               for peer, (m, why) in ratios.items()]}

    old = bench({"go": (0.8, None), "java": (0.8, None), "node": (0.5, None)})
    new = bench({"go": (0.82, None), "java": (0.4, "its pairs spread 40%"), "node": (0.9, None)})
    changes = {c.peer: c for c in compare_ratios(old, new)}
    assert not changes["java"].unstable_before and changes["java"].unstable_after and changes["java"].foretold
    assert not changes["node"].foretold
    text = comparison_text(list(changes.values()), 0.10)
    assert "0.80  ->    0.82   (2%, agree)" in text
    assert "0.80  ->    0.40!  (50%, DIFFER)" in text
    assert "(80%, DIFFER, though both called it stable)" in text
    assert text.endswith("1 of 3 ratios agree within 10%; of the 2 that differ, 1 were called unstable by a bench, 1 by neither.")
