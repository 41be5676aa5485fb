"""Verdicts on bindings nobody here wrote, held to the ground truth their authors wrote first.

Four outside bindings (tests/fixtures/foreign: a Python port of RabbitMQ's tutorial RPC, a Node
event-loop bus with five defects, an in-house pika library whose adapter declares none of the
parts it lacks, a caller over direct reply-to with no reply queue of its own) run beside the
reference binding, in pairs with it and with
each other, as a binding's maintainer would certify one. Each FAIL must name a clause the
charged binding truly breaks, the reference binding and the probe are never charged, no cell
is an ERROR (no fault is planted: every failure is a binding's), and each clause the ground
truth lists under `named:` is named somewhere.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.broker

FOREIGN = Path(__file__).resolve().parent.parent / "fixtures" / "foreign"
BINDINGS = ("tutorial-rpc", "eventbus-node", "courier-rpc", "direct-rpc")


def test_each_fail_names_a_clause_the_charged_binding_truly_breaks_and_no_innocent_peer_is_charged(broker, tmp_path) -> None:
    expected = {b: yaml.safe_load((FOREIGN / b / "expected.yaml").read_text()) for b in BINDINGS}
    peers = [e["peer"] for e in expected.values()]
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "acemq_interop", "run", "--broker", broker.amqp_url(""), "--management-url", broker.mgmt_url,
            *[a for b in BINDINGS for a in ("--peer-dir", str(FOREIGN / b / "peer"))],
            "--peers", ",".join([*peers, "python"]), "--out", str(out), "-q"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    assert done.returncode == 1 and (out / "results.json").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    errors = [(c["id"], c["message"][:300]) for c in results["cells"] if c["status"] == "ERROR"]
    assert not errors, f"a binding's behaviour judged as a fault: {errors}"
    truth = {e["peer"]: set(e["breaks"]) for e in expected.values()}
    named: dict[str, set[str]] = {p: set() for p in truth}
    wrong = []
    for cell in results["cells"]:
        for f in cell.get("failures") or []:
            if f["peer"] not in truth:
                wrong.append((cell["id"], f["clause"], f["peer"], "an innocent peer charged"))
            elif f["clause"] not in truth[f["peer"]]:
                wrong.append((cell["id"], f["clause"], f["peer"], f"a clause {f['peer']} keeps: {f['message'][:160]}"))
            else:
                named[f["peer"]].add(f["clause"])
    assert not wrong, "\n".join(map(str, wrong))
    for e in expected.values():
        missing = set(e["named"]) - named[e["peer"]]
        assert not missing, f"{e['peer']} breaks {sorted(missing)}, named in no cell"
    # The to-do lists are the maintainers': the reference binding has nothing on its own.
    assert "python" not in {f["peer"] for c in results["cells"] for f in c.get("failures") or []}
