"""Facts about this suite for results files: its version, its commit, the time."""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from .paths import DATA_ROOT


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def version() -> str:
    """The suite's version: the package's own (pyproject.toml reads the same attribute)."""
    from .. import __version__

    return __version__


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The checkout's commit (with '-dirty' when it has changes); None outside a checkout."""
    if not (DATA_ROOT / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(DATA_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(DATA_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def suite() -> dict[str, str | None]:
    return {"name": "acemq-interop", "version": version(), "git_commit": git_commit()}


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(DATA_ROOT))
    except ValueError:
        return str(path)
