"""The project's own test tree: pytest imports test modules by their basename (the folders
have no __init__.py), so two files of one name in two floors stop the whole collection
("import file mismatch"), as one did in CI."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_no_two_test_modules_share_a_basename() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for folder in (ROOT / "tests", ROOT / "peers" / "python" / "tests"):
        for path in folder.rglob("test_*.py"):
            if "node_modules" not in path.parts:
                seen[path.name].append(str(path.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a basename (rename one): {clashes}"
