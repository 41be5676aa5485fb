"""The files users with other setups rely on stay valid: compose file, Dockerfiles, manifests."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from acemq_interop.peers.manifests import REPO_ROOT, discover


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


def test_a_plain_install_lists_the_scenarios_from_another_directory(tmp_path: Path) -> None:
    """`pip install .` (not editable) into a fresh venv: the data ships under share/acemq-interop."""
    python3 = "/usr/bin/python3"
    assert Path(python3).exists(), "the system python3 (Debian's) makes the venv"
    venv = tmp_path / "venv"
    subprocess.run([python3, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    # A copy of the tree, so the build leaves no build/ or *.egg-info in the checkout.
    source = tmp_path / "src"
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "out", "__pycache__", "*.egg-info",
                                                                    "build", "bin", "obj", "node_modules", "target"))
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ACEMQ_INTEROP_HOME", "PYTHONPATH")}
    listed = subprocess.run([str(venv / "bin" / "acemq-interop"), "list"], cwd=elsewhere, capture_output=True, text=True,
                            timeout=120, env=env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    ids = sorted(p.stem for p in (REPO_ROOT / "scenarios").rglob("*.yaml"))
    for scenario_id in ids:
        assert scenario_id in listed.stdout, f"{scenario_id} missing from the installed tool's list:\n{listed.stdout}"
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import acemq_interop.core.paths as p; print(p.DATA_ROOT)"],
                           cwd=elsewhere, capture_output=True, text=True, timeout=60, env=env)
    assert where.stdout.strip() == str(venv / "share" / "acemq-interop"), where.stdout + where.stderr
    # Every module of every package is installed and imports, the report's template with them.
    code = ("import importlib, pkgutil, acemq_interop; from acemq_interop.reports.html import TEMPLATES_DIR; "
            "[importlib.import_module(m.name) for m in pkgutil.walk_packages(acemq_interop.__path__, 'acemq_interop.') "
            "if not m.name.endswith('__main__')]; print((TEMPLATES_DIR / 'report.html.j2').is_file())")
    imported = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=elsewhere, capture_output=True, text=True,
                              timeout=120, env=env)
    assert imported.stdout.strip() == "True", imported.stdout + imported.stderr
