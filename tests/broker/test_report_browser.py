"""The published report, checked as a person reads it: in Debian's headless Chromium.

Two runs, each on a private RabbitMQ node of its own, one after the other (as `acemq-interop
run` does by default): a failing one (a requester mutant, a responder mutant and a peer
that crashes) and a passing one; then `publish` over both. The failing run's report is
opened in Chromium (playwright-core from npm, driving /usr/bin/chromium with a new empty
profile): the failures come first with their rule, a pair opens its scenarios, a failing
cell shows the broker's transcript, no evidence sticks out to the right. Screenshots are
kept under out/screenshots/.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
BROWSER_DIR = ROOT / "tests" / "browser"
OUT = ROOT / "out" / "report-browser"
SHOTS = ROOT / "out" / "screenshots"
CLI = [sys.executable, "-m", "acemq_interop"]
NATIVE_ONLY_CELL = "rr-requester-writes-both-addresses[requester=python+native-only]"
NO_STRIP_CELL = "rr-responder-strips-engine-headers[responder=go+no-strip]"
HEADER_BYTES_CELL = "rr-requester-writes-both-addresses[requester=python+header-bytes]"


def _need_tools() -> None:
    # A missing tool fails the test: a skipped browser check would count as a pass that checked nothing.
    assert shutil.which("rabbitmq-server") or Path("/usr/sbin/rabbitmq-server").exists(), "rabbitmq-server is not installed (ci/setup.sh)"
    assert shutil.which("node"), "node is not installed (ci/install-node.sh)"
    if shutil.which("chromium") is None or not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        # Debian's chromium and playwright-core from npm, idempotently (as root, as CI is; ci/setup.sh runs it too).
        done = subprocess.run(["sh", str(ROOT / "ci" / "install-browser.sh")], capture_output=True, text=True, timeout=900)
        assert shutil.which("chromium") and done.returncode == 0, f"no browser: sh ci/install-browser.sh failed: {(done.stdout + done.stderr)[-500:]}"


def _run(args: list[str], out: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ACEMQ_INTEROP_BROKER"}
    return subprocess.run([*CLI, "run", *args, "--out", str(out), "-q"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def site() -> dict[str, Path]:
    _need_tools()
    shutil.rmtree(OUT, ignore_errors=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    failing, passing = OUT / "failing", OUT / "passing"
    done = _run(["--peers", "python+native-only,go+no-strip,python+header-bytes,broken-crash", "--peer-dir", "tests/fixtures/peers/crash",
                 "--scenarios", "rr-requester-writes-both-addresses,rr-responder-strips-engine-headers,rr-pair-round-trip",
                 "--op-timeout", "5"], failing)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    done = _run(["--peers", "python", "--scenarios", "rr-pair-round-trip,rr-requester-writes-both-addresses"], passing)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = subprocess.run([*CLI, "publish", str(failing / "results.json"), str(passing / "results.json"),
                           "--site", str(OUT / "site")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return {"failing": failing, "passing": passing, "site": OUT / "site"}


@pytest.fixture(scope="module")
def seen(site: dict[str, Path]) -> dict:
    done = subprocess.run(["node", "check_report.mjs", str(site["failing"] / "report.html"), str(SHOTS), NATIVE_ONLY_CELL,
                           str(site["site"] / "index.html")], cwd=BROWSER_DIR, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _cells(path: Path) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads((path / "results.json").read_text())["cells"]}


def test_no_object_placeholder_anywhere(site: dict[str, Path]) -> None:
    for run in ("failing", "passing"):
        for name in ("results.json", "junit.xml", "report.html", "summary.md"):
            text = (site[run] / name).read_text(encoding="utf-8")
            assert "<object" not in text, f"{run}/{name} shows a Python object instead of a value"


def test_the_transcript_shows_the_reply_address_written_once(site: dict[str, Path]) -> None:
    cell = _cells(site["failing"])[NATIVE_ONLY_CELL]
    assert cell["status"] == "FAIL" and cell["failed_rule"].startswith("RR-1"), cell
    requests = [m for m in cell["transcript"] if m["event"] == "publish" and m["who"] != "probe"]
    assert requests, cell["transcript"]
    request = requests[0]
    assert request["properties"]["reply_to"].startswith("amq.gen-"), request
    assert "acemq-reply-to" not in request["headers"], request
    assert request["who"] == "python+native-only (requester)", request
    delivered = [m for m in cell["transcript"] if m["event"] == "deliver"]
    assert delivered and delivered[0]["who"] == "probe", cell["transcript"]
    assert all(not k.startswith(("user", "password")) for m in cell["transcript"] for k in m), "no credential is kept"


def test_the_responder_mutants_transcript_has_typed_headers(site: dict[str, Path]) -> None:
    cell = _cells(site["failing"])[NO_STRIP_CELL]
    assert cell["status"] == "FAIL", cell
    sent = next(m for m in cell["transcript"] if m["event"] == "publish" and m["who"] == "probe")
    assert sent["headers"]["x-acemq-trace"] == {"type": "S", "value": "t-1"}, sent
    assert any(m["who"] == "go+no-strip (responder)" for m in cell["transcript"]), cell["transcript"]


def test_the_transcript_shows_a_header_typed_x_instead_of_s(site: dict[str, Path]) -> None:
    cell = _cells(site["failing"])[HEADER_BYTES_CELL]
    assert cell["status"] == "FAIL" and cell["failed_rule"].startswith("RR-2"), cell
    request = next(m for m in cell["transcript"] if m["event"] == "publish" and m["who"].endswith("(requester)"))
    assert request["headers"]["acemq-reply-to"]["type"] == "x", request
    assert request["headers"]["acemq-reply-to"]["value"] == request["properties"]["reply_to"], request


def test_passing_cells_keep_no_transcript_by_default(site: dict[str, Path]) -> None:
    cells = _cells(site["passing"]).values()
    assert cells and all("transcript" not in c for c in cells)


def test_the_failures_come_first_with_their_rule(site: dict[str, Path], seen: dict) -> None:
    assert seen["verdict"].startswith("FAILED"), seen["verdict"]
    assert seen["sectionOrder"][0] == "problems", seen["sectionOrder"]
    assert seen["firstFailureVisibleWithoutScrolling"]
    by_cell = {f["cell"]: f for f in seen["failures"]}
    # Every FAIL of the run is listed: the three probe cells, and the round trips whose
    # requester's messages the broker's transcript shows breaking its clause.
    failed = {cid for cid, c in _cells(site["failing"]).items() if c["status"] == "FAIL"}
    assert {NATIVE_ONLY_CELL, NO_STRIP_CELL, HEADER_BYTES_CELL} <= failed
    assert set(by_cell) == failed, list(by_cell)
    assert "broke RR-1" in by_cell[NATIVE_ONLY_CELL]["text"] and "The reply address is written twice" in by_cell[NATIVE_ONLY_CELL]["text"]
    assert "broke RR-5" in by_cell[NO_STRIP_CELL]["text"]
    assert by_cell[NATIVE_ONLY_CELL]["ruleLink"].endswith("wire-spec.md#rr-1-the-reply-address-is-written-twice")
    assert "rerun:" in by_cell[NATIVE_ONLY_CELL]["text"]
    assert seen["errorGroups"] and "broken-crash" in seen["errorGroups"][0], seen["errorGroups"]


def test_a_pair_opens_its_scenarios_by_name(seen: dict) -> None:
    assert seen["drill"]["hiddenBefore"] and seen["drill"]["visibleAfter"], seen.get("drill")
    assert "rr-pair-round-trip" in seen["drill"]["text"], seen["drill"]
    assert "ERROR" in seen["drill"]["text"] or "FAIL" in seen["drill"]["text"], seen["drill"]
    assert all(set(t) - set("PFEsx!") for t in seen["matrixTexts"] if t), seen["matrixTexts"]
    assert any("/" in t for t in seen["matrixTexts"]), seen["matrixTexts"]


def test_a_failing_cell_shows_the_broker_transcript(seen: dict) -> None:
    assert seen["transcriptPresent"], "the native-only cell has a transcript section"
    assert seen["transcriptRows"] >= 2
    assert "python+native-only (requester)" in seen["lanes"] and "probe" in seen["lanes"], seen["lanes"]
    assert "reply_to=amq.gen-" in seen["transcriptText"] and "acemq-reply-to" not in seen["transcriptText"]
    assert (SHOTS / "transcript.png").stat().st_size > 5000 and (SHOTS / "report-top.png").stat().st_size > 5000


def test_no_evidence_overflows_to_the_right(seen: dict) -> None:
    assert not seen["overflow"]["page"] and not seen["overflow"]["wide"], seen["overflow"]
    assert not seen["pageErrors"], seen["pageErrors"]
    assert "step" in seen.get("lazyText", ""), "a PASS cell's packed steps unpack in the browser"


def test_publish_builds_a_site_linking_both_runs(site: dict[str, Path], seen: dict) -> None:
    assert len(seen["siteRows"]) == 2 and all(link["ok"] for link in seen["siteLinksOpen"]), seen["siteRows"]
    texts = " ".join(r["text"] for r in seen["siteRows"])
    assert "FAIL" in texts and "PASS" in texts and "RabbitMQ" in texts
    badge = json.loads((site["site"] / "badge.json").read_text())
    assert badge["schemaVersion"] == 1 and badge["label"] == "acemq-interop"
    for folder in (site["site"] / "runs").iterdir():
        assert (folder / "report.html").is_file() and (folder / "badge.json").is_file()
