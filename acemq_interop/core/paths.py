"""Where the suite's data lives: scenarios, catalogue, known failures, in-tree peers.

One module answers this so that the harness works the same installed editable (a
checkout), installed plain (`pip install .`: the data ships under
`{sys.prefix}/share/acemq-interop`), or from a copy named by ACEMQ_INTEROP_HOME.
Peers outside the data root come from --peer-dir and ACEMQ_INTEROP_PEER_PATH.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # acemq_interop/, above core/
HOME_ENV = "ACEMQ_INTEROP_HOME"
PEER_PATH_ENV = "ACEMQ_INTEROP_PEER_PATH"


def _is_data_root(path: Path) -> bool:
    return (path / "scenarios").is_dir() and (path / "catalogue").is_dir()


def _find_data_root() -> Path:
    named = os.environ.get(HOME_ENV)
    if named:
        return Path(named).resolve()
    checkout = _PACKAGE_DIR.parent
    if _is_data_root(checkout):
        return checkout
    installed = Path(sys.prefix) / "share" / "acemq-interop"
    if _is_data_root(installed):
        return installed
    return checkout  # nothing found: errors then name the checkout's paths


DATA_ROOT = _find_data_root()
SCENARIOS_DIR = DATA_ROOT / "scenarios"
CATALOGUE_DIR = DATA_ROOT / "catalogue"
KNOWN_FAILURES_DIR = DATA_ROOT / "known-failures"
PEERS_DIR = DATA_ROOT / "peers"
# Stacks that are not acemq (the tutorial pattern, rabbitmq-client, NestJS), run as peers by
# `run --foreign` and kept out of the conformance tables.
FOREIGN_DIR = DATA_ROOT / "foreign"
DOCS_DIR = DATA_ROOT / "docs"
SCHEMAS_DIR = _PACKAGE_DIR / "schemas"


def peer_path_from_env() -> list[Path]:
    """ACEMQ_INTEROP_PEER_PATH: colon-separated peer folders (or folders of them)."""
    value = os.environ.get(PEER_PATH_ENV, "")
    return [Path(part) for part in value.split(os.pathsep) if part.strip()]
