"""The known-failures list (XFAIL): cells expected to fail, each with a reason and a link.

A listed cell that fails is XFAIL; a listed cell that passes is XPASS and fails the run, so
the list cannot go stale.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import strict_yaml
from .strict_yaml import line_at, refuse, shown
from ..core.paths import DATA_ROOT as REPO_ROOT, KNOWN_FAILURES_DIR

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
    """Every entry of the given files (a folder: its `*.yaml` and `*.yml`), read as strictly as scenarios."""
    found: list[KnownFailure] = []
    for path in paths:
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()) if path.is_dir() else [path]
        for file in files:
            data, root = strict_yaml.read(file)
            entries = {} if data is None else data.get("known_failures", []) if isinstance(data, dict) else None
            if not isinstance(entries, list):
                raise refuse(file, line_at(root, ["known_failures"]), "expected a mapping with a 'known_failures' list")
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or not isinstance(entry.get("cell"), str) or not entry["cell"] \
                        or not isinstance(entry.get("reason"), str) or not entry["reason"]:
                    raise refuse(file, line_at(root, ["known_failures", i]),
                                 f"known_failures[{i}] needs 'cell' (a cell id, * for any text) and 'reason', both text")
                unknown = sorted(set(entry) - {"cell", "reason", "link", "rule"})
                if unknown:
                    raise refuse(file, line_at(root, ["known_failures", i, unknown[0]]),
                                 f"known_failures[{i}]: unknown key {shown(unknown[0])} (keys: cell, reason, link, rule)")
                source = str(file.relative_to(REPO_ROOT) if file.is_relative_to(REPO_ROOT) else file)
                rule = entry.get("rule")
                found.append(KnownFailure(entry["cell"], entry["reason"], str(entry.get("link", "")), source, None if rule is None else str(rule)))
    return found


def match_known(cell_id: str, known: list[KnownFailure]) -> KnownFailure | None:
    return next((k for k in known if k.matches(cell_id)), None)
