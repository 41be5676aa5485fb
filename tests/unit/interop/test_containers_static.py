"""The container files and hooks, checked without an engine (issue 10)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from acemq_interop.broker.lifecycle import BrokerSource, broker_sources
from acemq_interop.core.docker_engine import RUN_LABEL, new_run_id
from acemq_interop.core.errors import UsageError
from acemq_interop.peers.manifests import discover
from acemq_interop.results.model import BrokerInfo

ROOT = Path(__file__).resolve().parents[3]
# What a Dockerfile's base ARGs may default to: official images (or Debian's slim one).
OFFICIAL = re.compile(r"^(golang|ruby|eclipse-temurin|maven|node|python|rabbitmq|debian):[\w.-]+$"
                      r"|^mcr\.microsoft\.com/dotnet/(sdk|runtime):[\w.-]+$|^gcr\.io/distroless/[\w.-]+$")


def _dockerfiles() -> dict[str, Path]:
    files = {name: m.folder / m.docker.get("dockerfile", "Dockerfile") for name, m in discover().items()}
    files["runner"] = ROOT / "ci/runner.Dockerfile"
    files["rabbitmq"] = ROOT / "ci/rabbitmq/Dockerfile"
    return files


@pytest.mark.parametrize("name", sorted(_dockerfiles()))
def test_every_base_image_is_a_build_arg_defaulting_to_an_official_image(name: str) -> None:
    text = _dockerfiles()[name].read_text()
    defaults = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    assert froms, name
    stages = set(re.findall(r"^FROM \S+ AS (\S+)", text, re.M))
    for base in froms:
        if base in stages:
            continue
        match = re.fullmatch(r"\$\{(\w+)\}", base)
        assert match, f"{name}: FROM {base} is not a build ARG"
        assert OFFICIAL.match(defaults[match[1]]), f"{name}: {match[1]} defaults to {defaults[match[1]]}"
    assert "ENTRYPOINT" in text


def test_one_dockerfile_per_peer_built_from_the_repository_root() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name, manifest in discover().items():
        assert len(list(manifest.folder.glob("*Dockerfile*"))) == 1, name
        service = compose[f"peer-{name}"]
        assert service["image"] == manifest.docker["image"]
        assert service["build"]["context"] == "."
        assert service["build"]["dockerfile"] == f"peers/{manifest.folder.name}/Dockerfile"


def test_compose_hides_nothing_and_builds_the_brokers_and_the_runner() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    assert "profiles" not in text
    services = yaml.safe_load(text)["services"]
    images = {s.get("image") for s in services.values()}
    assert {"acemq-interop/rabbitmq:3.10", "acemq-interop/rabbitmq:4.0", "acemq-interop/runner"} <= images
    assert all(s.get("network_mode") == "host" for s in services.values() if "network_mode" in s)
    assert "--in-docker" in services["runner"]["command"]


def test_the_dockerignore_keeps_local_state_out_of_every_context() -> None:
    lines = set((ROOT / ".dockerignore").read_text().split())
    for entry in (".git", ".venv", "out", "**/node_modules", "peers/dotnet/**/bin", "peers/dotnet/**/obj", "peers/java/build"):
        assert entry in lines, entry
    assert "peers/ruby/bin" not in lines  # the Ruby peer's bin/peer is source


def test_a_peer_container_is_labelled_with_the_run_and_never_pulled() -> None:
    manifest = discover()["go"]
    run_id = new_run_id()
    argv = manifest.docker_run(run_id)
    assert argv[:4] == ["docker", "run", "-i", "--rm"]
    assert "--pull" in argv and argv[argv.index("--pull") + 1] == "never"
    assert f"{RUN_LABEL}={run_id}" in argv
    assert argv[-1] == "acemq-interop/peer-go"


def test_broker_sources_make_the_axis() -> None:
    assert [s.kind for s in broker_sources(None, None, None)] == ["node"]
    assert [s.image for s in broker_sources(None, None, ["a:1", "b:2"])] == ["a:1", "b:2"]
    url = broker_sources("amqp://guest:guest@127.0.0.1:5672/", None, None)[0]
    assert url.kind == "url" and url.rerun_args() == " --broker amqp://guest:guest@127.0.0.1:5672/"
    assert BrokerSource("image", image="x:1").rerun_args() == " --broker-image x:1"
    with pytest.raises(UsageError):
        broker_sources("amqp://h/", None, ["a:1"])
    with pytest.raises(UsageError):
        broker_sources(None, None, ["a:1", "a:1"])


def test_a_cluster_of_containers_per_image_makes_the_axis() -> None:
    sources = broker_sources(None, None, ["a:1", "b:2"], cluster=3)
    assert [(s.kind, s.nodes, s.image) for s in sources] == [("cluster", 3, "a:1"), ("cluster", 3, "b:2")]
    assert sources[0].rerun_args() == " --cluster 3 --broker-image a:1"
    assert sources[0].describe() == "cluster of 3 containers of image a:1"
    assert broker_sources(None, None, None, cluster=3)[0].image is None
    with pytest.raises(UsageError):
        broker_sources(None, None, ["a:1", "a:1"], cluster=3)


def test_a_cluster_node_container_gets_its_seed_epmd_and_cookie_never_in_its_argv() -> None:
    from acemq_interop.broker.container import ContainerBroker, Membership

    cookie = "c0ffee" * 6
    first = ContainerBroker("img:1", lambda _: None, "run-1", 0, member=Membership("A", 4411, cookie, None))
    second = ContainerBroker("img:1", lambda _: None, "run-1", 0, member=Membership("B", 4411, cookie, first.node))
    assert (first.name, second.name) == ("acemq-interop-run-1-broker-0-a", "acemq-interop-run-1-broker-0-b")
    assert first.node != second.node and first.epmd_port == second.epmd_port == 4411
    argv = second._argv()
    assert f"ACEMQ_CLUSTER_SEED={first.node}" in argv and "ERL_EPMD_PORT=4411" in argv
    assert "ACEMQ_ERLANG_COOKIE" in argv and not any(cookie in a for a in argv)  # the value from the environment only
    assert second._docker_env()["ACEMQ_ERLANG_COOKIE"] == cookie
    assert not any("ACEMQ_CLUSTER_SEED" in a for a in first._argv())
    alone = ContainerBroker("img:1", lambda _: None, "run-1", 0)
    assert alone._docker_env() is None and "ACEMQ_ERLANG_COOKIE" not in alone._argv()


def test_one_broker_description_from_what_the_management_api_says() -> None:
    info = BrokerInfo.from_overview({"product_name": "RabbitMQ", "product_version": "4.0.5", "erlang_version": "27.2"})
    assert (info.label, info.product, info.version, info.erlang) == ("rabbitmq-4.0.5", "RabbitMQ", "4.0.5", "27.2")
    assert BrokerInfo.from_overview({"rabbitmq_version": "3.10.8"}).label == "rabbitmq-3.10.8", "older brokers name no product"
    assert BrokerInfo.from_overview({}).label == "rabbitmq-unknown"
    assert BrokerInfo.from_overview({"rabbitmq_version": "3.10.8"}, tls=True).shown == "rabbitmq-3.10.8 over TLS"


def test_ci_scripts_start_and_stop_only_their_engine() -> None:
    engine = (ROOT / "ci/docker-engine.sh").read_text()
    assert "--no-upgrade" in (ROOT / "ci/apt.sh").read_text() and "apt_install docker.io" in engine
    assert "/var/lib/acemq-interop/docker" in engine
    run_tests = (ROOT / "ci/run-tests.sh").read_text()
    assert "ci/docker-engine.sh start" in run_tests and "ACEMQ_DOCKER_STARTED" in run_tests


def test_the_broker_axis_tags_every_cell_and_lists_every_broker(tmp_path) -> None:
    from junitparser import JUnitXml

    from acemq_interop.run import cells as cellmod
    from acemq_interop.spec import scenarios
    from acemq_interop.commands.run import write_outputs
    from acemq_interop.peers.manifests import PeerSpec
    from acemq_interop.results.model import BrokerInfo, PeerStatus, RunResult, combine_runs

    specs = [PeerSpec.parse("python")]
    planned = cellmod.plan(scenarios.select(scenarios.load_all(), ["rr-pair-*"]), specs)
    assert planned

    def report(label: str, version: str) -> RunResult:
        results = [cellmod.result_of(c, cellmod.PASS, label, rerun="acemq-interop run --peers python --cell 'x'", duration_s=0.1)
                   for c in planned]
        return RunResult(results, {"python": PeerStatus("python", "Python")}, ["python"],
                         [BrokerInfo(label, "RabbitMQ", version, "27")], 1.5, "now")

    combined = combine_runs([report("rabbitmq-3.10.8", "3.10.8"), report("rabbitmq-4.0.5", "4.0.5")])
    write_outputs(combined, tmp_path / "out")
    data = json.loads((tmp_path / "out/results.json").read_text())
    assert [b["label"] for b in data["brokers"]] == ["rabbitmq-3.10.8", "rabbitmq-4.0.5"]
    assert [b["version"] for b in data["brokers"]] == ["3.10.8", "4.0.5"]
    assert len(data["cells"]) == 2 * len(planned)
    assert len({c["id"] for c in data["cells"]}) == 2 * len(planned)  # ids stay unique across brokers
    assert {c["broker"] for c in data["cells"]} == {"rabbitmq-3.10.8", "rabbitmq-4.0.5"}
    assert data["summary"]["PASS"] == 2 * len(planned) and data["duration_s"] == 3.0
    assert len(combined.summary.pair_matrices) == 2  # one matrix per broker
    xml = JUnitXml.fromfile(str(tmp_path / "out/junit.xml"))
    assert sum(s.tests for s in xml) == 2 * len(planned)


def test_compose_gives_every_base_arg_of_each_dockerfile() -> None:
    """Each peer service passes every base ARG its Dockerfile has, so the local bases reach
    every stage (a missed one means a pull)."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name, manifest in discover().items():
        text = (manifest.folder / "Dockerfile").read_text()
        base_args = {m for m in re.findall(r"^FROM \$\{(\w+)\}", text, re.M)}
        assert base_args <= set(services[f"peer-{name}"]["build"].get("args", {})), name
