"""The Docker engine, through the `docker` CLI: images, containers, and the run label.

The CLI rather than the Python SDK: a peer from an image must be a process with pipes
(`docker run -i`), which is exactly what the CLI is; the same commands are the ones a user
types to reproduce a cell; and the harness gains no dependency (the CLI talks to Docker
Engine, Docker Desktop or podman's socket alike, and honours DOCKER_HOST and contexts).

Every container the harness starts carries `org.acemq-interop.run=<run id>`, so the run
removes what it started (`remove_run`), and `acemq-interop doctor [--clean]` finds (and
removes) what killed runs left, by that label only.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass

RUN_LABEL = "org.acemq-interop.run"
ROLE_LABEL = "org.acemq-interop.role"
CALL_BOUND_S = 30.0


def new_run_id() -> str:
    """A run id that sorts by time and names the run's containers: 20261201-094512-3fa2c1."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def cli() -> str | None:
    return shutil.which("docker")


def _docker(*args: str, bound_s: float = CALL_BOUND_S) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=bound_s, stdin=subprocess.DEVNULL)


def engine_problem() -> str | None:
    """None when a Docker engine answers; else what is missing, as one sentence."""
    if cli() is None:
        return "no docker CLI on PATH (install Docker, or Debian's docker.io)"
    try:
        done = _docker("version", "--format", "{{.Server.Version}}", bound_s=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the Docker engine did not answer ({exc})"
    if done.returncode != 0:
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        return f"no Docker engine answers at {where} (start one, e.g. eval \"$(sh ci/docker-engine.sh start)\"; export DOCKER_HOST)"
    return None


def image_exists(image: str) -> bool:
    try:
        return _docker("image", "inspect", "--format", "{{.Id}}", image, bound_s=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def image_labels(image: str) -> dict[str, str]:
    try:
        done = _docker("image", "inspect", "--format", "{{json .Config.Labels}}", image, bound_s=20)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    import json

    try:
        return json.loads(done.stdout.strip() or "null") or {}
    except ValueError:
        return {}


def run_labels(run_id: str, role: str) -> list[str]:
    """`docker run` arguments that tag a container with the run (and the harness's host/pid)."""
    return ["--label", f"{RUN_LABEL}={run_id}", "--label", f"{ROLE_LABEL}={role}",
            "--label", f"org.acemq-interop.started-by={socket.gethostname()}:{os.getpid()}"]


@dataclass
class Leftover:
    id: str
    name: str
    image: str
    status: str
    run: str
    role: str


def containers(run_id: str | None = None) -> list[Leftover]:
    """Containers (running or not) with the run label: of one run, or of any run."""
    label = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    fmt = "{{.ID}}\t{{.Names}}\t{{.Image}}\t{{.Status}}\t{{.Label \"" + RUN_LABEL + "\"}}\t{{.Label \"" + ROLE_LABEL + "\"}}"
    try:
        done = _docker("ps", "-a", "--filter", f"label={label}", "--format", fmt)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    found = []
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 6:
            found.append(Leftover(*parts))
    return found


def remove(container_ids: list[str]) -> list[str]:
    """Force-remove containers; returns the ids that could not be removed."""
    if not container_ids:
        return []
    try:
        _docker("rm", "-f", "-v", *container_ids, bound_s=60)
    except (OSError, subprocess.TimeoutExpired):
        pass
    remaining = {c.id for c in containers()}
    return [c for c in container_ids if c in remaining]


def remove_run(run_id: str) -> list[str]:
    """Remove every container of this run (peers whose CLI was killed, a broker); what is left."""
    if cli() is None:
        return []
    return remove([c.id for c in containers(run_id)])


def logs_tail(container: str, lines: int = 20) -> str:
    try:
        done = _docker("logs", "--tail", str(lines), container, bound_s=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no logs: {exc})"
    return (done.stdout + done.stderr).strip() or "(no output)"


def has_bridge() -> bool:
    """Whether the engine has its default bridge network (published ports); an engine started
    with no bridge (this project's CI) runs containers on the host's network only."""
    try:
        return _docker("network", "inspect", "bridge", bound_s=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def published_port(container: str, port: int) -> int | None:
    """The host port a container's `port` is published on (`docker port`), or None."""
    try:
        done = _docker("port", container, f"{port}/tcp", bound_s=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        host_port = line.strip().rsplit(":", 1)[-1]
        if host_port.isdigit():
            return int(host_port)
    return None


def is_running(container: str) -> bool:
    try:
        done = _docker("inspect", "--format", "{{.State.Running}}", container, bound_s=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def peer_image_problem(manifest) -> str | None:
    """Why this peer cannot run from its image here (its cells SKIP), or None.

    Checked before `docker run`: a missing image is never pulled (nor waited on).
    """
    image = manifest.docker.get("image")
    if not image:
        return f"no docker.image in peers/{manifest.folder.name}/peer.yaml, so it cannot run --in-docker"
    problem = _engine_problem_cached()
    if problem:
        return problem
    if not image_exists(str(image)) and getattr(manifest, "image", None):
        return f"image {image} is not on this engine: `docker pull {image}` (or build it) first; the harness never pulls"
    if not image_exists(str(image)):
        return (f"image {image} is not built: build it with `docker compose build peer-{manifest.name}` "
                f"(or `sh ci/images.sh {manifest.name}` where no registry is reached)")
    return None


_ENGINE_PROBLEM: list[str | None] = []


def _engine_problem_cached() -> str | None:
    """An engine that answered once is not asked again in this process; one that did not is."""
    if _ENGINE_PROBLEM:
        return None
    problem = engine_problem()
    if problem is None:
        _ENGINE_PROBLEM.append(None)
    return problem
