"""Is the run's broker still there? One watcher per run, so a lost broker ends the run.

Without it a broker that dies mid-run shows up as every remaining cell's own confusing
error (a peer's `ConnectionRefusedError`, the probe's empty `AMQPConnectionError`, a FAIL
that waited for an event that could never come) and the run grinds through all of them.

What counts as lost, and only that (a slow broker is not a lost one):
- the private node's VM has exited (its owner knows its pid: certain, at once);
- the AMQP port refuses or drops a TCP connection;
- the management API's port refuses the connection, or drops it (a container's port
  proxy accepts and then drops when the broker behind it is gone).
A timeout alone is never "lost": a busy 2-core machine can be slow. Anything but the VM's
exit is confirmed by a second look half a second later.

A background thread looks every second; the runner also asks `check()` whenever a cell
ends other than PASS, so a cell that failed because the broker went away is labelled as
such even when it ended before the next tick.

It also carries the run's `BrokerConditions` (broker_conditions.py: memory and disk
alarms, blocked connections), started and stopped with it: `condition(t)` is the
engine's `RunContext.broker_condition`.
"""
from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Callable

from .endpoint import BrokerEndpoint

if TYPE_CHECKING:
    from .conditions import BrokerConditions

INTERVAL_S = 1.0
CONFIRM_S = 0.5
CONNECT_BOUND_S = 3.0


def _port_refuses(host: str, port: int) -> str | None:
    """Why a TCP connection to host:port is refused or dropped at once; None if it is taken."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_BOUND_S):
            return None
    except socket.timeout:
        return None  # slow, not gone
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"


def _http_drops(mgmt_url: str) -> str | None:
    """Why the management port refuses or drops an HTTP request; None if it answers at all."""
    parts = urllib.parse.urlsplit(mgmt_url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if parts.scheme == "https":
        return _port_refuses(host, port)  # a TCP look is enough without speaking TLS here
    try:
        with socket.create_connection((host, port), timeout=CONNECT_BOUND_S) as sock:
            sock.settimeout(CONNECT_BOUND_S)
            sock.sendall(f"GET /api/overview HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
            first = sock.recv(16)
    except socket.timeout:
        return None
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    return None if first else "the connection was closed without an answer"


class BrokerWatch:
    """`cause` is None while the broker is there; once lost, it says why (and stays lost)."""

    def __init__(self, endpoint: BrokerEndpoint, managed_check: Callable[[], str | None] | None = None,
                 log: Callable[[str], None] | None = None, conditions: "BrokerConditions | None" = None):
        self._endpoint = endpoint
        self.conditions = conditions
        self._managed_check = managed_check
        self._log = log
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._checked_at = 0.0
        self.cause: str | None = None

    def start(self) -> "BrokerWatch":
        self._thread = threading.Thread(target=self._loop, name="acemq-interop-broker-watch", daemon=True)
        self._thread.start()
        if self.conditions is not None:
            self.conditions.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self.conditions is not None:
            self.conditions.stop()
        if self._thread is not None:
            self._thread.join(CONNECT_BOUND_S * 3)

    def condition(self, since: float, label: str = "the cell") -> str | None:
        """A broker condition (an alarm, a blocked connection) held at any time since the
        monotonic instant `since`, in words; None when none did, or the broker is lost
        (that is the cell's cause then, not an alarm)."""
        if self.conditions is None or self.cause is not None:
            return None
        return self.conditions.cause(since, label)

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            if self.check() is not None:
                return

    def _look(self) -> tuple[str | None, bool]:
        """(why it looks lost, whether that is certain)."""
        if self._managed_check is not None:
            gone = self._managed_check()
            if gone:
                return gone, True
        if self._endpoint.nodes:
            return self._cluster_look()
        e = self._endpoint
        refused = _port_refuses(e.host, e.port)
        if refused:
            return f"the AMQP port {e.host}:{e.port} refuses connections ({refused})", False
        dropped = _http_drops(e.mgmt_url)
        if dropped:
            from ..core.redact import url

            return f"the management API at {url(e.mgmt_url)} refuses connections ({dropped})", False
        return None, False

    def _cluster_look(self) -> tuple[str | None, bool]:
        """A cluster is lost when no node answers at all: one stopped or killed on purpose (a
        scenario's node step) refuses, and its exit is the managed check's to judge."""
        why = []
        for node in self._endpoint.nodes:
            refused = _port_refuses(node.host, node.port)
            if refused is None:
                return None, False
            why.append(f"{node.host}:{node.port} ({refused})")
        return f"no node of the cluster answers on its AMQP port: {', '.join(why)}", False

    def check(self) -> str | None:
        """Look now (at most one look at a time; a look just taken is reused)."""
        with self._lock:
            # Once stopped (the run's cleanup), no more looks: the node is being removed on purpose.
            if self.cause is not None or self._stop.is_set() or time.monotonic() - self._checked_at < 0.2:
                return self.cause
            why, certain = self._look()
            if why and not certain:
                time.sleep(CONFIRM_S)
                why, _ = self._look()
            self._checked_at = time.monotonic()
            if why:
                self.cause = why
                if self._log is not None:
                    self._log(f"broker lost: {why}")
            return self.cause
