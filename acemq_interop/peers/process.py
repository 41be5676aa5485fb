"""A running peer: one process per peer per run, driven over the JSON-lines protocol.

Commands are written with a unique id (by a writer thread, so no caller ever blocks on a
pipe) and answered in completion order; a reader thread hands each answer to the waiting
Future and keeps every event for the cells to wait on.

A peer that breaks is marked once with its fault, and from then on every command of it
fails at once with that cause, so a broken peer costs at most one bound, not one per cell:
- it exits: `peer 'go' exited (signal 9, SIGKILL)` or `(code 3)`, with its stderr tail;
- it misses a bound and does not answer a liveness check either (stopped, hung): it is
  unresponsive, and the harness kills it;
- it writes out of protocol (not JSON, JSON nested deeper than MAX_JSON_DEPTH, not a
  protocol message, a line over MAX_LINE_BYTES, an answer to an id no command is waiting
  on): the harness kills it and keeps a bounded excerpt of what it wrote.

A peer runs in a session (and process group) of its own, and the harness kills the whole
group: a peer that forks, one started through `sh -c`, leaves nothing behind. Its stderr goes
to `logs/peer-NAME.stderr.log` with every password hidden (core/redact.py), and no more than
the last STDERR_LOG_BYTES of it are kept (a marker says how much was dropped). It gets the
harness's environment less every variable that holds a credential (core/redact.py
`child_environ`); the broker URL reaches it in `hello`.
"""
from __future__ import annotations

import collections
import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import time
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Callable

from ..core import redact
from ..core.errors import CallNotEnded, PeerError
from .manifests import Manifest
from .protocol import PROTOCOL_VERSION, RECOVERY_PROTOCOL, SUPPORTED_PROTOCOLS, validate_peer_line

STDERR_TAIL_LINES = 40
STDERR_LINE_CHARS = 2000  # a tail line longer than this is cut (the log file keeps it whole)
DEFAULT_OP_BOUND_S = 20.0
# No protocol message comes near this (a gather's replies are small bodies); a line past it
# is read no further than the bound, so a peer cannot make the harness hold an unbounded line.
MAX_LINE_BYTES = 4 * 1024 * 1024
EXCERPT_CHARS = 200
# A protocol message nests a few levels (a gather's replies, a body's JSON); a line nested
# deeper is out of protocol, judged before it can exhaust the reader's stack.
MAX_JSON_DEPTH = 200
# The peer's stderr log keeps its last this many bytes: past it, the older half is dropped
# and a marker line says how much (a peer that logs without end cannot fill the disk).
STDERR_LOG_BYTES = 16 * 1024 * 1024
GROUP_KILL_BOUND_S = 5.0
LIVENESS_BOUND_S = 5.0
ABORT_POLL_S = 0.1
# The liveness check: `counters` of a name nobody opened. Every peer answers it at once
# (`ok: false`, an unknown name) whatever else it is doing: the protocol says a pending
# command never delays `counters`.
LIVENESS_NAME = "acemq-interop.liveness"


def excerpt(raw: bytes | str, limit: int = EXCERPT_CHARS) -> str:
    """At most `limit` printable characters of what a peer wrote, saying how much there was."""
    text = raw if isinstance(raw, str) else raw[: limit * 4].decode("utf-8", errors="replace")
    shown = "".join(c if c.isprintable() else "?" for c in text[:limit])
    size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
    return f"{shown!r}" + (f" ... ({size} bytes)" if len(text) > limit or size > limit * 4 else "")


def json_depth(line: bytes) -> int:
    """How deep the brackets of a JSON line nest (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group, from /proc."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] != b"Z" and fields[2] == str(pgid).encode():
            found.append(int(entry))
    return found


def kill_group(pgid: int, bound_s: float = GROUP_KILL_BOUND_S) -> list[int]:
    """SIGKILL every process of a peer's process group (its own session: nothing else is in
    it) and wait, bounded, until none is alive; the pids still alive then."""
    deadline = time.monotonic() + bound_s
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return []
        left = group_members(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


class _CappedLog:
    """A peer's stderr log: each line redacted, at most `limit` bytes kept (the newest)."""

    def __init__(self, path: Path, limit: int):
        self.path = path
        self.limit = max(4096, limit)
        self.dropped = 0
        self._handle = path.open("wb")
        self.size = 0

    def write(self, text: str) -> None:
        data = redact.text(text).encode("utf-8", "replace")
        self._handle.write(data)
        self.size += len(data)
        if self.size > self.limit:
            self._trim()
        self._handle.flush()

    def _trim(self) -> None:
        """Keep the newest half of the limit, after a line saying how much went before."""
        self._handle.flush()
        keep = self.limit // 2
        with self.path.open("rb") as reader:
            reader.seek(max(0, self.size - keep))
            tail = reader.read()
        cut = tail.find(b"\n")
        if 0 <= cut < len(tail) - 1:
            tail = tail[cut + 1:]  # from a line's start
        self.dropped += self.size - len(tail)
        marker = (f"[acemq-interop: {self.dropped} earlier bytes of this peer's stderr dropped; "
                  f"the last {self.limit // (1024 * 1024) or self.limit} "
                  f"{'MiB' if self.limit >= 1024 * 1024 else 'bytes'} at most are kept]\n").encode()
        self._handle.seek(0)
        self._handle.truncate()
        self._handle.write(marker + tail)
        self.size = len(marker) + len(tail)

    def close(self) -> None:
        self._handle.close()


def exit_text(code: int) -> str:
    """`signal 9, SIGKILL` for a process a signal ended, `code 3` for one that exited."""
    if code < 0:
        try:
            return f"signal {-code}, {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


class PeerProcess:
    """Owns the pipes of one peer process."""

    def __init__(self, manifest: Manifest, log_dir: Path, in_docker: bool = False, run_id: str | None = None,
                 mounts: tuple[Path, ...] = ()):
        self.manifest = manifest
        self.hello: dict[str, Any] = {}
        self.protocol: int = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the pending table and the fault
        self._pending: dict[int, Future] = {}
        self._events: list[dict[str, Any]] = []
        self._events_changed = threading.Condition()
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._fault: str | None = None
        self.log_path = log_dir / f"peer-{manifest.name}.stderr.log"
        self.started_at = time.monotonic()
        try:
            # Binary pipes: stdout is read in bounded pieces and decoded here, so a line that
            # is not UTF-8 is reported as such instead of killing the reader.
            self._proc = subprocess.Popen(
                manifest.docker_run(run_id, mounts) if (in_docker or manifest.image) else manifest.argv(manifest.run),
                cwd=manifest.cwd,
                env=manifest.environment(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: killed whole (kill_group)
            )
        except OSError as exc:
            raise PeerError(f"peer '{manifest.name}' could not be started ({' '.join(manifest.run)} in {manifest.cwd}): {exc}") from exc
        self._log = _CappedLog(self.log_path, STDERR_LOG_BYTES)
        self._stderr_reader = threading.Thread(target=self._read_stderr, name=f"{manifest.name}-stderr", daemon=True)
        self._stderr_reader.start()
        threading.Thread(target=self._read_stdout, name=f"{manifest.name}-stdout", daemon=True).start()
        threading.Thread(target=self._write_stdin, name=f"{manifest.name}-stdin", daemon=True).start()

    # -- lifecycle -----------------------------------------------------------------

    def handshake(self, amqp_url: str, bound_s: float = 60.0, tls: dict[str, Any] | None = None,
                  amqp_urls: list[str] | None = None) -> dict[str, Any]:
        """Send `hello`; the bound is generous because a JVM or CLR starts cold.

        A TLS run's hello carries `tls` (`{"ca_file": ...}`) beside its amqps URL; the offer of
        protocol 5 carries every broker node's URL (`amqp_urls`, `amqp_url` first).
        """
        # Offer the newest version with every one we speak; a version-1 peer refuses a hello
        # that is not 1 (its protocol said so), so it is asked again at 1.
        extra = {"tls": tls} if tls else {}
        hello = {"op": "hello", "protocol": PROTOCOL_VERSION, "protocols": list(SUPPORTED_PROTOCOLS), "amqp_url": amqp_url,
                 "amqp_urls": list(amqp_urls or [amqp_url]), **extra}
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
        if self._fault is None:
            try:
                self.send({"op": "shutdown"}).result(timeout=bound_s)
            except (PeerError, FutureTimeout, CancelledError):
                pass
        self._outbox.put(None)  # the writer closes stdin once what is queued is written
        try:
            self._proc.wait(timeout=bound_s)
        except subprocess.TimeoutExpired:
            self._kill()
            self._proc.wait(timeout=5)
        # Whatever it started (a forked child holding its pipes, the peer behind `sh -c`)
        # goes with it: the group is its own, so nothing else is in it.
        kill_group(self._proc.pid)
        self._stderr_reader.join(timeout=2)
        self._log.close()

    def _kill(self) -> None:
        """SIGKILL the peer and every process of its group (a stopped one too)."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self._proc.poll() is None:
            self._proc.kill()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._fault is None

    @property
    def fault(self) -> str | None:
        """Why this peer can no longer be used (with its stderr tail), or None."""
        return self._fault

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr_tail)

    def capabilities(self) -> set[str]:
        return set(self.hello.get("capabilities", []))

    # -- commands ------------------------------------------------------------------

    def send(self, command: dict[str, Any]) -> Future:
        """Queue a command for writing and return the Future of its answer (never blocks)."""
        future: Future = Future()
        command = {"id": next(self._ids), **command}
        future.command = command  # type: ignore[attr-defined]
        with self._lock:
            if self._fault is not None:
                future.set_exception(PeerError(self._fault))
                return future
            self._pending[command["id"]] = future
        self._outbox.put((json.dumps(command, separators=(",", ":")) + "\n").encode("utf-8"))
        return future

    def wait(self, future: Future, bound_s: float, abort: Callable[[], str | None] | None = None) -> dict[str, Any]:
        """The answer, or a PeerError: when the bound passes, a peer that still answers the
        liveness check only failed this command; one that does not is unresponsive.
        `abort`, asked every ABORT_POLL_S, gives a reason to stop waiting early (another peer
        of the cell broke, a connection of the cell was lost)."""
        deadline = time.monotonic() + bound_s
        while True:
            left = deadline - time.monotonic()
            try:
                return future.result(timeout=max(0.0, min(left, ABORT_POLL_S) if abort else left))
            except FutureTimeout:
                pass
            except CancelledError:
                raise PeerError(f"peer '{self.manifest.name}': the command was cancelled") from None
            reason = abort() if abort is not None else None
            if reason is not None:
                raise PeerError(reason)
            if left <= ABORT_POLL_S or abort is None:
                break
        command = getattr(future, "command", {})
        missed = f"no answer to {command.get('op')} (id {command.get('id')}) within {bound_s:.1f}s"
        if self._fault is None and self.responsive():
            raise CallNotEnded(f"peer '{self.manifest.name}' did not answer {command.get('op')} (id {command.get('id')}) "
                               f"within {bound_s:.1f}s (it still answers other commands)")
        self._die(f"peer '{self.manifest.name}' unresponsive: {missed}", kill=True)
        raise PeerError(self._fault)

    def call(self, command: dict[str, Any], bound_s: float = DEFAULT_OP_BOUND_S) -> dict[str, Any]:
        return self.wait(self.send(command), bound_s)

    def responsive(self, bound_s: float = LIVENESS_BOUND_S) -> bool:
        """Whether the peer answers the liveness check within `bound_s` (any answer will do)."""
        if self._fault is not None:
            return False
        try:
            self.send({"op": "counters", "of": LIVENESS_NAME}).result(timeout=bound_s)
        except (FutureTimeout, PeerError, CancelledError):
            return False
        return True

    def check_alive(self, bound_s: float = LIVENESS_BOUND_S) -> str | None:
        """None when the peer answers the liveness check; else its fault (marking it unresponsive)."""
        if self._fault is None and not self.responsive(bound_s):
            self._die(f"peer '{self.manifest.name}' unresponsive: no answer to counters within {bound_s:.1f}s", kill=True)
        return self._fault

    # -- events --------------------------------------------------------------------

    def event_count(self) -> int:
        with self._events_changed:
            return len(self._events)

    def wait_events(
        self, match: Callable[[dict[str, Any]], bool], count: int, bound_s: float, since: int = 0,
        stop: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """Events (from index `since`) that match, returning once `count` are seen, an event
        matches `stop` (waiting on is pointless: a connection was lost), the peer broke or the
        bound passes."""
        deadline = time.monotonic() + bound_s
        with self._events_changed:
            while True:
                found = [e for e in self._events[since:] if match(e)]
                if len(found) >= count or self._fault is not None:
                    return found
                if stop is not None and any(stop(e) for e in self._events[since:]):
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    return found
                self._events_changed.wait(left)

    def events(self, match: Callable[[dict[str, Any]], bool], since: int = 0) -> list[dict[str, Any]]:
        with self._events_changed:
            return [e for e in self._events[since:] if match(e)]

    # -- the pipes -----------------------------------------------------------------

    def _write_stdin(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        while True:
            line = self._outbox.get()
            if line is None:
                break
            try:
                stdin.write(line)
                stdin.flush()
            except (OSError, ValueError) as exc:
                self._die(self._exit_reason(wait_s=2.0) or f"peer '{self.manifest.name}' stopped reading its stdin ({exc})")
                return
        try:
            stdin.close()
        except OSError:
            pass

    def _read_stdout(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        while True:
            raw = stream.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                self._out_of_protocol(f"a line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB", raw)
                return
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                depth = json_depth(line) if line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH else 0
                if depth > MAX_JSON_DEPTH:
                    problem = f"JSON nested {depth} levels deep (a protocol line nests a few; at most {MAX_JSON_DEPTH})"
                else:
                    message = json.loads(line.decode("utf-8"))
                    problem = validate_peer_line(message)
            except UnicodeDecodeError:
                problem = "not UTF-8"
            except json.JSONDecodeError as exc:
                problem = f"not JSON ({exc.msg})"
            except RecursionError:
                problem = "JSON nested too deep to read"
            if problem:
                self._out_of_protocol(problem, line)
                return
            if "event" in message:
                self._event(message)
                continue
            with self._lock:
                future = self._pending.pop(message["id"], None)
            if future is None:
                self._out_of_protocol(f"an answer to id {message['id']!r}, which no command is waiting on", line)
                return
            if not future.done():
                future.set_result(message)
        self._die(self._exit_reason(wait_s=5.0) or f"peer '{self.manifest.name}' closed its stdout but did not exit", kill=True)

    def _event(self, message: dict[str, Any]) -> None:
        with self._events_changed:
            message["_at"] = time.monotonic()
            self._events.append(message)
            self._events_changed.notify_all()
        if message["event"] == "connection_lost" and message.get("requester") and self.protocol < RECOVERY_PROTOCOL:
            # A call under way on a requester whose connection is gone cannot end well: it
            # fails now with the cause, instead of waiting for its own timeout. From protocol
            # 5 the binding ends it itself (RR-20.1, the connection_lost outcome), which is judged.
            name = message["requester"]
            cause = PeerError(f"connection lost: peer {self.manifest.name} requester {name}: {message.get('reason')}")
            with self._lock:
                doomed = [f for f in self._pending.values() if getattr(f, "command", {}).get("requester") == name]
            for future in doomed:
                if not future.done():
                    future.set_exception(cause)

    def _read_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        while True:
            raw = stream.readline(64 * 1024)  # bounded: a long line arrives in pieces
            if not raw:
                return
            text = raw.decode("utf-8", errors="replace")
            self._stderr_tail.append(redact.text(text.rstrip("\n")[:STDERR_LINE_CHARS]))
            try:
                self._log.write(text)
            except (ValueError, OSError):
                return

    # -- faults --------------------------------------------------------------------

    def _exit_reason(self, wait_s: float) -> str | None:
        """`peer 'x' exited (...)` once the process has ended (waiting up to `wait_s`), else None."""
        try:
            code = self._proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None
        self._stderr_reader.join(timeout=2)  # its last words belong in the tail
        return f"peer '{self.manifest.name}' exited ({exit_text(code)})"

    def _out_of_protocol(self, problem: str, raw: bytes) -> None:
        self._die(f"peer '{self.manifest.name}' is out of protocol: it wrote {problem}: {excerpt(raw)}", kill=True)

    def _die(self, reason: str, kill: bool = False) -> None:
        """Mark the peer broken, once: every command under way and every later one fails with `reason`."""
        with self._lock:
            if self._fault is not None:
                return
            tail = self.stderr_tail()
            self._fault = reason + (f"; last stderr lines:\n{tail}" if tail else "")
            pending = list(self._pending.values())
            self._pending.clear()
        for future in pending:
            if not future.done():
                future.set_exception(PeerError(self._fault))
        with self._events_changed:
            self._events_changed.notify_all()
        if kill:
            # The run cannot use it any more, and a stopped or babbling process would only
            # hold its pipes: SIGKILL works on a stopped process too, and on its whole group.
            self._kill()
