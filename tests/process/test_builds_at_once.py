"""Two runs of one checkout started together (a user with two terminals, two CI jobs on one
workspace) build each peer once, never twice at once."""
from __future__ import annotations

import threading
from pathlib import Path

from acemq_interop.peers.builds import build_peer
from acemq_interop.peers.manifests import load_manifest

# The build fails if another build of the same folder is under way (mkdir is atomic) and
# records each build that ran, both beside the folder (inside it they would change what the
# fingerprint reads); the second of a pair must find the first's result up to date.
BUILD = ('[sh, -c, "mkdir ../building || { echo overlapped; exit 3; }; echo built >> ../builds.txt; '
         'sleep 1; rmdir ../building"]')


def test_two_runs_started_together_build_a_peer_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "peer.yaml").write_text(f"name: mine\nlanguage: Shell\nrun: [sh, peer.sh]\nbuild:\n  - {BUILD}\n")
    (folder / "peer.sh").write_text("exit 0\n")
    manifest = load_manifest(folder / "peer.yaml")
    outcomes: list[tuple[float, str | None]] = []
    lines: list[str] = []
    threads = [threading.Thread(target=lambda: outcomes.append(build_peer(manifest, lines.append))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [failure for _, failure in outcomes] == [None, None], lines
    assert (tmp_path / "builds.txt").read_text().splitlines() == ["built"], lines
    # The second waited for the first (or, on a machine too slow to overlap them, came after
    # it): either way it found the first's build up to date.
    assert any("up to date" in line for line in lines), lines
