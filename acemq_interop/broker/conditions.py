"""Broker conditions that void a cell's verdict: a resource alarm, a blocked connection.

With a memory or disk alarm in effect RabbitMQ blocks every publishing connection: the
requests of the cells under it never get through, their calls time out, and without this
they FAIL as RR-8.x/RR-9.x, blaming the bindings for what the broker did. A cell that
FAILs or ERRORs while such a condition held (at any time since it started) is an ERROR naming the
condition instead (engine.RunContext.broker_condition).

How it is known, and what it costs:
- a background thread asks the management API once a second for the nodes' alarms
  (`GET /api/nodes?columns=name,mem_alarm,disk_free_alarm`: every node of a cluster, on
  every RabbitMQ 3.x); a user the API does not show the nodes to gets the run's vhost's
  connections instead (`state` blocked or blocking). Each call is bounded (3 s) and never
  retried: a look that fails is no news, the next one is a second away;
- what it saw is kept as intervals on the time.monotonic() clock (`ConditionLog`), so
  "did it hold since t" is a lookup; a FAIL cell (only those ask) takes one fresh look
  too, shared by the cells ending within half a second of each other. PASS cells cost
  nothing.
- the probe's connections are bounded while blocked (`bounded_probe_factory`): a blocked
  publish's confirm would otherwise be waited for long after the cell's own bounds.
"""
from __future__ import annotations

import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..core.errors import BrokerError
from .management import Management, ManagementError

INTERVAL_S = 1.0
LOOK_BOUND_S = 3.0
FRESH_S = 0.5  # a look this recent is reused by a cell asking now

_RESOURCES = {"mem_alarm": "memory", "disk_free_alarm": "disk"}
_WHAT_TO_DO = {
    "memory": "free memory on the broker's host or raise its limit (rabbitmqctl set_vm_memory_high_watermark)",
    "disk": "free disk space on the broker's host or lower its limit (rabbitmqctl set_disk_free_limit)",
}


# -- the intervals: pure --------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """One condition held from `start` to `end` (None: still held at the last look).

    `start` is the look that first saw it (it may have begun up to a look earlier);
    `end` is the look that first saw it gone (it may have ended up to a look earlier), so
    a span never claims less than the condition held. `first`: held at the very first look
    (begun before the run's watch did)."""

    key: str
    text: str
    start: float
    end: float | None
    first: bool = False


class ConditionLog:
    """What the looks saw, as spans per condition key; thread-safe."""

    def __init__(self) -> None:
        self._spans: list[Span] = []
        self._open: dict[str, Span] = {}
        self._looks = 0
        self._lock = threading.Lock()

    def observe(self, now: float, held: Mapping[str, str]) -> list[str]:
        """One look at `now`: `held` maps each condition in effect to its words. Returns what
        changed ("raised: ...", "cleared: ..."), for the run's log."""
        news: list[str] = []
        with self._lock:
            first = self._looks == 0
            self._looks += 1
            for key, span in list(self._open.items()):
                if key not in held:
                    closed = Span(span.key, span.text, span.start, now, span.first)
                    self._spans[self._spans.index(span)] = closed
                    del self._open[key]
                    news.append(f"cleared: {span.text}")
            for key, text in held.items():
                if key not in self._open:
                    span = Span(key, text, now, None, first)
                    self._spans.append(span)
                    self._open[key] = span
                    news.append(f"raised: {text}" + (" (already when the run started)" if first else ""))
        return news

    def held_since(self, t: float) -> list[Span]:
        """Every span that overlaps [t, now]: the condition held at some time since t."""
        with self._lock:
            return [s for s in self._spans if s.end is None or s.end >= t]

    def held_now(self) -> list[Span]:
        with self._lock:
            return list(self._open.values())


def _at(instant: float, t: float, label: str) -> str:
    offset = instant - t
    if offset >= 0:
        return f"{offset:.1f}s into {label}"
    return f"{-offset:.1f}s before {label} started"


def describe(spans: list[Span], t: float, label: str = "the cell") -> str | None:
    """The cause a cell gets: each alarm with when it was raised (and cleared), relative to
    the cell's start `t`; blocked connections are named only when no alarm explains them."""
    if not spans:
        return None
    alarms = [s for s in spans if s.key.startswith("alarm:")]
    parts: list[str] = []
    for span in sorted(alarms or [], key=lambda s: (s.start, s.key)):
        since = ("since before the run started" if span.first and span.start <= t else f"since {_at(span.start, t, label)}")
        cleared = f", cleared {_at(span.end, t, label)}" if span.end is not None else ""
        parts.append(f"{span.text} {since}{cleared}")
    if not alarms:
        blocked = sorted(spans, key=lambda s: (s.start, s.key))
        names = [s.text for s in blocked]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        start = blocked[0]
        since = ("since before the run started" if start.first and start.start <= t else f"since {_at(start.start, t, label)}")
        still = any(s.end is None for s in blocked)
        cleared = "" if still else f", unblocked {_at(max(s.end for s in blocked if s.end is not None), t, label)}"
        word = "connection" if len(names) == 1 else f"{len(names)} connections"
        parts.append(f"broker blocked the run's {word} ({shown}): publishers blocked {since}{cleared}")
    return "; ".join(parts)


# -- the looks ------------------------------------------------------------------------


def alarms_of(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """`GET /api/nodes` rows -> {"alarm:memory:NODE": "broker alarm: memory (publishers blocked) on NODE"}."""
    held: dict[str, str] = {}
    for node in nodes or []:
        name = str(node.get("name") or "?")
        for field, resource in _RESOURCES.items():
            if node.get(field) is True:
                held[f"alarm:{resource}:{name}"] = f"broker alarm: {resource} (publishers blocked) on {name}"
    return held


def blocked_of(connections: list[dict[str, Any]]) -> dict[str, str]:
    """`GET /api/vhosts/V/connections` rows -> the blocked (or blocking) ones, by name."""
    held: dict[str, str] = {}
    for conn in connections or []:
        if conn.get("state") in ("blocked", "blocking"):
            props = conn.get("client_properties") or {}
            label = props.get("connection_name") if isinstance(props, dict) else None
            name = str(conn.get("name") or "?")
            held[f"blocked:{name}"] = f"'{label}'" if label else name
    return held


def nodes_alarms(management: Management, bound_s: float = LOOK_BOUND_S) -> dict[str, str]:
    """The alarms in effect now (raises ManagementError when the API does not tell)."""
    return alarms_of(management._call("GET", "/api/nodes?columns=name,mem_alarm,disk_free_alarm", retries=0,
                                      bound_s=bound_s) or [])


def preflight_problem(management: Management) -> str | None:
    """One line for pre-flight when an alarm is already raised (every cell would time out),
    else None; a broker that does not show its nodes to the user is not refused for that."""
    try:
        held = nodes_alarms(management, bound_s=10.0)
    except BrokerError:
        return None
    if not held:
        return None
    resources = sorted({key.split(":")[1] for key in held})
    nodes = sorted({key.split(":", 2)[2] for key in held})
    what = " and ".join(resources)
    todo = "; ".join(_WHAT_TO_DO[r] for r in resources)
    return (f"the broker has a {what} alarm in effect on {', '.join(nodes)}: it blocks every publisher, so every cell "
            f"would time out; {todo}, then run again")


class BrokerConditions:
    """The run's looks at its broker's conditions: a thread, and `cause(t)` for a cell."""

    def __init__(self, management: Management, vhost: str, log: Callable[[str], None] | None = None,
                 interval_s: float = INTERVAL_S):
        self._management = management
        self._vhost = vhost
        self._log = log
        self._interval_s = interval_s
        self.log = ConditionLog()
        self._look_lock = threading.Lock()
        self._looked_at = float("-inf")
        self._nodes_hidden = False  # the API does not show the nodes to this user: connections instead
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "BrokerConditions":
        self._thread = threading.Thread(target=self._loop, name="acemq-interop-broker-conditions", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(LOOK_BOUND_S * 2)

    def _loop(self) -> None:
        self.look()
        while not self._stop.wait(self._interval_s):
            self.look()

    def _held(self) -> dict[str, str] | None:
        """The conditions in effect, or None when the API did not tell."""
        if not self._nodes_hidden:
            try:
                return nodes_alarms(self._management)
            except ManagementError as exc:
                if exc.status not in (401, 403):
                    return None
                self._nodes_hidden = True
        try:
            path = (f"/api/vhosts/{urllib.parse.quote(self._vhost, safe='')}/connections"
                    "?columns=name,state,client_properties")
            return blocked_of(self._management._call("GET", path, retries=0, bound_s=LOOK_BOUND_S) or [])
        except BrokerError:
            return None

    def look(self) -> None:
        """One look (one at a time; a look taken less than FRESH_S ago is reused)."""
        with self._look_lock:
            if time.monotonic() - self._looked_at < FRESH_S:
                return
            held = self._held()
            now = time.monotonic()
            self._looked_at = now
            if held is None:
                return  # no news: the spans stay as they were
            for line in self.log.observe(now, held):
                if self._log is not None:
                    self._log(f"broker condition {line}")

    def cause(self, t: float, label: str = "the cell") -> str | None:
        """The conditions that held at any time since the monotonic instant `t` (one fresh
        look first, unless the run's cleanup has begun), in words, or None."""
        if not self._stop.is_set():
            self.look()
        return describe(self.log.held_since(t), t, label)


# -- the probe, bounded while blocked --------------------------------------------------


def _with_query(url: str, **params: object) -> str:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    query += [(k, str(v)) for k, v in params.items() if k not in dict(query)]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def bounded_probe_factory(blocked_s: float, condition: Callable[..., str | None] | None = None,
                          ca_file: str | None = None) -> Callable[..., Any]:
    """The run's probe factory: a probe whose connections give up once the broker has
    blocked them for `blocked_s` (a publish then raises at once instead of waiting for its
    confirm forever), and whose error then names the broker's condition."""
    from ..amqp.probe import Probe

    def bounded_probe(amqp_url: str, label: str = "") -> Probe:
        born = time.monotonic()
        why = (lambda: condition(born, "the probe's connection")) if condition is not None else None
        return Probe(_with_query(amqp_url, blocked_connection_timeout=f"{blocked_s:g}"), ca_file=ca_file, blocked_why=why,
                     label=label)

    return bounded_probe
