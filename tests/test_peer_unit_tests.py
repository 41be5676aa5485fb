"""Each binding's own unit tests, in its own language's runner, as its manifest lists them.

A peer whose toolchain is missing fails here rather than being skipped: on this project's
machines every toolchain is installed by ci/setup.sh, so a missing one is a setup defect.
"""
from __future__ import annotations

import subprocess

import pytest

from acemq_interop.peers.manifests import discover
from acemq_interop.peers.builds import build_peer
from support import log

MANIFESTS = discover()


@pytest.mark.parametrize("name", sorted(n for n, m in MANIFESTS.items() if m.test))
def test_the_bindings_own_unit_tests_pass(name: str) -> None:
    manifest = MANIFESTS[name]
    assert not manifest.missing_tools(), f"{name}: toolchain missing: {manifest.missing_tools()} (run ci/setup.sh)"
    _, failure = build_peer(manifest, log)
    assert failure is None, failure
    for argv in manifest.test:
        done = subprocess.run(manifest.argv(argv), cwd=manifest.cwd, env=manifest.environment(),
                              capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        output = (done.stdout + done.stderr)[-4000:]
        assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{output}"
