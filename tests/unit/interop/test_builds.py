"""A peer is built when its sources changed since its last successful build, not on every run."""
from __future__ import annotations

from pathlib import Path

from acemq_interop.peers.builds import fingerprint, remember, up_to_date
from acemq_interop.peers.manifests import load_manifest


def _peer(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "peer.js").write_text("console.log(1)\n")
    (folder / "package-lock.json").write_text("{}\n")
    (folder / "peer.yaml").write_text("name: mine\nlanguage: JavaScript\nrun: [node, dist/peer.js]\n"
                                      "build:\n  - [npx, tsc]\nlayout:\n  binding: [../binding/*.js]\n")
    (tmp_path / "binding").mkdir()
    (tmp_path / "binding" / "lib.js").write_text("module.exports = 1\n")
    return folder


def test_the_fingerprint_follows_the_sources_not_their_timestamps(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = _peer(tmp_path)
    manifest = load_manifest(folder / "peer.yaml")
    first = fingerprint(manifest)
    (folder / "package-lock.json").write_text("{}\n")  # rewritten unchanged, as npm install does
    assert fingerprint(manifest) == first
    (folder / "dist").mkdir()
    (folder / "dist" / "peer.js").write_text("built\n")  # what the build writes: only its presence counts
    with_output = fingerprint(manifest)
    assert with_output != first
    (folder / "dist" / "peer.js").write_text("built again\n")
    assert fingerprint(manifest) == with_output
    (tmp_path / "binding" / "lib.js").write_text("module.exports = 2\n")  # the binding beside the peer folder
    assert fingerprint(manifest) != with_output


def test_a_build_is_skipped_only_for_the_sources_of_its_last_success(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    manifest = load_manifest(_peer(tmp_path) / "peer.yaml")
    now = fingerprint(manifest)
    assert not up_to_date(manifest, now)
    remember(manifest, now)
    assert up_to_date(manifest, now)
    monkeypatch.setenv("ACEMQ_INTEROP_REBUILD", "1")
    assert not up_to_date(manifest, now), "ACEMQ_INTEROP_REBUILD builds whatever was recorded"
