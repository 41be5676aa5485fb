"""The protocol's ``load`` op and the raw echo responder (docs/peer-protocol.md, "Version 2").

``binding_load`` drives a requester of the binding from ``in_flight`` threads, the
way a threaded service calls it. ``raw_load`` and ``RawResponder`` use bare pika, no
acemq code: the fastest this client does the same round trip, so the pair of figures
shows what the binding costs. Nothing in either loop writes a line or logs per request.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Optional

import pika

from acemq import Broker, RequestTimedOut, Requester
from acemq.connection import connection_parameters
from acemq.errors import describe

log = logging.getLogger("acemq.peer.load")

RAW_TIMEOUT_SECONDS = 30.0  # the raw client's wait when the harness gives none (as RR-9)
RAW_PREFETCH = 64
ERROR_SAMPLES = 5
_EMPTY_BODY = len(b'{"pad":""}')


@dataclass(frozen=True)
class LoadSpec:
    requests: int
    in_flight: int
    body_bytes: int
    timeout_ms: Optional[int]  # None: the binding's own default applies
    warmup: int = 0

    @classmethod
    def of(cls, command: dict[str, Any]) -> "LoadSpec":
        spec = cls(
            requests=int(command["requests"]),
            in_flight=int(command["in_flight"]),
            body_bytes=int(command.get("body_bytes") or 0),
            timeout_ms=None if command.get("timeout_ms") is None else int(command["timeout_ms"]),
            warmup=int(command.get("warmup") or 0),
        )
        if spec.requests < 0 or spec.in_flight < 1 or spec.warmup < 0:
            raise ValueError("load needs requests >= 0, in_flight >= 1 and warmup >= 0")
        return spec

    def body(self) -> dict[str, str]:
        """A JSON body of about ``body_bytes`` bytes once encoded."""
        return {"pad": "x" * max(0, self.body_bytes - _EMPTY_BODY)}


class _Tally:
    """Outcomes of the measured requests; appends are atomic in CPython, so no lock."""

    def __init__(self) -> None:
        self.latencies_ns: list[int] = []
        self.timeouts: list[None] = []
        self.errors: list[str] = []


def nearest_rank(ordered: list[float], percent: float) -> float:
    """The nearest-rank percentile of an ascending list (empty: 0)."""
    if not ordered:
        return 0
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]


def _answer(client: str, spec: LoadSpec, tally: _Tally, duration_s: float) -> dict[str, Any]:
    latencies = sorted(ns / 1000 for ns in tally.latencies_ns)
    completed = len(latencies)
    return {
        "client": client,
        "requests": spec.requests,
        "completed": completed,
        "errors": len(tally.errors),
        "timeouts": len(tally.timeouts),
        "in_flight": spec.in_flight,
        "body_bytes": spec.body_bytes,
        "duration_ms": round(duration_s * 1000, 3),
        "rate_per_s": round(completed / duration_s, 1) if duration_s > 0 else 0,
        "latency_us": {
            "min": round(latencies[0]) if latencies else 0,
            "mean": round(sum(latencies) / completed) if latencies else 0,
            **{f"p{p}": round(nearest_rank(latencies, p)) for p in (50, 90, 99)},
            "max": round(latencies[-1]) if latencies else 0,
        },
        "error_samples": tally.errors[:ERROR_SAMPLES],
    }


# -- through the binding ------------------------------------------------------


def binding_load(requester: Requester, exchange: str, routing_key: str, spec: LoadSpec) -> dict[str, Any]:
    body = spec.body()
    options = {} if spec.timeout_ms is None else {"timeout": spec.timeout_ms / 1000}

    def phase(count: int, tally: _Tally) -> float:
        tickets = itertools.count()  # next() of a C iterator is atomic: one ticket per request

        def worker() -> None:
            clock = time.perf_counter_ns
            while next(tickets) < count:
                started = clock()
                try:
                    requester.request(exchange, routing_key, body, **options)
                except RequestTimedOut:
                    tally.timeouts.append(None)
                except Exception as exc:
                    tally.errors.append(describe(exc))
                else:
                    tally.latencies_ns.append(clock() - started)

        threads = [threading.Thread(target=worker, name=f"load-{i}", daemon=True) for i in range(min(spec.in_flight, count))]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - began

    phase(spec.warmup, _Tally())
    tally = _Tally()
    return _answer("binding", spec, tally, phase(spec.requests, tally))


# -- bare pika ------------------------------------------------------------------


def raw_load(url: Broker, exchange: str, routing_key: str, spec: LoadSpec) -> dict[str, Any]:
    """One connection, one channel, one reply queue; the window is refilled from the reply callback."""
    timeout_ns = int((RAW_TIMEOUT_SECONDS if spec.timeout_ms is None else spec.timeout_ms / 1000) * 1e9)
    payload = json.dumps(spec.body(), separators=(",", ":")).encode("utf-8")
    connection = pika.BlockingConnection(connection_parameters(url))
    try:
        channel = connection.channel()
        declared = channel.queue_declare("", exclusive=True, auto_delete=True, arguments={"x-queue-type": "classic"})
        reply_queue = declared.method.queue
        prefix = uuid.uuid4().hex[:12]
        pending: "OrderedDict[str, int]" = OrderedDict()  # correlation_id -> publish time, oldest first
        clock = time.perf_counter_ns
        state = {"sent": 0, "count": 0, "serial": 0}
        tally = _Tally()

        def send() -> None:
            state["serial"] += 1
            correlation_id = f"{prefix}-{state['serial']}"
            # message_id too: a spec responder copies it into the reply's correlation_id (RR-4).
            properties = pika.BasicProperties(
                content_type="application/json", reply_to=reply_queue, correlation_id=correlation_id, message_id=correlation_id
            )
            pending[correlation_id] = clock()
            channel.basic_publish(exchange, routing_key, payload, properties)
            state["sent"] += 1

        def refill() -> None:
            while state["sent"] < state["count"] and len(pending) < spec.in_flight:
                send()

        def on_reply(_channel: Any, _method: Any, properties: pika.BasicProperties, _body: bytes) -> None:
            started = pending.pop(properties.correlation_id, None)
            if started is None:
                return  # a reply after its timeout, or to the warm-up
            tally.latencies_ns.append(clock() - started)
            refill()

        channel.basic_consume(reply_queue, on_reply, auto_ack=True)

        def phase(count: int) -> float:
            state.update(sent=0, count=count)
            pending.clear()
            began = time.perf_counter()
            refill()
            while pending:
                oldest = next(iter(pending.values()))
                wait_s = max(0.0, (oldest + timeout_ns - clock()) / 1e9)
                connection.process_data_events(time_limit=min(wait_s, 0.25))
                now = clock()
                while pending and next(iter(pending.values())) + timeout_ns <= now:
                    pending.popitem(last=False)
                    tally.timeouts.append(None)
                refill()
            return time.perf_counter() - began

        phase(spec.warmup)
        tally.latencies_ns.clear()
        tally.timeouts.clear()
        return _answer("raw", spec, tally, phase(spec.requests))
    finally:
        try:
            connection.close()
        except Exception:
            log.debug("closing the raw load connection failed", exc_info=True)


class RawResponder:
    """The raw echo responder: bare pika, manual acks, prefetch 64, the body sent back as it came."""

    def __init__(self, url: Broker, queue: str, name: str) -> None:
        self._url, self._queue = url, queue
        self._stopping = threading.Event()
        self._ready: "Future[None]" = Future()
        self._thread = threading.Thread(target=self._run, name=f"raw-{name}", daemon=True)

    @classmethod
    def start(cls, url: Broker, queue: str, name: str, timeout: float = 30.0) -> "RawResponder":
        responder = cls(url, queue, name)
        responder._thread.start()
        responder._ready.result(timeout)  # answered once the consumer is registered
        return responder

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)

    def _run(self) -> None:
        try:
            connection = pika.BlockingConnection(connection_parameters(self._url))
            channel = connection.channel()
            channel.queue_declare(self._queue, durable=True, arguments={"x-queue-type": "quorum"})
            channel.basic_qos(prefetch_count=RAW_PREFETCH)
            channel.basic_consume(self._queue, self._echo)
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        try:
            while not self._stopping.is_set():
                connection.process_data_events(time_limit=0.25)
        except Exception as exc:
            log.warning("raw responder on %s lost its connection: %s", self._queue, describe(exc))
        finally:
            if connection.is_open:
                connection.close()

    @staticmethod
    def _echo(channel: Any, method: Any, properties: pika.BasicProperties, body: bytes) -> None:
        if properties.reply_to:
            reply = pika.BasicProperties(
                content_type="application/json",
                correlation_id=properties.message_id or properties.correlation_id,
            )
            channel.basic_publish("", properties.reply_to, body, reply)
        channel.basic_ack(method.delivery_tag)

