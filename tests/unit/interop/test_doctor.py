"""`doctor` checks versions from each manifest's `toolchain:` and says how to get what is missing."""
from __future__ import annotations

from pathlib import Path

from acemq_interop.peers.doctor import check_peer
from acemq_interop.peers.manifests import discover, load_manifest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "peers" / "old-toolchain" / "peer.yaml"


def test_a_version_too_old_and_a_missing_tool_are_named_with_both_routes() -> None:
    lines, ok = check_peer(load_manifest(FIXTURE))
    text = "\n".join(lines)
    assert not ok
    assert "Python 99 or newer: version 3." in text and "needs 99.0 or newer" in text
    assert "no-such-tool-acemq not on PATH" in text
    assert "with the usual registries: python.org" in text and "with Debian's packages: apt-get install python3" in text


def test_every_in_tree_peer_declares_its_toolchain_with_both_routes() -> None:
    for name, manifest in discover().items():
        assert manifest.toolchain, f"{name}: no toolchain: in peer.yaml"
        for entry in manifest.toolchain:
            assert entry.get("command") and entry.get("usual") and entry.get("debian"), (name, entry)
