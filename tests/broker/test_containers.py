"""Containers end to end (issue 10), on a real Docker engine:

1. ci/docker-engine.sh starts an engine (unless one answers), ci/images.sh makes the local
   bases, docker-compose builds every service's image on them (item 3), then ci/images.sh
   builds every image (local bases by debootstrap, the .NET bases from the installed SDK, every peer
   image (its unit tests inside unless ACEMQ_IMAGE_TESTS=0, as CI runs them once outside),
   the runner, both brokers), and the full matrix runs with
   every peer from its image on RabbitMQ 3.10 and 4.0: every cell PASS on both, both
   brokers' versions in results.json, and afterwards no container of the run, no broker
   and no engine the test started.
2. `--broker-image` on an image shaped like the official ones (fixed listeners), plain and
   over TLS.
3. docker-compose (Debian's v1) builds every image and runs a selection in the runner
   container against the broker service.
4. `--cluster 3` on both broker images: a cluster of three containers per broker, a node
   killed and started again, a queue's leadership moved; nothing left.

They take minutes (the images are cached in the engine's stable data root between runs
on one machine); ACEMQ_SKIP_CONTAINERS=1 skips them.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acemq_interop.broker.control import NOT_HERE
from acemq_interop.core.docker_engine import RUN_LABEL
from acemq_interop.peers.manifests import REPO_ROOT, discover

pytestmark = [
    pytest.mark.broker,
    pytest.mark.skipif(os.environ.get("ACEMQ_SKIP_CONTAINERS") == "1", reason="ACEMQ_SKIP_CONTAINERS=1"),
]

ROOT = Path(__file__).resolve().parents[2]
ALL_PEERS = sorted(discover())
BROKER_IMAGES = ["acemq-interop/rabbitmq:3.10", "acemq-interop/rabbitmq:4.0"]
COMPOSE_PROJECT = {"COMPOSE_PROJECT_NAME": "acemq-interop-test"}
COMPOSE_BUILD: dict[str, subprocess.CompletedProcess] = {}  # `docker-compose build`, made by the engine fixture
LOCAL_BASES = {
    "ACEMQ_BASE_IMAGE": "acemq-interop/base:bookworm",
    "ACEMQ_TRIXIE_IMAGE": "acemq-interop/base:trixie",
    "ACEMQ_DOTNET_SDK_IMAGE": "acemq-interop/dotnet-sdk:10.0",
    "ACEMQ_DOTNET_RUNTIME_IMAGE": "acemq-interop/dotnet-runtime:10.0",
}


def _log(message: str) -> None:
    print(f"[containers] {message}", file=sys.stderr, flush=True)


def _sh(argv: list[str], env: dict[str, str], bound_s: float, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=bound_s, stdin=subprocess.DEVNULL)
    _log(f"{' '.join(argv[:4])}... exited {done.returncode} in {time.monotonic() - started:.0f}s")
    return done


def _tail(done: subprocess.CompletedProcess, lines: int = 60) -> str:
    return "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-lines:])


def _not_passed(out: Path) -> str:
    """The cells of the run in `out` that did not pass, a line each with their message: what
    an exit code of 1 means (the console's tail is its last cells, mostly PASS lines)."""
    path = out / "results.json"
    if not path.exists():
        return "(no results.json)"
    cells = json.loads(path.read_text())["cells"]
    return "\n".join(f"{c['broker']} {c['status']} {c['id']} {(c['message'] or '')[:400]}"
                     for c in cells if c["status"] != "PASS")


def _labelled(env: dict[str, str], label: str = RUN_LABEL) -> list[str]:
    done = subprocess.run(["docker", "ps", "-a", "--filter", f"label={label}", "--format", "{{.Names}}"],
                          env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def engine():
    """The engine: started by ci/docker-engine.sh unless one answers; stopped after only if
    this fixture started it, and then checked gone."""
    env = dict(os.environ)
    done = _sh(["sh", "ci/docker-engine.sh", "start"], env, 300)
    assert done.returncode == 0, _tail(done)
    assignments = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    env["DOCKER_HOST"] = assignments["DOCKER_HOST"]
    started = assignments.get("ACEMQ_DOCKER_STARTED") == "1"
    _log(f"engine at {env['DOCKER_HOST']} ({'started here' if started else 'already running'})")
    # Compose's builds first, on the local bases, then ci/images.sh: the classic builder
    # reuses for the CLI's builds the layers compose's builds made, not the other way round,
    # so this order builds a changed image once instead of twice (about 170 s on a CI run
    # whose commit touched every peer image).
    bases = _sh(["sh", "ci/images.sh", "bases"], env, 3600)
    assert bases.returncode == 0, _tail(bases, 120)
    COMPOSE_BUILD["done"] = _sh(["docker-compose", "build", "--force-rm"], {**env, **LOCAL_BASES, **COMPOSE_PROJECT}, 3600)
    images = _sh(["sh", "ci/images.sh"], env, 3600)
    assert images.returncode == 0, _tail(images, 120)
    _log("\n" + "\n".join(line for line in images.stdout.splitlines() if line.startswith("images:") or "\t" in line))
    yield env
    if started:
        stop = _sh(["sh", "ci/docker-engine.sh", "stop"], env, 120)
        assert stop.returncode == 0, _tail(stop)
        status = _sh(["sh", "ci/docker-engine.sh", "status"], {**env, "DOCKER_HOST": env["DOCKER_HOST"]}, 60)
        assert "ours:" not in status.stdout, status.stdout


def test_full_matrix_in_docker_on_two_brokers(engine, tmp_path) -> None:
    env = engine
    for image in [*(f"acemq-interop/peer-{name}" for name in ALL_PEERS), *BROKER_IMAGES, "acemq-interop/runner"]:
        assert subprocess.run(["docker", "image", "inspect", image], env=env, capture_output=True, timeout=30).returncode == 0, image
    before = set(_labelled(env))
    argv = [sys.executable, "-m", "acemq_interop", "run", "--in-docker", "--out", str(tmp_path)]
    for image in BROKER_IMAGES:
        argv += ["--broker-image", image]
    started = time.monotonic()
    done = _sh(argv, env, 3000)
    took = time.monotonic() - started
    _log(f"full matrix --in-docker on {len(BROKER_IMAGES)} brokers: {took:.0f}s")
    print("\n".join(done.stdout.splitlines()[-60:]))
    results = json.loads((tmp_path / "results.json").read_text())
    assert done.returncode == 0, _not_passed(tmp_path) + "\n" + _tail(done, 80)
    assert {c["status"] for c in results["cells"]} == {"PASS"}, _not_passed(tmp_path)  # no SKIP, no XFAIL either

    versions = {b["label"]: b for b in results["brokers"]}
    assert len(versions) == 2, versions
    assert any(label.startswith("rabbitmq-3.10.") for label in versions), versions
    assert any(label.startswith("rabbitmq-4.0.") for label in versions), versions
    for facts in versions.values():
        assert facts["erlang"] and facts["product"] == "RabbitMQ" and facts["version"], facts
        # RR-14.5's reason, measured on each broker of the axis: 3.10 and 4.0 deliver a mandatory
        # reply to a direct reply-to address and return it too (4.2 would say "not returned").
        assert facts["direct_reply_to"] == "returned", facts
    by_broker: dict[str, list[dict]] = {}
    for cell in results["cells"]:
        by_broker.setdefault(cell["broker"], []).append(cell)
    assert set(by_broker) == set(versions)
    counts = {label: len(cells) for label, cells in by_broker.items()}
    assert len(set(counts.values())) == 1, counts  # the same cells on each broker

    for name in ALL_PEERS:
        assert results["peers"][name]["unavailable"] is None, results["peers"][name]

    assert set(_labelled(env)) <= before, "the run left containers"
    assert not set(_labelled(env, "org.acemq-interop.role=broker")) - before, "the run left a broker"


def test_a_peer_from_an_image_beside_the_same_peer_run_locally(engine, tmp_path) -> None:
    """`--peers go,go-img=IMAGE`: a released or candidate image gets its own row and column."""
    env = engine
    before = set(_labelled(env))
    argv = [sys.executable, "-m", "acemq_interop", "run", "--peers", "go,go-img=acemq-interop/peer-go",
            "--scenarios", "rr-pair-*,rr-requester-*", "--out", str(tmp_path)]
    done = _sh(argv, env, 900)
    assert done.returncode == 0, _not_passed(tmp_path) + "\n" + _tail(done, 80)
    results = json.loads((tmp_path / "results.json").read_text())
    image = results["peers"]["go-img"]["image"]
    assert image.startswith("acemq-interop/peer-go@sha256:"), image  # the report names the image and its digest
    assert results["peers"]["go"]["image"] is None
    pairs = {(c["roles"].get("requester"), c["roles"].get("responder")): c["status"]
             for c in results["cells"] if c["matrix"] == "pairs"}
    assert {("go", "go-img"), ("go-img", "go"), ("go-img", "go-img")} <= set(pairs)
    assert set(pairs.values()) == {"PASS"} and {c["status"] for c in results["cells"]} == {"PASS"}
    assert set(_labelled(env)) <= before, "the run left containers"


def test_tls_with_peers_and_broker_in_containers(engine, tmp_path) -> None:
    """`--tls --in-docker --broker-image`: the broker container takes the run's server
    certificate (mounted), the peer containers the CA folder (mounted at the same path)."""
    env = engine
    before = set(_labelled(env))
    argv = [sys.executable, "-m", "acemq_interop", "run", "--tls", "--in-docker", "--broker-image", BROKER_IMAGES[-1],
            "--peers", "python,node", "--scenarios", "rr-pair-*,rr-responder-*,sg-*", "--out", str(tmp_path)]
    done = _sh(argv, env, 900)
    assert done.returncode == 0, _not_passed(tmp_path) + "\n" + _tail(done, 80)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["tls"] is True, results["brokers"]
    assert {c["status"] for c in results["cells"]} == {"PASS"}, [c["id"] for c in results["cells"] if c["status"] != "PASS"]
    assert all(results["peers"][name]["unavailable"] is None for name in ("python", "node")), results["peers"]
    assert set(_labelled(env)) <= before, "the run left containers"
    left = re.search(r"TLS: .* in (\S+) \(removed at the end\)", done.stderr)
    assert left and not Path(left.group(1)).exists(), "the run's certificates were left"


def test_a_cluster_of_containers_on_both_brokers(engine, tmp_path) -> None:
    """`--cluster 3 --broker-image A --broker-image B`: three containers per broker sharing an
    epmd container; on each, a node killed under a request and started again (the responder
    back, the request answered once) and a quorum queue's leadership moved mid-stream."""
    env = engine
    before = set(_labelled(env))
    argv = [sys.executable, "-m", "acemq_interop", "run", "--cluster", "3", "--peers", "python",
            "--scenarios", "cl-responder-node-dies,cl-queue-leader-moves", "--out", str(tmp_path)]
    for image in BROKER_IMAGES:
        argv += ["--broker-image", image]
    done = _sh(argv, env, 1200)
    assert done.returncode == 0, _not_passed(tmp_path) + "\n" + _tail(done, 80)
    output = done.stdout + done.stderr
    assert output.count("the cluster's epmd listens") == 2 and output.count("cluster of 3 nodes ready") == 2, output[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    labels = sorted(b["label"] for b in results["brokers"])
    assert len(labels) == 2 and labels[0].startswith("rabbitmq-3.10.") and labels[1].startswith("rabbitmq-4.0."), labels
    cells = results["cells"]
    assert len(cells) == 4 and {c["status"] for c in cells} == {"PASS"}, _not_passed(tmp_path)
    for cell in cells:
        steps = [t["step"] for t in cell["trace"]]
        assert ("node_kill" in steps and "node_start" in steps) or "leader_move" in steps, steps
    assert set(_labelled(env)) <= before, "the run left containers"


# An image not built from ci/rabbitmq/Dockerfile, shaped like the official ones (fixed
# listeners, the image's own node name, no acemq-interop label): tests/fixtures/official-like-rabbitmq.
OFFICIAL_LIKE = "acemq-interop-test/official-like-rabbitmq"
OFFICIAL_SCENARIOS = "rr-pair-round-trip,rr-responder-answered-before-confirm,rr-responder-header-only,sg-pair-multi-full-count"


def test_an_official_shaped_broker_image_is_run_as_it_is(engine, tmp_path) -> None:
    """`--broker-image` on an image whose listeners cannot be chosen: on this engine (no bridge)
    it listens on the host's 5672/15672, and a run on it passes, holding a queue through the
    image's own node (rabbitmqctl) and over TLS; with those ports taken, the run refuses it
    before anything starts and says what to do."""
    env = engine
    build = _sh(["docker", "build", "--network", "host", "-t", OFFICIAL_LIKE,
                 "--build-arg", f"BASE_IMAGE={LOCAL_BASES['ACEMQ_TRIXIE_IMAGE']}",
                 str(ROOT / "tests/fixtures/official-like-rabbitmq")], env, 900)
    assert build.returncode == 0, _tail(build, 40)
    before = set(_labelled(env))
    from acemq_interop.broker.endpoint import port_in_use

    if any(port_in_use(port) for port in (5672, 15672, 25672)):  # a broker of the host's own: the refusal
        done = _sh([sys.executable, "-m", "acemq_interop", "run", "--broker-image", OFFICIAL_LIKE, "--peers", "python",
                    "--scenarios", "rr-pair-round-trip", "--out", str(tmp_path)], env, 300)
        assert done.returncode == 3, _tail(done)
        assert "its listeners are fixed" in done.stderr and "ci/rabbitmq" in done.stderr, _tail(done)
        return
    for tls in ([], ["--tls"]):
        out = tmp_path / ("tls" if tls else "plain")
        done = _sh([sys.executable, "-m", "acemq_interop", "run", *tls, "--broker-image", OFFICIAL_LIKE,
                    "--peers", "python,go", "--scenarios", OFFICIAL_SCENARIOS, "--out", str(out)], env, 900)
        assert done.returncode == 0, _not_passed(out) + "\n" + _tail(done, 60)
        results = json.loads((out / "results.json").read_text())
        assert results["tls"] is bool(tls)
        assert [b["label"] for b in results["brokers"]] == ["rabbitmq-4.0.5"], results["brokers"]
        statuses = {c["id"]: c["status"] for c in results["cells"]}
        assert any("answered-before-confirm" in cell for cell in statuses), statuses  # it holds a queue
        assert set(statuses.values()) == {"PASS"}, statuses
        assert set(_labelled(env)) <= before, "the run left its broker container"
        assert not port_in_use(5672), "the broker's listener outlived the run"


# Compose is checked to build every image and to run the harness from its runner against its
# broker service, peers as sibling containers; the full matrix in containers is the
# --in-docker test's above, so here a selection touching every kind of cell is enough.
COMPOSE_SCENARIOS = "rr-pair-round-trip,rr-responder-header-only,rr-requester-writes-both-addresses,sg-pair-multi-full-count"


def test_compose_builds_everything_and_runs_a_selection(engine) -> None:
    env = {**engine, **LOCAL_BASES, **COMPOSE_PROJECT, "ACEMQ_SCENARIOS": COMPOSE_SCENARIOS,
           "ACEMQ_AMQP_PORT": str(_free_port()), "ACEMQ_MGMT_PORT": str(_free_port()),
           "ACEMQ_DOCKER_SOCKET": engine["DOCKER_HOST"].removeprefix("unix://")}
    build = COMPOSE_BUILD["done"]  # every service's image, built by compose before ci/images.sh ran
    assert build.returncode == 0, _tail(build, 80)
    services = _sh(["docker-compose", "config", "--services"], env, 60).stdout.split()
    assert {"broker", "broker-4", "runner", *(f"peer-{name}" for name in ALL_PEERS)} <= set(services), services
    built = set(re.findall(r"^Successfully tagged (\S+?)(?::latest)?$", build.stdout + build.stderr, re.M))
    images = {"acemq-interop/rabbitmq:3.10", "acemq-interop/rabbitmq:4.0", "acemq-interop/runner",
              *(f"acemq-interop/peer-{name}" for name in ALL_PEERS)}
    assert images <= built, f"compose did not build {sorted(images - built)}"
    out = ROOT / "out"
    results_file = out / "results.json"
    if results_file.exists():
        results_file.unlink()
    try:
        started = time.monotonic()
        done = _sh(["docker-compose", "run", "--rm", "runner"], env, 2400)
        _log(f"docker-compose run --rm runner: {time.monotonic() - started:.0f}s")
        print("\n".join(done.stdout.splitlines()[-40:]))
        assert done.returncode == 0, _not_passed(out) + "\n" + _tail(done, 80)
    finally:
        down = _sh(["docker-compose", "down", "--remove-orphans"], env, 300)
        assert down.returncode == 0, _tail(down)
    results = json.loads(results_file.read_text())
    # The runner is given the broker service by URL: the one scenario that holds a queue on the
    # broker (it needs the node's CLI) is a SKIP saying so, every other cell a PASS.
    skipped = [c for c in results["cells"] if c["status"] == "SKIP"]
    assert all(c["reason"] == NOT_HERE for c in skipped), skipped
    assert results["summary"]["PASS"] + len(skipped) == len(results["cells"]) > 0, results["summary"]
    assert {name for name, p in results["peers"].items() if p["unavailable"] is None} == set(ALL_PEERS)
    assert results["brokers"][0]["label"].startswith("rabbitmq-3.10."), results["brokers"]
    assert not _labelled(env), "containers of the compose run were left"
    left = subprocess.run(["docker", "ps", "-a", "--filter", "label=com.docker.compose.project=acemq-interop-test", "-q"],
                          env=env, capture_output=True, text=True, timeout=30).stdout.split()
    assert not left, left
