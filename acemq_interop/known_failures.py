"""The known-failures list (XFAIL): cells expected to fail, each with a reason and a link.

A listed cell that fails is XFAIL; a listed cell that passes is XPASS and fails the run, so
the list cannot go stale.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import UsageError
from .paths import DATA_ROOT as REPO_ROOT, KNOWN_FAILURES_DIR

DEFAULT_DIR = KNOWN_FAILURES_DIR


@dataclass(frozen=True)
class KnownFailure:
    pattern: str  # a cell id where * matches anything
    reason: str
    link: str
    source: str
    rule: str | None = None  # when given, only a FAIL of this rule is the known failure

    def matches(self, cell_id: str) -> bool:
        regex = ".*".join(re.escape(part) for part in self.pattern.split("*"))
        return re.fullmatch(regex, cell_id) is not None


def load(paths: list[Path]) -> list[KnownFailure]:
    found: list[KnownFailure] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for file in files:
            data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
            entries = data.get("known_failures", []) if isinstance(data, dict) else None
            if not isinstance(entries, list):
                raise UsageError(f"{file}: expected a mapping with a 'known_failures' list")
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or not entry.get("cell") or not entry.get("reason"):
                    raise UsageError(f"{file}: known_failures[{i}] needs 'cell' (a cell id, * for any text) and 'reason'")
                source = str(file.relative_to(REPO_ROOT) if file.is_relative_to(REPO_ROOT) else file)
                rule = entry.get("rule")
                found.append(KnownFailure(str(entry["cell"]), str(entry["reason"]), str(entry.get("link", "")), source, None if rule is None else str(rule)))
    return found


def match_known(cell_id: str, known: list[KnownFailure]) -> KnownFailure | None:
    return next((k for k in known if k.matches(cell_id)), None)
