"""The files users with other setups rely on stay valid: compose file, Dockerfiles, manifests."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from acemq_interop.manifests import REPO_ROOT, discover


def test_docker_compose_file_is_valid() -> None:
    compose = shutil.which("docker-compose")
    assert compose, "docker-compose (Debian's package) validates the file; ci/setup.sh installs it"
    done = subprocess.run([compose, "config", "-q"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_compose_builds_an_image_for_every_peer() -> None:
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    images = {s.get("image") for s in services.values()}
    for manifest in discover().values():
        assert manifest.docker["image"] in images, manifest.name


def test_every_dockerfile_starts_from_an_image_and_says_how_to_run() -> None:
    for manifest in discover().values():
        text = (manifest.folder / manifest.docker.get("dockerfile", "Dockerfile")).read_text()
        assert text.lstrip().startswith(("FROM", "#", "ARG", "# syntax")), manifest.name
        assert "FROM " in text and ("ENTRYPOINT" in text or "CMD" in text), manifest.name
