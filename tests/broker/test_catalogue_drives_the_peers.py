"""Protocol 4: the catalogue drives every peer. A mutant added to the catalogue, made of knobs
the peers already have, runs on all six and is caught, with no line of any adapter changed:
the harness sends its policy values, and no adapter keeps a copy of the catalogue."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acemq_interop.core.paths import DATA_ROOT
from acemq_interop.peers.protocol import PROTOCOL_VERSION

pytestmark = pytest.mark.broker

PEERS = ("dotnet", "go", "java", "node", "python", "ruby")
NEW_MUTANT = '''
  header-only-and-uncounted:  {side: requester, clause: RR-1.2, policy: {write_header_address: false, count_timeouts: false}, does: "a mutant no adapter has ever heard of: writes no acemq-reply-to and counts no timeout"}
'''


def test_a_new_catalogue_mutant_of_existing_knobs_runs_on_every_peer_unchanged(broker, tmp_path) -> None:
    home = tmp_path / "suite"
    for folder in ("scenarios", "known-failures", "docs"):
        shutil.copytree(DATA_ROOT / folder, home / folder)
    (home / "catalogue").mkdir()
    text = (DATA_ROOT / "catalogue" / "catalogue.yaml").read_text(encoding="utf-8")
    assert "\nprofiles:\n" in text
    (home / "catalogue" / "catalogue.yaml").write_text(text.replace("\nprofiles:\n", NEW_MUTANT + "profiles:\n", 1), encoding="utf-8")
    for name in ("wire-vectors.json",):
        shutil.copy(DATA_ROOT / "catalogue" / name, home / "catalogue" / name)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "acemq_interop", "run", "--broker", broker.amqp_url(""), "--management-url", broker.mgmt_url,
            *[a for p in PEERS for a in ("--peer-dir", str(DATA_ROOT / "peers" / p))],
            "--peers", ",".join(f"{p}+header-only-and-uncounted" for p in PEERS),
            "--scenarios", "rr-requester-writes-both-addresses", "--diagonal", "--out", str(out), "-q"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "ACEMQ_INTEROP_HOME": str(home)})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    verdicts = {c["id"]: (c["status"], [(f["clause"], f["peer"]) for f in c.get("failures") or []]) for c in results["cells"]}
    assert verdicts == {f"rr-requester-writes-both-addresses[requester={p}+header-only-and-uncounted]":
                        ("FAIL", [("RR-1.2", f"{p}+header-only-and-uncounted")]) for p in PEERS}, verdicts
    for p in PEERS:  # offered, as every other mutant of those knobs: derived from the knobs each peer names
        assert results["peers"][p]["protocol"] == PROTOCOL_VERSION, results["peers"][p]  # policies need 4 or later
        assert "header-only-and-uncounted" not in results["peers"][p]["mutants"]["missing"], results["peers"][p]
