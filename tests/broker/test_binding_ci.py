"""A binding's CI on the real broker: an out-of-tree peer certified with --peer-dir, a peer
from an image beside the same peer run locally, shards that merge into the unsplit run, and
`compare` telling a defective release from a clean one."""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acemq_interop.spec import catalogue as spec
from acemq_interop.broker.control import NOT_HERE
from acemq_interop.core.paths import DATA_ROOT

pytestmark = pytest.mark.broker

PYTHON_PEER = DATA_ROOT / "peers" / "python"


def cli(broker, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "acemq_interop", *args, "--broker", broker.amqp_url(""),
            "--management-url", broker.mgmt_url]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def outside_copy(tmp: Path, name: str, *, defect: bool = False) -> Path:
    """A copy of the Python peer kept outside this repository, renamed, offering no mutants
    (its hello names no knob, so the harness derives none).

    With `defect`, its binding writes the reply address only natively: a realistic release
    regression (RR-1), written into the copy's code, not a catalogue mutant.
    """
    folder = tmp / name
    shutil.copytree(PYTHON_PEER, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    adapter = folder / "acemq_peer.py"
    text = adapter.read_text()
    assert 'PEER = "python"' in text and '"knobs": knobs()' in text
    adapter.write_text(text.replace('PEER = "python"', f'PEER = "{name}"').replace('"knobs": knobs()', '"knobs": {}'))
    if defect:
        policy = folder / "acemq" / "_policy.py"
        code = policy.read_text()
        assert "write_header_address: bool = True" in code
        policy.write_text(code.replace("write_header_address: bool = True", "write_header_address: bool = False"))
    manifest = (folder / "peer.yaml").read_text().replace("name: python", f"name: {name}", 1)
    (folder / "peer.yaml").write_text(manifest)
    return folder


def test_an_out_of_tree_peer_offering_no_mutants_is_certified_in_pairs(broker, tmp_path) -> None:
    folder = outside_copy(tmp_path, "pyout")
    out = tmp_path / "out"
    done = cli(broker, "run", "--peer-dir", str(folder), "--peers", "pyout,python,go", "--scenarios", "rr-pair-*,rr-requester-*",
               "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert {c["status"] for c in results["cells"]} == {"PASS"}
    assert any(c["roles"].get("requester") == "pyout" and c["roles"].get("responder") == "go" for c in results["cells"])
    assert results["peers"]["pyout"]["mutants"]["offered"] == 0
    # The suite's own peer offers every mutant its client can have (pika cannot write B, u or i).
    cannot_have = {name for name, m in spec.mutants().items() if m.only_where}
    assert set(results["peers"]["python"]["mutants"]["missing"]) <= cannot_have
    assert results["peers"]["python"]["mutants"]["offered"] >= results["peers"]["python"]["mutants"]["of"] - len(cannot_have)
    assert "pyout" in done.stdout and "mutants: none" in done.stdout
    assert "mutants: none" in (out / "summary.md").read_text()
    assert (out / "logs").is_dir() and any((out / "logs").iterdir())


def test_shards_merge_into_the_same_cells_and_statuses_as_one_run(broker, tmp_path) -> None:
    selection = ["--peers", "python,go", "--scenarios", "rr-pair-*,sg-gatherer-*"]
    whole = cli(broker, "run", *selection, "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr[-3000:]
    for k in (1, 2, 3):
        shard = cli(broker, "run", *selection, "--shard", f"{k}/3", "--durations", str(tmp_path / "whole" / "results.json"),
                    "--out", str(tmp_path / f"shard{k}"))
        assert shard.returncode == 0, shard.stderr[-3000:]
    merged = subprocess.run([sys.executable, "-m", "acemq_interop", "merge", *(str(tmp_path / f"shard{k}" / "results.json") for k in (1, 2, 3)),
                             "--out", str(tmp_path / "merged")], capture_output=True, text=True, timeout=120)
    assert merged.returncode == 0, merged.stderr
    one = {c["id"]: c["status"] for c in json.loads((tmp_path / "whole" / "results.json").read_text())["cells"]}
    joined = {c["id"]: c["status"] for c in json.loads((tmp_path / "merged" / "results.json").read_text())["cells"]}
    assert joined == one
    sizes = [len(json.loads((tmp_path / f"shard{k}" / "results.json").read_text())["cells"]) for k in (1, 2, 3)]
    assert sum(sizes) == len(one) and min(sizes) > 0
    # A shard given twice, or one missing, is refused.
    again = subprocess.run([sys.executable, "-m", "acemq_interop", "merge", str(tmp_path / "shard1" / "results.json"),
                            str(tmp_path / "shard1" / "results.json"), "--out", str(tmp_path / "bad")], capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "given twice" in again.stderr


def test_compare_flags_a_defective_release_as_a_regression_and_two_clean_runs_as_none(broker, tmp_path) -> None:
    selection = ["--peers", "rel,go", "--scenarios", "rr-pair-round-trip,rr-requester-writes-both-addresses,rr-pair-queue-types"]
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    (clean / "peer").mkdir(parents=True)
    (broken / "peer").mkdir(parents=True)
    first = cli(broker, "run", "--peer-dir", str(outside_copy(clean / "peer", "rel")), *selection, "--out", str(clean / "out"))
    second = cli(broker, "run", "--peer-dir", str(clean / "peer" / "rel"), *selection, "--out", str(clean / "out2"))
    defect = cli(broker, "run", "--peer-dir", str(outside_copy(broken / "peer", "rel", defect=True)), *selection,
                 "--out", str(broken / "out"))
    assert first.returncode == 0 and second.returncode == 0, first.stderr[-2000:] + second.stderr[-2000:]
    assert defect.returncode == 1, defect.stdout[-2000:]
    same = subprocess.run([sys.executable, "-m", "acemq_interop", "compare", str(clean / "out" / "results.json"),
                           str(clean / "out2" / "results.json")], capture_output=True, text=True, timeout=60)
    assert same.returncode == 0 and "no regression" in same.stdout, same.stdout
    worse = subprocess.run([sys.executable, "-m", "acemq_interop", "compare", str(clean / "out" / "results.json"),
                            str(broken / "out" / "results.json")], capture_output=True, text=True, timeout=60)
    assert worse.returncode == 1 and "REGRESSION" in worse.stdout, worse.stdout
    assert "rr-requester-writes-both-addresses[requester=rel]: PASS -> FAIL RR-1" in worse.stdout


def test_a_version_1_peer_kept_outside_is_still_driven_and_certified(broker, tmp_path) -> None:
    """A peer of the previous protocol (version 1 refuses any hello that is not 1, and knows no
    `protocols` list) is asked again at 1 and certifies: every diagonal cell it can run passes."""
    folder = outside_copy(tmp_path, "oldpeer")
    adapter = folder / "acemq_peer.py"
    text = adapter.read_text()
    old_hello = 'offered = command.get("protocols") or [command.get("protocol", 1)]'
    current = re.search(r"^PROTOCOLS = \(1, 2, 3, 4(?:, \d+)*\).*$", text, re.M)
    assert current is not None and old_hello in text
    adapter.write_text(text.replace(current.group(0), "PROTOCOLS = (1,)")
                       .replace(old_hello, 'offered = [command.get("protocol", 1)]'))
    out = tmp_path / "out"
    done = cli(broker, "run", "--peer-dir", str(folder), "--peers", "oldpeer", "--diagonal", "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["peers"]["oldpeer"]["protocol"] == 1
    assert len(results["cells"]) > 20 and {c["status"] for c in results["cells"]} <= {"PASS", "SKIP"}
    skipped = [c for c in results["cells"] if c["status"] == "SKIP"]
    # Only the scenarios that need protocol 3 (or 5) are skipped, and they say so; and, on this broker given by
    # URL, the one that holds a queue on the broker (it needs the node's CLI), saying that.
    by_protocol = [c for c in skipped if "speaks peer protocol 1; this scenario needs " in c["reason"]]  # 3, 5
    assert any("needs 3" in c["reason"] for c in by_protocol) and all(c in by_protocol or c["reason"] == NOT_HERE for c in skipped), skipped


def test_a_version_2_peer_kept_outside_negotiates_2_and_certifies_what_it_can_run(broker, tmp_path) -> None:
    """An older protocol: a peer that lists 1 and 2 answers the harness's offer of [1, 2, 3, 4]
    with 2, runs every scenario that does not need 3, and the rest are SKIP saying why."""
    folder = outside_copy(tmp_path, "v2peer")
    adapter = folder / "acemq_peer.py"
    text = adapter.read_text()
    current = re.search(r"^PROTOCOLS = \(1, 2, 3, 4(?:, \d+)*\).*$", text, re.M)
    assert current is not None
    adapter.write_text(text.replace(current.group(0), "PROTOCOLS = (1, 2)"))
    out = tmp_path / "out"
    done = cli(broker, "run", "--peer-dir", str(folder), "--peers", "v2peer", "--diagonal", "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["peers"]["v2peer"]["protocol"] == 2
    assert len(results["cells"]) > 20 and {c["status"] for c in results["cells"]} <= {"PASS", "SKIP"}
    skipped = [c for c in results["cells"] if c["status"] == "SKIP"]
    # Only the scenarios that need protocol 3 (or 5) are skipped, and they say so; and, on this broker given by
    # URL, the one that holds a queue on the broker (it needs the node's CLI), saying that.
    by_protocol = [c for c in skipped if "speaks peer protocol 2; this scenario needs " in c["reason"]]  # 3, 5
    assert any("needs 3" in c["reason"] for c in by_protocol) and all(c in by_protocol or c["reason"] == NOT_HERE for c in skipped), skipped


def test_a_version_4_peer_kept_outside_negotiates_4_and_skips_only_the_connection_loss(broker, tmp_path) -> None:
    """The protocol just before today's: a peer that lists 1 to 4 (no per-role connection
    names, no `connection_lost`) answers the harness's offer with 4, passes what it can run,
    and only the scenarios that need 5 (RR-20's connection loss) are SKIP, saying so."""
    folder = outside_copy(tmp_path, "v4peer")
    adapter = folder / "acemq_peer.py"
    text = adapter.read_text()
    current = re.search(r"^PROTOCOLS = \(1, 2, 3, 4, 5(?:, \d+)*\).*$", text, re.M)
    assert current is not None
    adapter.write_text(text.replace(current.group(0), "PROTOCOLS = (1, 2, 3, 4)"))
    out = tmp_path / "out"
    # The scenarios that need 3 beside those that need 5, and the pairs: what tells 4 from 5.
    done = cli(broker, "run", "--peer-dir", str(folder), "--peers", "v4peer", "--diagonal", "--out", str(out),
               "--scenarios", "rr-pair-*,rr-*connection-lost*,rr-*-recovers,*-close-ends-pending,*-type-property")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["peers"]["v4peer"]["protocol"] == 4
    cells = results["cells"]
    needs_5 = {c["scenario"] for c in cells if c["status"] == "SKIP" and "speaks peer protocol 4; this scenario needs 5" in c["reason"]}
    assert needs_5 == {"rr-requester-connection-lost-ends-pending", "rr-requester-recovers",
                       "rr-responder-connection-lost-redelivers", "rr-responder-recovers"}, cells
    others = [c for c in cells if c["scenario"] not in needs_5]
    assert len(others) > 10 and all(c["status"] == "PASS" or (c["status"] == "SKIP" and c["reason"] == NOT_HERE)
                                    for c in others), [(c["id"], c["status"], c.get("reason")) for c in others if c["status"] != "PASS"]
