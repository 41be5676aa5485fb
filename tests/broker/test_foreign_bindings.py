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
ROOT = Path(__file__).resolve().parents[2]
BINDINGS = ("tutorial-rpc", "eventbus-node", "courier-rpc", "direct-rpc")
# Where each binding and its ground truth live: the tutorial pattern is also a foreign stack of
# the foreign-interop matrix (foreign/tutorial; its expected.yaml there is the matrix's truth).
FOLDER = {"tutorial-rpc": ROOT / "foreign" / "tutorial"}
TRUTH = {"tutorial-rpc": "certified.yaml"}


def _folder(binding: str) -> Path:
    return FOLDER.get(binding, FOREIGN / binding)


def _truth(binding: str) -> dict:
    return yaml.safe_load((_folder(binding) / TRUTH.get(binding, "expected.yaml")).read_text())


@pytest.fixture(scope="module")
def certified(tmp_path_factory) -> dict:
    """One run of every outside binding beside the reference binding, on a private node of the
    run's own (so the scenarios that hold a queue on the broker run too), as a maintainer runs it."""
    out = tmp_path_factory.mktemp("foreign") / "out"
    peers = [_truth(b)["peer"] for b in BINDINGS]
    argv = [sys.executable, "-m", "acemq_interop", "run",
            *[a for b in BINDINGS for a in ("--peer-dir", str(_folder(b) / "peer"))],
            "--peers", ",".join([*peers, "python"]), "--out", str(out), "-q"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    assert done.returncode == 1 and (out / "results.json").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    return {"cells": results["cells"], "by_id": {c["id"]: c for c in results["cells"]}}


def test_each_fail_names_a_clause_the_charged_binding_truly_breaks_and_no_innocent_peer_is_charged(certified) -> None:
    expected = {b: _truth(b) for b in BINDINGS}
    errors = [(c["id"], c["message"][:300]) for c in certified["cells"] if c["status"] == "ERROR"]
    assert not errors, f"a binding's behaviour judged as a fault: {errors}"
    truth = {e["peer"]: set(e["breaks"]) for e in expected.values()}
    named: dict[str, set[str]] = {p: set() for p in truth}
    wrong = []
    for cell in certified["cells"]:
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
    assert "python" not in {f["peer"] for c in certified["cells"] for f in c.get("failures") or []}


def _failures(cell: dict) -> list[tuple[str, str | None, str | None]]:
    return [(f["clause"], f["peer"], f.get("seen_as")) for f in cell.get("failures") or []]


def _needs(cell: dict) -> str:
    return "\n".join(n["needs"] for n in cell.get("not_evaluated") or [])


def test_an_object_the_binding_owed_and_never_made_is_evidence_not_a_fault(certified) -> None:
    """Issue 29, 1: courier never declares {queue}.dlq. Each cell reading it names RR-17.2
    (found by a passive declare), the dead-letter's own clause as the lack breaks it, and goes
    on: no 404 closes the probe's channel into an ERROR."""
    cell = certified["by_id"]["rr-responder-failure-reply[responder=courierpy]"]
    assert cell["status"] == "FAIL"
    assert {("RR-17.2", "courierpy", None), ("RR-11.1", "courierpy", None)} <= set(_failures(cell)), _failures(cell)
    dlq = next(f for f in cell["failures"] if f["clause"] == "RR-17.2")
    assert "passive declare: 404 NOT_FOUND" in dlq["check"] and dlq["observed"] == {"exists": False}
    wire = certified["by_id"]["rr-responder-header-wire-types[responder=courierpy]"]
    assert wire["status"] == "FAIL" and ("RR-17.2", "courierpy", None) in _failures(wire)


def test_a_hold_whose_event_never_comes_is_a_verdict(certified) -> None:
    """Issue 29, 1: a responder with no hooks leaves the confirm-hold scenario's wait unmet; the
    cell is judged (its lack of counters is RR-15.1), never 'no verdict'."""
    cell = certified["by_id"]["rr-responder-answered-before-confirm[responder=courierpy]"]
    assert cell["status"] == "FAIL" and ("RR-15.1", "courierpy", None) in _failures(cell), (cell["status"], cell["message"])


def test_blame_follows_the_wire_not_the_consequence(certified) -> None:
    """Issue 29, 2 and 3: requests that reach the queue late are the requester's doing, not the
    responder's; a requester whose calls name direct reply-to has no reply queue of its own
    (RR-6.1), named from its requests on the wire, and the responder answering it at most
    once, as RR-14.5 says, is not charged."""
    late = certified["by_id"]["rr-pair-responder-redeploy[requester=courierpy,responder=python]"]
    assert all(peer == "courierpy" for _, peer, _ in _failures(late)), _failures(late)
    assert "RR-17.1" not in {c for c, _, _ in _failures(late)} and "the transcript shows" in _needs(late)
    direct = certified["by_id"]["rr-pair-answered-visible[requester=directpy,responder=python]"]
    assert _failures(direct) == [("RR-6.1", "directpy", None)], _failures(direct)
    assert "direct reply-to" in direct["failures"][0]["wire"]
    queue_facts = certified["by_id"]["rr-pair-queue-types[requester=directpy,responder=python]"]
    assert queue_facts["status"] == "FAIL" and ("RR-6.1", "directpy", None) in _failures(queue_facts), \
        "a requester with no reply queue is RR-6.1, not a cell whose reply-queue checks all went unevaluated"


def test_a_shared_roles_failure_goes_to_the_publishers_the_wire_names(certified) -> None:
    """Issue 29, 2: in a mixed gather the replies without responseMessageId are courier's and
    tutorial's on the wire: each is charged SG-3.1 with its own messages, the reference
    subscriber never, and no failure is left on no one."""
    cell = next(c for c in certified["cells"] if c["id"].startswith("sg-mixed-publish-every-language[gatherer=python,"))
    # direct-rpc cannot answer: the run leaves it out of the subscribers, not the whole cell.
    assert cell["status"] == "FAIL" and "directpy" not in cell["roles"]["subscribers"], (cell["status"], cell["roles"])
    charged = {peer for clause, peer, _ in _failures(cell) if clause == "SG-3.1"}
    assert charged == {"courierpy", "tutorialpy"}, _failures(cell)
    assert all(peer is not None for _, peer, _ in _failures(cell))


def test_one_root_per_defect(certified) -> None:
    """Issue 29, 3: courier has no counters (its `counters` refused): the clauses that absence
    breaks are named, the ones about counting wrongly are not evaluated; its responder answers
    no call without a correlation_id, named RR-4.1 once per cell from the wire where the request
    named both addresses, and seen through RR-4.1 where the scenario's request named one."""
    for cell in certified["cells"]:
        assert not {("RR-15.2", "courierpy"), ("RR-11.3", "courierpy")} & {(c, p) for c, p, _ in _failures(cell)}, cell["id"]
    failure = certified["by_id"]["rr-responder-failure-reply[responder=courierpy]"]
    assert "lacks: the binding of responder has no counters" in _needs(failure)
    strips = certified["by_id"]["rr-responder-strips-engine-headers[responder=courierpy]"]
    assert _failures(strips) == [("RR-4.1", "courierpy", None)]
    assert "published no reply" in strips["failures"][0]["wire"]
    header_only = certified["by_id"]["rr-responder-header-only[responder=courierpy]"]
    assert _failures(header_only) == [("RR-4.1", "courierpy", "RR-3.1")]
    # The tutorial pattern's server reads only reply_to: its header-only failure stays RR-3.1.
    tutorial = certified["by_id"]["rr-responder-header-only[responder=tutorialpy]"]
    assert ("RR-3.1", "tutorialpy", None) in _failures(tutorial)
