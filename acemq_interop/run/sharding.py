"""`--shard K/N`: a deterministic slice of a run's cells, for a CI system's own job matrix.

Every shard plans the same cells (the same selection gives the same plan), then keeps its
slice: cells are dealt longest first to the least-loaded shard (LPT scheduling), durations
taken from an earlier results.json when one is given (`--durations FILE`) and otherwise from
the scenario's own estimate. Ties break on the cell id and the shard number, so every job
of a matrix computes the same partition without talking to the others.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from ..core.errors import UsageError

T = TypeVar("T")
_SHARD_RE = re.compile(r"^(\d+)/(\d+)$")


MAX_SHARDS = 1000


def bounded_text(text: str, limit: int = 40) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    total: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        match = _SHARD_RE.match(text.strip())
        if not match:
            raise UsageError(f"--shard {text!r}: write K/N with 1 <= K <= N, e.g. --shard 2/3")
        if len(match[1]) > 6 or len(match[2]) > 6 or int(match[2]) > MAX_SHARDS:
            raise UsageError(f"--shard {bounded_text(text)}: N is at most {MAX_SHARDS} slices (a CI job matrix of that many "
                             "is already more than any runner has)")
        index, total = int(match[1]), int(match[2])
        if not 1 <= index <= total:
            raise UsageError(f"--shard {text!r}: K must be between 1 and N (got K={index}, N={total})")
        return cls(index, total)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.total}"


def read_durations(path: Path) -> dict[str, float]:
    """Cell id -> seconds, from an earlier results.json."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(c["id"]): float(c.get("duration_s") or 0.0) for c in data["cells"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--durations {path}: not a results.json with cell durations ({exc})") from exc


def partition(items: Iterable[T], total: int, key: Callable[[T], str], cost: Callable[[T], float]) -> list[list[T]]:
    """Deal items into `total` shards, longest first, each to the least-loaded shard."""
    ordered = sorted(items, key=lambda item: (-cost(item), key(item)))
    shards: list[list[T]] = [[] for _ in range(total)]
    loads = [0.0] * total
    for item in ordered:
        target = min(range(total), key=lambda i: (loads[i], i))
        shards[target].append(item)
        loads[target] += max(cost(item), 0.001)
    return shards


def select(items: list[T], shard: Shard, key: Callable[[T], str], cost: Callable[[T], float]) -> list[T]:
    """This shard's items, in the order they were given."""
    mine = {key(item) for item in partition(items, shard.total, key, cost)[shard.index - 1]}
    return [item for item in items if key(item) in mine]


TYPICAL_FILE_NAME = "durations.json"


def typical_durations(results: dict) -> dict[str, float]:
    """Scenario id -> its cells' median seconds, from a results.json: the shipped default cost."""
    by: dict[str, list[float]] = {}
    for cell in results.get("cells", []):
        by.setdefault(str(cell["scenario"]), []).append(float(cell.get("duration_s") or 0.0))
    return {sid: round(sorted(v)[len(v) // 2], 2) for sid, v in sorted(by.items())}


def read_typical(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data.get("scenarios", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


if __name__ == "__main__":  # python -m acemq_interop.run.sharding RESULTS.json > scenarios/durations.json
    import sys

    source = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    print(json.dumps({"about": "median seconds per cell of each scenario, from a full run on the project's 2-core "
                               "machine; orders cells longest first and balances --shard without --durations",
                      "scenarios": typical_durations(source)}, indent=1))
