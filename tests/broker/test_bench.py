"""`bench` and the protocol's `load` op on the real broker: figures are produced and sane.

Figures, not pass/fail: nothing here asserts a rate or a latency bound (that would flake on
a shared 2-core machine). It asserts that every figure exists, is positive where it must
be, that percentiles are ordered, that every request was answered, and that bench.json
validates against its schema.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

from acemq_interop.commands.bench import BenchSettings, run_bench
from acemq_interop.peers.manifests import PeerSpec, discover
from acemq_interop.core.paths import SCHEMAS_DIR

pytestmark = pytest.mark.broker

PEERS = ["go", "python"]


@pytest.fixture(scope="module")
def bench_result(broker, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    settings = BenchSettings(requests=300, in_flight=16, body_bytes=128, warmup=20, pair_requests=100, seed_requests=40)
    result = run_bench(discover(), [PeerSpec(p) for p in PEERS], broker, settings, out, print)
    return result, json.loads((out / "bench.json").read_text())


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
    _, written = bench_result
    schema = json.loads((SCHEMAS_DIR / "bench.schema.json").read_text())
    jsonschema.validate(written, schema)


def test_every_peer_has_binding_raw_and_per_request_figures(bench_result) -> None:
    _, written = bench_result
    assert [p["peer"] for p in written["peers"]] == PEERS
    for peer in written["peers"]:
        assert peer["protocol"] >= 2, peer  # load is protocol 2; the peers here speak 3
        _sane(peer["binding"], 300)
        _sane(peer["raw"], 300)
        assert peer["raw"]["client"] == "raw" and peer["binding"]["client"] == "binding"
        _sane(peer["per_request_queue"], 40)
        _sane(peer["binding_responder"], 300)
        assert peer["responder_over_raw"] > 0
        assert peer["binding_over_raw"] > 0 and peer["shared_over_per_request"] > 0
        assert peer["startup_s"] >= 0 and peer["rss_idle_mib"] > 0 and peer["rss_after_mib"] > 0


def test_every_pair_was_measured_through_the_bindings(bench_result) -> None:
    _, written = bench_result
    pairs = {(p["requester"], p["responder"]): p for p in written["pairs"]}
    assert set(pairs) == {(a, b) for a in PEERS for b in PEERS}
    for pair in pairs.values():
        _sane(pair["load"], 100)


def test_the_broker_and_machine_are_recorded(bench_result) -> None:
    _, written = bench_result
    assert written["broker"]["version"] and written["broker"]["erlang"]
    assert written["machine"]["cpus"] >= 1
