"""Building peers: each manifest's `build` commands, once per run, in the background.

The builds overlap the broker's start instead of following it; each is bounded, and a
Ctrl-C stops the one under way so no build outlives the run.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
from typing import Callable

from .manifests import Manifest

BUILD_BOUND_S = 900


def image_with_digest(image: str | None) -> str | None:
    """`IMAGE@sha256:...`: the report names exactly which image ran (its local id when it has no registry digest)."""
    if not image or shutil.which("docker") is None:
        return image
    try:
        done = subprocess.run(["docker", "image", "inspect", "--format", "{{if .RepoDigests}}{{index .RepoDigests 0}}{{else}}{{.Id}}{{end}}", image],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return image
    digest = done.stdout.strip()
    if done.returncode != 0 or not digest:
        return image
    return digest if "@" in digest else f"{image}@{digest}"


class Builds:
    """The selected peers' builds, run one after the other in the background, so they overlap
    the broker's start instead of following it. `result` waits for one peer's; `cancel` stops
    the build under way (Ctrl-C) so no build outlives the run."""

    def __init__(self, manifests: list[Manifest], log: Callable[[str], None]):
        self._results: dict[str, tuple[float, str | None]] = {}
        self._done = threading.Event()
        self._cancelled = False
        self._current: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._log = log
        self._manifests = [m for m in manifests if m.build]
        threading.Thread(target=self._run, name="peer-builds", daemon=True).start()

    def _run(self) -> None:
        try:
            for manifest in self._manifests:
                self._results[manifest.name] = build_peer(manifest, self._log, self)
        finally:
            self._done.set()

    def start(self, command: list[str], **kwargs) -> subprocess.Popen | None:
        with self._lock:
            if self._cancelled:
                return None
            self._current = subprocess.Popen(command, **kwargs)
            return self._current

    def result(self, name: str) -> tuple[float, str | None]:
        if not self._done.wait(BUILD_BOUND_S * max(1, len(self._manifests))):
            return 0.0, "the peer builds did not finish in time"
        return self._results.get(name, (0.0, "not built: the builds were cancelled"))

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._current is not None and self._current.poll() is None:
                self._current.kill()


def build_peer(manifest: Manifest, log: Callable[[str], None], builds: "Builds | None" = None) -> tuple[float, str | None]:
    """Run the manifest's build commands; (seconds, None) or (seconds, what failed)."""
    started = time.monotonic()
    for argv in manifest.build:
        command = manifest.argv(argv)
        kwargs = dict(cwd=manifest.cwd, env=manifest.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                      text=True, stdin=subprocess.DEVNULL)
        try:
            proc = builds.start(command, **kwargs) if builds is not None else subprocess.Popen(command, **kwargs)
            if proc is None:
                return time.monotonic() - started, "not built: the run was interrupted"
            try:
                output, _ = proc.communicate(timeout=BUILD_BOUND_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                return time.monotonic() - started, f"build step {' '.join(command)} took more than {BUILD_BOUND_S}s"
        except OSError as exc:
            return time.monotonic() - started, f"build step {' '.join(command)} failed: {exc}"
        if proc.returncode != 0:
            tail = "\n".join((output or "").strip().splitlines()[-15:])
            return time.monotonic() - started, f"build step {' '.join(command)} exited {proc.returncode}:\n{tail}"
    took = time.monotonic() - started
    if manifest.build:
        log(f"built {manifest.name} in {took:.1f}s")
    return took, None
