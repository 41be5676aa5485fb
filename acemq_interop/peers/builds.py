"""Building peers: each manifest's `build` commands, in the background, when their sources
changed since the last build that succeeded.

The builds overlap the broker's start instead of following it; each is bounded, and a
Ctrl-C stops the one under way so no build outlives the run. A build is skipped when the
peer's fingerprint (every source file's path and content, the manifest, the
build commands, and which output folders exist) is the one its last successful build
recorded: an unchanged .NET or Java peer costs nothing instead of 10 to 30 s of its build
tool. `ACEMQ_INTEROP_REBUILD=1` builds every peer whatever it recorded.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .manifests import Manifest

BUILD_BOUND_S = 900
REBUILD_ENV = "ACEMQ_INTEROP_REBUILD"
# Folders a build writes or a package manager fills, never a peer's sources: only whether
# they exist enters the fingerprint (a deleted bin/ makes the next run build again).
OUTPUT_DIRS = frozenset({".git", "node_modules", "bin", "obj", "build", "dist", "target", "out", "__pycache__",
                         ".pytest_cache", ".gradle", ".bundle", "vendor"})


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acemq-interop" / "builds"


def fingerprint(manifest: Manifest) -> str:
    """What a build of this peer depends on that the harness can see: its folder's files and
    those its layout names outside it (a binding beside the peer folder), by content; the
    build commands; the output folders present."""
    digest = hashlib.sha256()
    digest.update(json.dumps([list(argv) for argv in manifest.build]).encode())
    roots = {manifest.folder.resolve()}
    for globs in manifest.layout.values():
        for glob in globs:
            for path in manifest.folder.glob(glob):
                roots.add(path.resolve() if path.is_dir() else path.resolve().parent)
    files: list[tuple[str, str]] = []
    outputs: list[str] = []
    for root in sorted(roots):
        for folder, dirs, names in os.walk(root):
            outputs += [os.path.join(folder, d) for d in dirs if d in OUTPUT_DIRS]
            dirs[:] = sorted(d for d in dirs if d not in OUTPUT_DIRS)
            for name in sorted(names):
                path = os.path.join(folder, name)
                files.append((path, _content(path)))
    digest.update(json.dumps([sorted(set(files)), sorted(set(outputs))]).encode())
    return digest.hexdigest()


def _content(path: str) -> str:
    """A file's content as the fingerprint sees it: its hash (a package manager that rewrites
    a lock file unchanged, as `npm install` does, changes nothing), or for a large file its
    size and modification time."""
    try:
        stat = os.stat(path)
        if stat.st_size > 4 * 1024 * 1024:
            return f"{stat.st_size}:{stat.st_mtime_ns}"
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _record(manifest: Manifest) -> Path:
    key = hashlib.sha256(str(manifest.folder.resolve()).encode()).hexdigest()[:24]
    return _cache_dir() / f"{manifest.name}-{key}.json"


def up_to_date(manifest: Manifest, print_: str) -> bool:
    if os.environ.get(REBUILD_ENV):
        return False
    try:
        return json.loads(_record(manifest).read_text(encoding="utf-8")).get("fingerprint") == print_
    except (OSError, ValueError, AttributeError):
        return False


def remember(manifest: Manifest, print_: str) -> None:
    path = _record(manifest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"peer": manifest.name, "folder": str(manifest.folder), "fingerprint": print_}),
                        encoding="utf-8")
    except OSError:
        pass  # no cache: the next run builds again, nothing worse


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

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._current is not None and self._current.poll() is None:
                self._current.kill()


def build_peer(manifest: Manifest, log: Callable[[str], None], builds: "Builds | None" = None) -> tuple[float, str | None]:
    """Run the manifest's build commands, unless the sources are those of its last successful
    build; (seconds, None) or (seconds, what failed)."""
    started = time.monotonic()
    if not manifest.build:
        return 0.0, None
    with _build_lock(manifest, log, builds) as locked:
        if not locked:
            if builds is not None and builds.cancelled:
                return time.monotonic() - started, "not built: the run was interrupted"
            return time.monotonic() - started, f"another run's build of {manifest.name} took more than {BUILD_BOUND_S}s"
        return _build_unlocked(manifest, log, builds, started)


@contextmanager
def _build_lock(manifest: Manifest, log: Callable[[str], None], builds: "Builds | None") -> Iterator[bool]:
    """One build of a peer folder at a time: two runs of one checkout started together would
    otherwise write the same outputs at once; the second finds the peer up to date once the
    first is done. Without a cache folder there is nothing to lock on, and the build goes
    ahead as before."""
    path = _record(manifest).with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")
    except OSError:
        yield True
        return
    with handle:
        deadline = time.monotonic() + BUILD_BOUND_S
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    log(f"{manifest.name}: waiting for another run's build of the same folder")
                    told = True
                if time.monotonic() > deadline or (builds is not None and builds.cancelled):
                    yield False
                    return
                time.sleep(0.2)  # polled: flock has no timeout of its own
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_unlocked(manifest: Manifest, log: Callable[[str], None], builds: "Builds | None",
                    started: float) -> tuple[float, str | None]:
    print_ = fingerprint(manifest)
    if up_to_date(manifest, print_):
        log(f"{manifest.name}: up to date (sources unchanged since its last build)")
        return time.monotonic() - started, None
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
    remember(manifest, print_)
    log(f"built {manifest.name} in {took:.1f}s")
    return took, None
