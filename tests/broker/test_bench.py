"""`bench` and the protocol's `load` op on the real broker: figures are produced and sane.

Figures, not pass/fail: nothing here asserts a rate or a latency bound (that would flake on
a shared 2-core machine). It asserts that every figure exists for every repetition, is
positive where it must be, that percentiles are ordered, that every request was answered,
that each ratio is the median of its pairs, and that bench.json validates against its
schema and bench.md is the table the README quotes.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

from acemq_interop.broker.lifecycle import BrokerSource
from acemq_interop.core.paths import SCHEMAS_DIR
from acemq_interop.peers.manifests import discover
from acemq_interop.reports.bench import COLUMNS, write_markdown
from acemq_interop.results.bench import BenchSettings, write_bench
from acemq_interop.run.bench import BenchRequest, run_bench

pytestmark = pytest.mark.broker

PEERS = ["go", "python"]
REPETITIONS = 3


@pytest.fixture(scope="module")
def bench_result(broker, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    settings = BenchSettings(requests=300, repetitions=REPETITIONS, in_flight=16, body_bytes=128, warmup=20,
                             pair_requests=100, pair_repetitions=2, seed_requests=40)
    result = run_bench(BenchRequest(discover(), PEERS, BrokerSource.given(broker), settings, out / "bench-logs", print))
    write_bench(result, out)
    write_markdown(result, out)
    return result, json.loads((out / "bench.json").read_text()), (out / "bench.md").read_text()


def _sane(load: dict, requests: int) -> None:
    assert load["requests"] == requests
    assert load["completed"] == requests, load
    assert load["errors"] == 0 and load["timeouts"] == 0, load
    assert load["rate_per_s"] > 0 and load["duration_ms"] > 0
    lat = load["latency_us"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"], lat
    if "min" in lat:
        assert lat["min"] <= lat["p50"]


def test_bench_json_validates_against_its_schema(bench_result) -> None:
    _, written, _ = bench_result
    schema = json.loads((SCHEMAS_DIR / "bench.schema.json").read_text())
    jsonschema.validate(written, schema)


def test_every_peer_has_every_figure_in_every_repetition(bench_result) -> None:
    _, written, _ = bench_result
    assert [p["peer"] for p in written["peers"]] == PEERS
    for peer in written["peers"]:
        assert peer["protocol"] >= 2, peer  # load is protocol 2; the peers here speak 4
        m = peer["measurements"]
        for kind, requests, client in (("binding", 300, "binding"), ("raw", 300, "raw"), ("binding_responder", 300, "raw"),
                                       ("per_request_queue", 40, "binding")):
            assert len(m[kind]) == REPETITIONS, (peer["peer"], kind)
            for load in m[kind]:
                _sane(load, requests)
                assert load["client"] == client
            assert peer["rates"][kind]["n"] == REPETITIONS
        for name, ratio in peer["ratios"].items():
            assert ratio["n"] == REPETITIONS and len(ratio["pairs"]) == REPETITIONS, name
            assert sorted(ratio["pairs"])[REPETITIONS // 2] == ratio["median"], name  # the median of the pairs
        assert peer["startup_s"] >= 0 and peer["rss_idle_mib"] > 0 and peer["rss_after_mib"] > 0


def test_every_ratio_pairs_the_measurements_of_one_repetition(bench_result) -> None:
    _, written, _ = bench_result
    for peer in written["peers"]:
        m = peer["measurements"]
        expected = [round(b["rate_per_s"] / r["rate_per_s"], 3) for b, r in zip(m["binding"], m["raw"])]
        assert peer["ratios"]["binding_over_raw"]["pairs"] == expected


def test_every_pair_was_measured_through_the_bindings(bench_result) -> None:
    _, written, _ = bench_result
    pairs = {(p["requester"], p["responder"]): p for p in written["pairs"]}
    assert set(pairs) == {(a, b) for a in PEERS for b in PEERS}
    for pair in pairs.values():
        assert len(pair["loads"]) == 2
        for load in pair["loads"]:
            _sane(load, 100)


def test_the_broker_and_machine_are_recorded(bench_result) -> None:
    _, written, _ = bench_result
    assert written["broker"]["version"] and written["broker"]["erlang"]
    assert written["machine"]["cpus"] >= 1 and len(written["machine"]["load_before"]) == 3


def test_bench_md_holds_one_row_per_peer(bench_result) -> None:
    _, _, md = bench_result
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert rows[0] == f"| {' | '.join(COLUMNS)} |"
    assert rows[1] == f"| {' | '.join('---' for _ in COLUMNS)} |"
    assert [r.split(" | ")[0] for r in rows[2:]] == [f"| {p}" for p in PEERS]
