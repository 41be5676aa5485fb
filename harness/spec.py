"""Facts read from docs/wire-spec.md, the one source of truth: rule ids and the mutant catalogue."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .manifests import REPO_ROOT

WIRE_SPEC = REPO_ROOT / "docs" / "wire-spec.md"

_RULE_RE = re.compile(r"^### ((?:RR|SG|WF)-\d+) (.+)$", re.MULTILINE)
_MUTANT_RE = re.compile(r"^\| `([a-z0-9-]+)` \| (requester|responder|gatherer) \| ((?:RR|SG|WF)-\d+) \| (.+) \|$", re.MULTILINE)


@dataclass(frozen=True)
class Mutant:
    name: str
    side: str  # requester | responder | gatherer
    rule: str
    description: str

    @property
    def acts_on(self) -> str:
        """The peer command that carries it: gatherer mutants live on a requester."""
        return "responder.start" if self.side == "responder" else "requester.open"


@lru_cache(maxsize=1)
def rules(path: Path = WIRE_SPEC) -> dict[str, str]:
    """Rule id -> title, from the spec's `### RR-1 Title` headings (markdown marks dropped)."""
    found = _RULE_RE.findall(path.read_text(encoding="utf-8"))
    return {rule: title.replace("*(client fact)*", "").replace("`", "").strip() for rule, title in found}


@lru_cache(maxsize=1)
def mutants(path: Path = WIRE_SPEC) -> dict[str, Mutant]:
    """The mutant catalogue table of the spec."""
    return {m[0]: Mutant(*m) for m in _MUTANT_RE.findall(path.read_text(encoding="utf-8"))}
