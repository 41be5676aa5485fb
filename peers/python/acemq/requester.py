"""The requester: sends requests and gathers, and matches the replies.

One reply queue per requester (RR-6), classic, exclusive and auto-delete
(RR-7), named in both ``reply_to`` and the ``acemq-reply-to`` header (RR-1).
Replies to plain requests are matched by ``correlation_id`` (RR-8); replies to
gathers by the ``responseMessageId`` header (SG-4).

A lost connection (RR-20) ends every pending call and gather at once with ConnectionLost:
the exclusive reply queue died with it. The requester then reconnects by itself under the
same connection name (pika has no recovery: ``ConnectionThread`` does it) and consumes a new
reply queue, which later requests name; a call made while it reconnects waits for it,
within the call's timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional

import pika

from . import wire
from .connection import Brokers, ConnectionFailed, ConnectionThread
from .counters import Counter
from .errors import (
    ConnectionLost,
    ReplyDecodeError,
    RequestRefused,
    RequestTimedOut,
    RequesterClosed,
    ResponderFailed,
)
from ._policy import RequesterPolicy
from .gather import Gather, GatherState
from .hooks import RequesterObserver
from .publishing import PublishFailed, Publisher

log = logging.getLogger("acemq.requester")

DEFAULT_TIMEOUT_SECONDS = 30.0
# How long a request waits for the broker's confirm before it is refused.
CONFIRM_TIMEOUT_SECONDS = 30.0
# How many ids of ended calls and gathers a requester remembers, to tell a late reply to a
# request from one to a gather (each counted in Unmatched under its own rule, RR-8 / SG-8).
REMEMBERED_IDS = 4096
STALE_SUFFIX = ".stale"  # what the native_address policy "stale" appends (RR-1 forbids it)
LATE_FACTOR = 1.5  # the request_deadline policy "late": gives up at 1.5 x the timeout (RR-9 forbids it)


@dataclass(frozen=True)
class _Outgoing:
    """One request message to publish."""

    exchange: str
    routing_key: str
    payload: bytes
    message_id: str
    correlation_id: str
    reply_queue: str
    message_type: Optional[str] = None
    headers: Optional[Mapping[str, Any]] = None
    gather: bool = False  # a gather's copy: its return is judged by the gather policy


class _Call:
    """One request waiting for its reply."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        # When the caller gives up (time.monotonic), set once the request is published; a
        # reply arriving later is not this call's (RR-8). Read and set under the requester's lock.
        self.deadline: Optional[float] = None
        self._done = threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def complete(self, value: Any = None, error: Optional[BaseException] = None) -> None:
        self._value, self._error = value, error
        self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: Optional[float]) -> bool:
        return self._done.wait(timeout)

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class PendingRequest:
    """A sent request; ``result()`` waits for its reply until the call's timeout."""

    def __init__(self, requester: "Requester", call: _Call, deadline: float, timeout: float) -> None:
        self._requester = requester
        self._call = call
        self._deadline = deadline
        self._timeout = timeout

    @property
    def request_id(self) -> str:
        return self._call.request_id

    def done(self) -> bool:
        """Whether the call has ended (a reply, a failure, or the requester's close)."""
        return self._call.done

    def result(self) -> Any:
        """The decoded reply; raises RequestTimedOut, ResponderFailed or ReplyDecodeError."""
        return self._requester._wait(self._call, self._deadline, self._timeout)


class PendingGather:
    """A sent gather; ``result()`` waits until it resolves or rejects."""

    def __init__(self, requester: "Requester", gather: Gather) -> None:
        self._requester = requester
        self._gather = gather

    @property
    def request_id(self) -> str:
        return self._gather.request_id

    def done(self) -> bool:
        """Whether the gather has ended (resolved, rejected, or the requester's close)."""
        return self._gather.done

    def result(self) -> list[Any]:
        """The replies in arrival order; raises RequestTimeoutError on a shortfall (SG-6),
        RequesterClosed when the requester was closed first."""
        return self._requester._wait_gather(self._gather)


class Requester:
    """Sends requests over its own connection. Open with ``Requester.open``."""

    def __init__(
        self,
        url: Brokers,
        *,
        observer: Optional[RequesterObserver] = None,
        default_timeout: Optional[float] = None,
        name: str = "acemq-requester",
        connection_name: Optional[str] = None,
    ) -> None:
        self._timeout_option = default_timeout
        self._policy = RequesterPolicy()  # the spec; only acemq._conformance opens with another
        self.default_timeout = self._resolve_default_timeout()
        self._observer = observer or RequesterObserver()
        self._io = ConnectionThread(url, name, connection_name)
        self._io.on_lost = self._connection_lost
        self._io.on_recovered = self._recovered
        self._publisher = Publisher(self._io)
        self._lock = threading.Lock()
        # Why the connection is down (None while it is up), and the recovery's signal.
        self._down: Optional[str] = None
        self._back = threading.Condition(self._lock)
        self._losses = 0  # how many times the connection was lost: a send spanning one ends as lost
        self._calls: "OrderedDict[str, _Call]" = OrderedDict()
        self._gathers: dict[str, Gather] = {}
        # The ids this requester has sent requests and gathers under, newest last (bounded).
        self._sent_requests: "OrderedDict[str, None]" = OrderedDict()
        self._sent_gathers: "OrderedDict[str, None]" = OrderedDict()
        self._closed = False
        self._reply_queue = ""
        self.timed_out = Counter()
        self.unmatched = Counter()

    @classmethod
    def open(cls, url: Brokers, **options: Any) -> "Requester":
        """Connect, declare the reply queue and start consuming it.

        ``url`` is an AMQP URL or pika connection parameters (TLS: ``acemq.tls_parameters``),
        or a cluster's list of them, tried in order. ``connection_name`` is the name the
        broker's management UI shows for the requester's connection (and its reconnections).
        """
        return cls._open(url, RequesterPolicy(), **options)

    @classmethod
    def _open(cls, url: Brokers, policy: RequesterPolicy, **options: Any) -> "Requester":
        # The policy is fixed before anything is declared and never changes after.
        requester = cls(url, **options)
        requester._policy = policy
        requester.default_timeout = requester._resolve_default_timeout()
        requester._start()
        return requester

    def _resolve_default_timeout(self) -> float:
        """The timeout of a call given none: the owner's, else the spec's 30 s (RR-9)."""
        if self._timeout_option is not None:
            return float(self._timeout_option)
        return self._policy.default_timeout_ms / 1000.0

    @property
    def reply_queue(self) -> str:
        return self._reply_queue

    # -- requests ---------------------------------------------------------

    def request(
        self,
        exchange: str,
        routing_key: str,
        body: Any,
        timeout: Optional[float] = None,
        headers: Optional[Mapping[str, Any]] = None,
        message_type: Optional[str] = None,
    ) -> Any:
        """Send ``body`` and return the decoded reply (RR-9 timeout default 30 s).

        ``message_type`` is sent as the AMQP ``type`` property (none when not given).
        """
        return self.send(exchange, routing_key, body, timeout=timeout, headers=headers, message_type=message_type).result()

    def send(
        self,
        exchange: str,
        routing_key: str,
        body: Any,
        *,
        timeout: Optional[float] = None,
        headers: Optional[Mapping[str, Any]] = None,
        message_id: Optional[str] = None,
        correlation_id: Optional[str] = None,
        message_type: Optional[str] = None,
    ) -> PendingRequest:
        """Publish a request and return at once; the reply is waited for with ``result()``."""
        timeout = self.default_timeout if timeout is None else timeout
        message_id = self._short_string("message_id", message_id or wire.new_message_id())
        # RR-8: the correlation_id is the message_id, so a responder that echoes it answers this call.
        correlation_id = self._short_string("correlation_id", correlation_id or message_id)
        if self._policy.request_correlation_id == "none":
            correlation_id = None  # RR-8 forbids this
        message_type = self._short_string("type", message_type)
        payload = wire.encode_body(body)
        call = _Call(message_id)
        with self._lock:
            losses = self._connected(time.monotonic() + timeout)
            self._calls[message_id] = call  # before publishing: a fast reply must find it
            _remember(self._sent_requests, message_id)
        try:
            outgoing = _Outgoing(
                exchange, routing_key, payload, message_id, correlation_id, self._reply_queue_for_call(), message_type, headers
            )
            # The I/O thread only starts the publish; this thread waits for its confirm, so
            # the publishes of many callers are outstanding together.
            self._confirmed(outgoing, self._io.call(self._publish_request, outgoing))
        except BaseException as exc:
            with self._lock:
                self._calls.pop(message_id, None)
            if self._closed and isinstance(exc, Exception):
                # Closed under the publish: the channel's failure is the close, not a refusal.
                raise RequesterClosed("the requester was closed") from exc
            self._raise_if_lost(exc, losses)
            raise
        # RR-9: the timeout runs from the publish; "late" waits half as long again.
        waited = timeout * LATE_FACTOR if self._policy.request_deadline == "late" else timeout
        with self._lock:
            call.deadline = time.monotonic() + waited
        return PendingRequest(self, call, call.deadline, timeout)

    def _wait(self, call: _Call, deadline: float, timeout: float) -> Any:
        while not call.wait(max(0.0, deadline - time.monotonic())):
            if time.monotonic() < deadline:
                continue  # woke early: the deadline is not to be anticipated
            with self._lock:
                gave_up = self._calls.pop(call.request_id, None) is not None
            if gave_up:
                if self._policy.count_timeouts:  # RR-9
                    self.timed_out.increment()
                if self._policy.timeout_outcome == "null_reply":
                    return None  # RR-9 forbids this: a timeout passed off as a null reply
                raise RequestTimedOut(call.request_id, timeout)
            call.wait(None)  # a reply took it at the last moment and is completing it
            break
        return call.result()

    # -- scatter-gather ---------------------------------------------------

    def send_request_multi(
        self,
        message_type: Optional[str],
        message: Any,
        endpoint: str,
        expected_reply_count: Optional[int] = None,
        timeout: Optional[float] = None,
        correlation_id: Optional[str] = None,
    ) -> list[Any]:
        """Gather replies from the competing consumers of one endpoint queue (SG-2)."""
        return self.begin_gather(
            message,
            endpoint=endpoint,
            message_type=message_type,
            expected_reply_count=expected_reply_count,
            timeout=timeout,
            correlation_id=correlation_id,
        ).result()

    def publish_request(
        self,
        message_type: Optional[str],
        message: Any,
        on_reply: Optional[Callable[[Any], None]],
        exchange: str,
        expected_reply_count: Optional[int] = None,
        timeout: Optional[float] = None,
        correlation_id: Optional[str] = None,
    ) -> list[Any]:
        """Broadcast one request to a fanout exchange and gather the replies (SG-2)."""
        return self.begin_gather(
            message,
            exchange=exchange,
            message_type=message_type,
            on_reply=on_reply,
            expected_reply_count=expected_reply_count,
            timeout=timeout,
            correlation_id=correlation_id,
        ).result()

    def begin_gather(
        self,
        message: Any,
        *,
        endpoint: Optional[str] = None,
        exchange: Optional[str] = None,
        message_type: Optional[str] = None,
        on_reply: Optional[Callable[[Any], None]] = None,
        expected_reply_count: Optional[int] = None,
        timeout: Optional[float] = None,
        correlation_id: Optional[str] = None,
    ) -> PendingGather:
        """Publish a gather (to ``endpoint`` xor ``exchange``) and return at once."""
        if (endpoint is None) == (exchange is None):
            raise ValueError("a gather goes to an endpoint queue or to a fanout exchange, not both")
        timeout = self.default_timeout if timeout is None else timeout
        request_id = wire.new_message_id()
        policy = self._policy
        if correlation_id is None and policy.gather_default_correlation == "request_message_id":
            correlation_id = request_id  # SG-1: no business correlation id given
        correlation_id = self._short_string("correlation_id", correlation_id)
        message_type = self._short_string("type", message_type)
        # sendRequestMulti sends one copy per expected reply: a queue hands each
        # message to one of its consumers, so N workers need N copies (SG-2).
        if exchange is not None:
            copies = policy.publish_copies  # SG-2 forbids 2: every subscriber would answer twice
        elif expected_reply_count is None:
            copies = policy.multi_copies_without_count  # SG-2 forbids 0: nobody is asked
        else:
            copies = expected_reply_count
        if policy.multi_copies == "one":
            copies = 1  # SG-2 forbids this: one copy cannot reach N competing workers
        if expected_reply_count is None and policy.gather_missing_count == "one":
            expected_reply_count = 1  # SG-7 forbids this: no count is not a count of 1
        if expected_reply_count is None and exchange is None and policy.gather_missing_count == "copies":
            # SG-7 forbids this: sendRequestMulti's copies taken as its count, so the gather
            # resolves once each copy was answered instead of spending its budget.
            expected_reply_count = max(copies, 1)
        gather = Gather(
            request_id,
            correlation_id,
            expected_reply_count,
            on_reply,
            rejects_shortfall=policy.gather_shortfall == "reject",
            resolves_early=policy.gather_resolves_early,
            restarts_per_reply=policy.gather_deadline == "restart_per_reply",
        )
        target = (exchange, "") if exchange is not None else ("", endpoint)
        payload = wire.encode_body(message)
        with self._lock:
            losses = self._connected(time.monotonic() + timeout)
            self._gathers[request_id] = gather
            _remember(self._sent_gathers, request_id)
        try:
            outgoing = _Outgoing(
                target[0],
                target[1],
                payload,
                request_id,
                correlation_id,
                self._reply_queue_for_call(),
                message_type,
                gather=True,
            )
            sent = []
            for copy in range(copies):
                if copy and policy.gather_copy_ids == "distinct":
                    # SG-1 forbids this: the copies of one gather must share its id.
                    outgoing = replace(outgoing, message_id=wire.new_message_id())
                sent.append((outgoing, self._io.call(self._publish_request, outgoing)))
            for outgoing, confirm in sent:  # the copies' confirms are awaited together
                self._confirmed(outgoing, confirm)
        except BaseException as exc:
            with self._lock:
                self._gathers.pop(request_id, None)
            gather.cancel()
            if self._closed and isinstance(exc, Exception):
                raise RequesterClosed("the requester was closed") from exc
            self._raise_if_lost(exc, losses)
            raise
        gather.arm(timeout)  # SG-9: the timeout runs from the publish
        return PendingGather(self, gather)

    def _connected(self, deadline: float) -> int:
        """Called with the lock held before a call is sent: the number of losses so far, once
        the connection is up. While it reconnects, waits for it until ``deadline``; a
        connection that is down for good (or still down then) refuses the call."""
        while True:
            if self._closed:
                raise RequesterClosed("the requester is closed")
            if self._down is None:
                return self._losses
            remaining = deadline - time.monotonic()
            if not self._io.recovering or remaining <= 0:
                raise ConnectionLost(self._down)
            self._back.wait(remaining)

    def _raise_if_lost(self, exc: BaseException, losses: int) -> None:
        """A send that failed because the connection was lost under it ends as lost (RR-20.1:
        a request not yet confirmed is such a call), not as a refusal."""
        with self._lock:
            lost = self._losses != losses and isinstance(exc, Exception)
            reason = self._down or "the connection was lost while the request was published"
        if lost:
            raise ConnectionLost(reason) from exc

    def _wait_gather(self, gather: Gather) -> list[Any]:
        try:
            return gather.wait()
        finally:
            with self._lock:
                self._gathers.pop(gather.request_id, None)
            # RR-9: TimedOut counts requests; a gather ending at its deadline is a shortfall
            # (SG-6) or a spent budget (SG-7), never a timeout.
            if gather.expired and self._policy.count_gather_timeouts:
                self.timed_out.increment()

    # -- lifecycle --------------------------------------------------------

    def close(self) -> None:
        """End every pending call and gather at once with RequesterClosed (not a timeout, not
        counted in TimedOut), then close the connection (the reply queue goes with it)."""
        with self._lock:
            self._closed = True
            if self._policy.pending_at_close == "end_closed":
                calls, self._calls = list(self._calls.values()), OrderedDict()
                gathers, self._gathers = list(self._gathers.values()), {}
            else:
                calls, gathers = [], []  # "wait": they are left to wait out their timeouts
        for call in calls:
            call.complete(error=RequesterClosed("the requester was closed"))
        for gather in gathers:
            gather.close()
        with self._lock:
            self._back.notify_all()  # a call waiting for a recovery ends as closed
        self._io.close()

    def __enter__(self) -> "Requester":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- I/O thread -------------------------------------------------------

    def _start(self) -> None:
        self._io.recover = self._policy.recover_connection  # RR-20.3 forbids False
        self._io.start()
        try:
            self._reply_queue = self._io.call(self._open_channels)
        except BaseException:
            self._io.close()
            raise

    def _open_channels(self) -> str:
        assert self._io.connection is not None
        self._consumer = self._io.connection.channel()
        self._io.watch(self._consumer)  # the broker closing it ends every reply: connection_lost
        return self._declare_reply_queue()

    def _short_string(self, field: str, value: Optional[str]) -> Optional[str]:
        """RR-18: a short-string property over 255 bytes is refused, never truncated."""
        if self._policy.long_short_string == "truncate":
            return wire.truncate_short_string(value)  # the defect RR-18 forbids
        wire.check_short_string(field, value)
        return value

    def _reply_queue_for_call(self) -> str:
        if self._policy.reply_queue_per_request:
            # The defect RR-6 forbids: a fresh reply queue for every call.
            return self._io.call(self._declare_reply_queue)
        return self._reply_queue

    def _declare_reply_queue(self) -> str:
        # RR-7: the type is given explicitly, not left to the server's default.
        arguments = {"x-queue-type": "classic"} if self._policy.explicit_reply_queue_type else None
        exclusive = self._policy.exclusive_reply_queue  # RR-7 forbids False
        result = self._consumer.queue_declare("", durable=False, exclusive=exclusive, auto_delete=True, arguments=arguments)
        queue = result.method.queue
        self._consumer.basic_consume(queue, self._on_reply, auto_ack=True)
        return queue

    def _confirmed(self, outgoing: _Outgoing, confirm: "Future[None]") -> None:
        """Wait (caller's thread) for a request's confirm; a return or nack refuses it (RR-13)."""
        try:
            confirm.result(CONFIRM_TIMEOUT_SECONDS)
        except FutureTimeout as exc:
            raise RequestRefused(
                f"request not accepted: no confirm from the broker within {CONFIRM_TIMEOUT_SECONDS:g} s"
            ) from exc
        except PublishFailed as exc:
            honoured = self._policy.honour_gather_returns if outgoing.gather else self._policy.honour_returns
            if exc.returned and not honoured:
                # RR-13 forbids this: taking the ack after a basic.return for delivery.
                log.info("ignoring the return of request %s: %s", outgoing.message_id, exc.detail)
                return
            raise RequestRefused(f"request not accepted: {exc.detail}") from exc

    def _publish_request(self, outgoing: _Outgoing) -> "Future[None]":
        """Start publishing a request (I/O thread); its confirm comes in the Future."""
        reply_queue = outgoing.reply_queue
        wire.check_short_string("reply_to", reply_queue)
        policy = self._policy
        headers: dict[str, Any] = dict(outgoing.headers or {})
        if policy.write_header_address:  # RR-1: both places, RR-2: a long string
            as_bytes = policy.header_address_as_bytes  # pika writes bytes as 'x'
            headers[wire.REPLY_TO_HEADER] = reply_queue.encode("utf-8") if as_bytes else reply_queue
        native: Optional[str] = None
        if policy.write_native_address:
            # RR-1 forbids "stale": reply_to naming another queue than the header. RR-3 forbids
            # "empty": pika writes "" as a present, zero-length reply_to (it omits only None).
            native = {"stale": reply_queue + STALE_SUFFIX, "empty": ""}.get(policy.native_address, reply_queue)
        message_type = outgoing.message_type
        if message_type is not None and policy.type_carrier == "header":
            # The type belongs in the AMQP type property, not in a header.
            headers[wire.TYPE_HEADER] = message_type
            message_type = None
        properties = pika.BasicProperties(
            content_type=wire.CONTENT_TYPE,
            message_id=outgoing.message_id,
            correlation_id=outgoing.correlation_id,
            reply_to=native,
            type=message_type,
            headers=headers or None,
        )
        return self._publisher.publish(outgoing.exchange, outgoing.routing_key, properties, outgoing.payload)

    def _on_reply(self, _channel: Any, _method: Any, properties: pika.BasicProperties, body: bytes) -> None:
        headers = properties.headers or {}
        if self._policy.gather_demux_by == "correlation_id":
            gather_key = properties.correlation_id
        else:
            gather_key = wire.header(headers, wire.RESPONSE_MESSAGE_ID_HEADER)
        with self._lock:
            gather = self._gathers.get(gather_key) if gather_key else None
            call: Optional[_Call] = None
            if gather is None:
                call = self._take_call(properties.correlation_id)
            if gather is None and call is None and gather_key and self._policy.gather_stray_reply == "oldest_gather":
                # SG-8 forbids this: a reply for no pending gather is given to the oldest one.
                gather = next((g for g in self._gathers.values() if g.state is GatherState.COLLECTING), None)
            if gather is None and call is None and self._calls and self._policy.unmatched_reply == "oldest_waiter":
                # RR-8 forbids this: a reply nobody waits for is given to the oldest waiting call.
                call = self._calls.popitem(last=False)[1]
            for_gather = gather is None and call is None and self._for_gather(properties.correlation_id, gather_key)
        if gather is not None:
            self._deliver_to_gather(gather, properties, body)
        elif call is not None:
            self._deliver_to_call(call, properties, body)
        else:
            self._count_unmatched(properties, for_gather=for_gather)

    def _for_gather(self, correlation_id: Optional[str], gather_key: Optional[str]) -> bool:
        """Whether a reply that found nobody was a gather's (SG-8) rather than a call's (RR-8);
        called with the lock held. By the ids sent; a reply naming none of them is a stray:
        a gather's when this requester has begun gathers."""
        if gather_key and gather_key in self._sent_gathers:
            return True
        if correlation_id and correlation_id in self._sent_requests:
            return False
        return bool(self._sent_gathers)

    def _take_call(self, correlation_id: Optional[str]) -> Optional[_Call]:
        """The waiting caller a reply belongs to; called with the lock held."""
        if self._policy.match_replies_by == "oldest_waiter":
            # The defect RR-8 forbids: the oldest waiting caller gets whatever arrives.
            if not self._calls:
                return None
            return self._calls.popitem(last=False)[1]
        if correlation_id is None:
            return None
        call = self._calls.get(correlation_id)
        if call is None or (call.deadline is not None and time.monotonic() >= call.deadline):
            # Past its deadline the call has timed out, though its waiter may not have woken to
            # say so yet: the reply is Unmatched (RR-8), and the waiter ends it as a timeout.
            return None
        return self._calls.pop(correlation_id)

    def _deliver_to_call(self, call: _Call, properties: pika.BasicProperties, body: bytes) -> None:
        if self._policy.unknown_reply_headers == "fail":
            known = {wire.ERROR_HEADER, wire.RESPONSE_MESSAGE_ID_HEADER}
            # x- headers pass: brokers and clients add their own (RabbitMQ.Client's x-dotnet-pub-seq-no).
            unknown = sorted(name for name in properties.headers or {} if name not in known and not name.startswith("x-"))
            if unknown:
                # RR-5 forbids this: a header the requester does not know fails the call.
                call.complete(error=ReplyDecodeError(call.request_id, f"unexpected reply headers {', '.join(unknown)}"))
                return
        failure = wire.header(properties.headers, wire.ERROR_HEADER)
        if failure is not None and self._policy.read_error_header:  # RR-10: before decoding
            call.complete(error=ResponderFailed(call.request_id, failure))
            return
        try:
            call.complete(wire.decode_body(body))
        except ValueError as exc:
            if self._policy.undecodable_reply == "drop":
                # RR-19 forbids this: the call is left waiting for its timeout.
                with self._lock:
                    self._calls[call.request_id] = call
                self._count_unmatched(properties)
                return
            call.complete(error=ReplyDecodeError(call.request_id, str(exc)))

    def _deliver_to_gather(self, gather: Gather, properties: pika.BasicProperties, body: bytes) -> None:
        policy = self._policy
        if wire.header(properties.headers, wire.ERROR_HEADER) is not None:
            if policy.gather_failure_reply == "keep":
                # SG-10 forbids this: a failure kept as a null reply, counting toward the count.
                if not gather.add(None):
                    self._count_unmatched(properties, for_gather=True)  # the gather had ended (SG-8)
                return
            # SG-10: a failure is not an answer. For a pending gather it is counted under its
            # own rule; for one that has ended, like any late reply (SG-8).
            if gather.accepting():
                self._count_unmatched(properties, counted=policy.count_gather_failures)
            else:
                self._count_unmatched(properties, for_gather=True)
            return
        # Spec choice (SG-8): an undecodable body stays out of a gather's result.
        try:
            reply = wire.decode_body(body)
        except ValueError:
            log.warning("undecodable gather reply for %s dropped", gather.request_id)
            self._count_unmatched(properties, for_gather=True)
            return
        if not gather.add(reply):
            self._count_unmatched(properties, for_gather=True)

    def _connection_lost(self, reason: str) -> None:
        """I/O thread: the connection or the reply channel is gone, and the reply queue with
        it. RR-20.1: every pending call and gather ends at once, as lost (not as a timeout)."""
        with self._lock:
            self._down, self._losses = reason, self._losses + 1
            if self._policy.on_connection_lost == "end_lost":
                calls, self._calls = list(self._calls.values()), OrderedDict()
                gathers, self._gathers = list(self._gathers.values()), {}
            else:
                calls, gathers = [], []  # "wait": RR-20.1 forbids it; they wait out their timeouts
        for call in calls:
            call.complete(error=ConnectionLost(reason))
        for gather in gathers:
            gather.lose(reason)
        try:
            self._observer.connection_lost(reason)
        except Exception:
            log.exception("connection_lost observer failed")
        if not self._io.recovering:
            with self._lock:
                self._back.notify_all()  # calls waiting for a recovery that will not come

    def _recovered(self) -> None:
        """I/O thread, on a new connection: a new reply queue (the old one died with the old
        connection), which later requests name (RR-20.3)."""
        queue = self._open_channels()
        with self._lock:
            self._reply_queue, self._down = queue, None
            self._back.notify_all()
        try:
            self._observer.recovered()
        except Exception:
            log.exception("recovered observer failed")

    def _count_unmatched(
        self, properties: pika.BasicProperties, for_gather: bool = False, counted: Optional[bool] = None
    ) -> None:
        """Count a dropped reply in Unmatched (RR-8, SG-8; ``counted`` given: SG-10) and tell the observer."""
        if counted is None:
            counted = self._policy.count_gather_unmatched if for_gather else self._policy.count_unmatched
        if counted:  # RR-8 / SG-8 / SG-10 forbid False: the observer hears of it, the counter does not
            self.unmatched.increment()
        response_message_id = wire.header(properties.headers, wire.RESPONSE_MESSAGE_ID_HEADER)
        try:
            self._observer.unmatched(properties.correlation_id, response_message_id)
        except Exception:
            log.exception("unmatched observer failed")


def _remember(ids: "OrderedDict[str, None]", key: str) -> None:
    """Add ``key`` to a bounded record of ids, forgetting the oldest past REMEMBERED_IDS."""
    ids[key] = None
    if len(ids) > REMEMBERED_IDS:
        ids.popitem(last=False)
