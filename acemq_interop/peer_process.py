"""A running peer: one process per peer per run, driven over the JSON-lines protocol.

Commands are written with a unique id and answered in completion order; a reader thread
hands each answer to the waiting Future and keeps every event for the cells to wait on.
"""
from __future__ import annotations

import collections
import itertools
import json
import subprocess
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Callable

from .errors import PeerError
from .manifests import Manifest
from .protocol import PROTOCOL_VERSION, SUPPORTED_PROTOCOLS, validate_peer_line

STDERR_TAIL_LINES = 40
DEFAULT_OP_BOUND_S = 20.0


class PeerProcess:
    """Owns the pipes of one peer process."""

    def __init__(self, manifest: Manifest, log_dir: Path, in_docker: bool = False, run_id: str | None = None,
                 mounts: tuple[Path, ...] = ()):
        self.manifest = manifest
        self.hello: dict[str, Any] = {}
        self.protocol: int = 0
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._events: list[dict[str, Any]] = []
        self._events_changed = threading.Condition()
        self._write_lock = threading.Lock()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._dead: str | None = None
        self.log_path = log_dir / f"peer-{manifest.name}.stderr.log"
        self.started_at = time.monotonic()
        try:
            self._proc = subprocess.Popen(
                manifest.docker_run(run_id, mounts) if (in_docker or manifest.image) else manifest.argv(manifest.run),
                cwd=manifest.cwd,
                env=manifest.environment(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
        except OSError as exc:
            raise PeerError(f"peer '{manifest.name}' could not be started ({' '.join(manifest.run)} in {manifest.cwd}): {exc}") from exc
        self._log = self.log_path.open("w", encoding="utf-8")
        threading.Thread(target=self._read_stdout, name=f"{manifest.name}-stdout", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"{manifest.name}-stderr", daemon=True).start()

    # -- lifecycle -----------------------------------------------------------------

    def handshake(self, amqp_url: str, bound_s: float = 60.0, tls: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send `hello`; the bound is generous because a JVM or CLR starts cold.

        A TLS run's hello carries `tls` (`{"ca_file": ...}`) beside its amqps URL.
        """
        # Offer the newest version with every one we speak; a version-1 peer refuses a hello
        # that is not 1 (its protocol said so), so it is asked again at 1.
        extra = {"tls": tls} if tls else {}
        hello = {"op": "hello", "protocol": PROTOCOL_VERSION, "protocols": list(SUPPORTED_PROTOCOLS), "amqp_url": amqp_url, **extra}
        answer = self.call(hello, bound_s)
        if not answer.get("ok") and 1 in SUPPORTED_PROTOCOLS:
            answer = self.call({"op": "hello", "protocol": 1, "amqp_url": amqp_url, **extra}, bound_s)
        if not answer.get("ok"):
            raise PeerError(f"peer '{self.manifest.name}' refused hello: {answer.get('error')}")
        if answer.get("protocol") not in SUPPORTED_PROTOCOLS:
            raise PeerError(f"peer '{self.manifest.name}' speaks protocol {answer.get('protocol')!r}; this harness speaks {', '.join(map(str, SUPPORTED_PROTOCOLS))}")
        self.protocol = int(answer["protocol"])
        self.hello = answer
        self.startup_s = time.monotonic() - self.started_at
        return answer

    def shutdown(self, bound_s: float = 5.0) -> None:
        if self._dead is None:
            try:
                self.call({"op": "shutdown"}, bound_s)
            except PeerError:
                pass
        try:
            if self._proc.stdin:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=bound_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._log.close()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._dead is None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr_tail)

    def capabilities(self) -> set[str]:
        return set(self.hello.get("capabilities", []))

    # -- commands ------------------------------------------------------------------

    def send(self, command: dict[str, Any]) -> Future:
        """Write a command and return the Future of its answer."""
        future: Future = Future()
        if self._dead is not None:
            future.set_exception(PeerError(self._dead))
            return future
        command = {"id": next(self._ids), **command}
        future.command = command  # type: ignore[attr-defined]
        self._pending[command["id"]] = future
        line = json.dumps(command, separators=(",", ":"))
        try:
            with self._write_lock:
                assert self._proc.stdin is not None
                self._proc.stdin.write(line + "\n")
                self._proc.stdin.flush()
        except (OSError, ValueError) as exc:
            self._pending.pop(command["id"], None)
            future.set_exception(PeerError(f"peer '{self.manifest.name}' stdin closed: {exc}"))
        return future

    def wait(self, future: Future, bound_s: float) -> dict[str, Any]:
        command = getattr(future, "command", {})
        try:
            return future.result(timeout=bound_s)
        except FutureTimeout:
            raise PeerError(
                f"peer '{self.manifest.name}' did not answer {command.get('op')} (id {command.get('id')}) within {bound_s:.1f}s"
            ) from None

    def call(self, command: dict[str, Any], bound_s: float = DEFAULT_OP_BOUND_S) -> dict[str, Any]:
        return self.wait(self.send(command), bound_s)

    # -- events --------------------------------------------------------------------

    def event_count(self) -> int:
        with self._events_changed:
            return len(self._events)

    def wait_events(
        self, match: Callable[[dict[str, Any]], bool], count: int, bound_s: float, since: int = 0
    ) -> list[dict[str, Any]]:
        """Events (from index `since`) that match, returning once `count` are seen or the bound passes."""
        deadline = time.monotonic() + bound_s
        with self._events_changed:
            while True:
                found = [e for e in self._events[since:] if match(e)]
                if len(found) >= count or self._dead is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    return found
                self._events_changed.wait(left)

    def events(self, match: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        with self._events_changed:
            return [e for e in self._events if match(e)]

    # -- reader threads ------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                problem = validate_peer_line(message)
            except json.JSONDecodeError as exc:
                problem = f"not JSON ({exc.msg})"
                message = None
            if problem:
                self._die(f"peer '{self.manifest.name}' wrote a line that is not a protocol message ({problem}): {line[:300]}")
                return
            if "event" in message:
                with self._events_changed:
                    message["_at"] = time.monotonic()
                    self._events.append(message)
                    self._events_changed.notify_all()
                continue
            future = self._pending.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message)
        code = self._proc.wait()
        self._die(f"peer '{self.manifest.name}' exited (status {code})")

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.rstrip("\n")
            self._stderr_tail.append(line)
            try:
                self._log.write(raw)
                self._log.flush()
            except ValueError:
                return

    def _die(self, reason: str) -> None:
        if self._dead is not None:
            return
        tail = self.stderr_tail()
        self._dead = reason + (f"; last stderr lines:\n{tail}" if tail else "")
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(PeerError(self._dead))
        self._pending.clear()
        with self._events_changed:
            self._events_changed.notify_all()
