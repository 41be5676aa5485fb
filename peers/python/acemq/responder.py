"""The responder: consumes a request queue, runs a handler, replies.

Counters exist before the consumer is registered (RR-16). A reply is counted
in ``answered`` before it is published and taken back if the publish fails
(RR-15); a failed publish sends the request round the retry policy counted by
the quorum queue's ``x-delivery-count`` (RR-14); a handler failure is sent
back as ``acemq-error`` and the request dead-lettered once (RR-10, RR-11).

A request is acknowledged only once its handler ran and its reply was settled, so one held
when the connection is lost goes back to the queue (RR-20.4). The responder then reconnects
by itself under the same connection name (pika has no recovery: ``ConnectionThread`` does
it), declares its queues again and consumes again (RR-20.2); what it was still doing for a
delivery of the lost connection is dropped (that delivery comes again), counters carry on.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import pika
from pika import exceptions as px

from . import wire
from .connection import Brokers, ConnectionThread
from .counters import Counter
from ._policy import ResponderPolicy
from .hooks import ResponderObserver
from .publishing import PublishFailed, Publisher, encodable_headers

log = logging.getLogger("acemq.responder")

DEFAULT_MAX_ATTEMPTS = wire.DEFAULT_MAX_ATTEMPTS
DEFAULT_CONCURRENCY = 16
# How long stop waits for the requests whose handler has returned to be settled.
SETTLE_BOUND_SECONDS = 5.0
UNANSWERABLE_REASON = "Unanswerable: the request names no reply address"


@dataclass(frozen=True)
class Request:
    """What a handler sees of one request."""

    body: Any
    message_id: Optional[str]
    correlation_id: Optional[str]
    reply_to: str
    reply_to_source: str
    headers: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1


Handler = Callable[[Request], Any]


@dataclass(frozen=True)
class Binding:
    """Bind the request queue to ``exchange`` with ``routing_key`` (the exchange must exist)."""

    exchange: str
    routing_key: str = ""


class _Tag:
    """A delivery tag and the channel it was delivered on. After a lost connection the broker
    has taken the delivery back, and the number means nothing on the new channel (acking it
    there would close that channel), so a tag is settled on its own channel or not at all."""

    __slots__ = ("channel", "number", "acked")

    def __init__(self, channel: Any, number: int, acked: bool = False) -> None:
        self.channel, self.number = channel, number
        self.acked = acked  # acknowledged on delivery (ack_timing "on_delivery", RR-20.4 forbids it)

    # A value: the same number on the same channel is the same delivery.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tag) and other.channel is self.channel and other.number == self.number

    def __hash__(self) -> int:
        return hash((id(self.channel), self.number))

    def __repr__(self) -> str:
        return f"_Tag({self.number}{', acked' if self.acked else ''})"

    @property
    def lost(self) -> bool:
        """Whether its channel is gone without it being acknowledged: the broker requeued it."""
        return not self.acked and not self.channel.is_open


@dataclass(frozen=True)
class _Delivery:
    tag: _Tag
    properties: pika.BasicProperties
    body: bytes
    reply_to: wire.ReplyAddress
    attempt: int

    @property
    def message_id(self) -> Optional[str]:
        return self.properties.message_id


class Responder:
    """Answers the requests of one queue over its own connection. Start with ``Responder.start``."""

    def __init__(
        self,
        url: Brokers,
        queue: str,
        handler: Handler,
        *,
        bind: Optional[Binding] = None,
        max_attempts: Optional[int] = None,
        observer: Optional[ResponderObserver] = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        name: str = "acemq-responder",
        connection_name: Optional[str] = None,
    ) -> None:
        if max_attempts is not None and max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.queue = queue
        self.dead_letter_queue = f"{queue}.dlq"
        self._policy = ResponderPolicy()  # the spec; only acemq._conformance starts with another
        self._attempts_option = max_attempts
        self.max_attempts = self._resolve_max_attempts()
        self._handler = handler
        self._bind = bind
        self._observer = observer or ResponderObserver()
        self._concurrency = concurrency
        self._io = ConnectionThread(url, name, connection_name)
        self._io.on_lost = self._connection_lost
        self._io.on_recovered = self._resubscribe
        self._publisher = Publisher(self._io)
        self._workers = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"{name}-handler")
        self._consumer_tag: Optional[str] = None
        self._first_delivery_handled = False  # for counters_created: after_first_delivery
        self._stopped = threading.Event()
        # Requests whose handler has returned and that are not settled yet (ack, nack or
        # dead-letter), by delivery tag: stop waits for them before it closes.
        self._settling: set[_Tag] = set()
        self._settled = threading.Condition()
        # RR-16: the counters exist, at zero, before anything is consumed.
        self.answered = Counter()
        self.unanswerable = Counter()

    @classmethod
    def start(cls, url: Brokers, queue: str, handler: Handler, **options: Any) -> "Responder":
        """Declare the queue and its dead-letter queue, bind, and register the consumer.

        ``url`` is an AMQP URL or pika connection parameters (TLS: ``acemq.tls_parameters``),
        or a cluster's list of them, tried in order. ``connection_name`` is the name the
        broker's management UI shows for the responder's connection (and its reconnections).
        """
        return cls._start_with(url, queue, handler, ResponderPolicy(), **options)

    @classmethod
    def _start_with(cls, url: Brokers, queue: str, handler: Handler, policy: ResponderPolicy, **options: Any) -> "Responder":
        # The policy is fixed before anything is declared and never changes after.
        responder = cls(url, queue, handler, **options)
        responder._policy = policy
        responder.max_attempts = responder._resolve_max_attempts()
        responder._start()
        return responder

    def _resolve_max_attempts(self) -> int:
        """The attempts at an undeliverable reply: the owner's, else the spec's 3 (RR-14)."""
        if self._attempts_option is not None:
            return self._attempts_option
        return self._policy.default_max_attempts

    def stop(self) -> None:
        """Cancel the consumer, settle what was answered, and close the connection.

        A request whose handler has returned is settled first (acked, requeued or
        dead-lettered), within SETTLE_BOUND_SECONDS: its reply may already be with the
        caller, and closing before its ack would put it back on the queue for the next
        responder to answer a second time. Handlers still running are abandoned: the
        broker requeues their requests when the connection closes.
        """
        with self._settled:
            if self._stopped.is_set():
                return
            self._stopped.set()  # from now on a returning handler is abandoned
        try:
            self._io.call(self._cancel, timeout=5.0)
        except Exception as exc:
            log.debug("cancel on stop failed: %r", exc)
        if not self._io.in_io_thread:  # the I/O thread settles them: it cannot wait for itself
            with self._settled:
                if not self._settled.wait_for(lambda: not self._settling, SETTLE_BOUND_SECONDS):
                    log.warning("stopping the responder of %s with %d requests unsettled", self.queue, len(self._settling))
        self._io.close()
        self._workers.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "Responder":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- start-up (I/O thread) ---------------------------------------------

    def _start(self) -> None:
        self._io.recover = self._policy.recover_connection  # RR-20.2 forbids False
        self._io.start()
        try:
            self._io.call(self._subscribe)
        except BaseException:
            self._io.close()
            self._workers.shutdown(wait=False)
            raise

    def _subscribe(self) -> None:
        assert self._io.connection is not None
        self._channel = self._io.connection.channel()
        self._io.watch(self._channel)  # the broker closing it stops the responder: connection_lost
        self._declare_request_queue()
        # RR-17: the dead-letter queue is a durable quorum queue too.
        dlq_type = {"x-queue-type": self._policy.dlq_queue_type}
        self._channel.queue_declare(self.dead_letter_queue, durable=True, arguments=dlq_type)
        if self._bind is not None:
            self._channel.queue_bind(self.queue, self._bind.exchange, self._bind.routing_key)
        self._channel.basic_qos(prefetch_count=self._concurrency)
        self._consumer_tag = self._channel.basic_consume(self.queue, self._on_request)

    def _resubscribe(self) -> None:
        """I/O thread, on a new connection: declare, bind and consume again (RR-20.2)."""
        if self._stopped.is_set():
            return
        self._subscribe()
        try:
            self._observer.recovered()
        except Exception:
            log.exception("recovered observer failed")

    def _declare_request_queue(self) -> None:
        """RR-17: the request queue is a durable quorum queue."""
        if self._policy.request_queue == "quorum":
            self._channel.queue_declare(self.queue, durable=True, arguments={"x-queue-type": "quorum"})
            return
        # classic_if_missing: a passive declare that finds no queue closes its channel
        # (404 NOT_FOUND), so it asks on a throwaway one, never the consuming channel.
        assert self._io.connection is not None
        probe = self._io.connection.channel()
        try:
            probe.queue_declare(self.queue, passive=True)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code != 404:
                raise
            self._channel.queue_declare(self.queue, durable=True)  # no x-queue-type: the server's default, classic
            return
        probe.close()

    def _cancel(self) -> None:
        if self._consumer_tag is not None and self._channel.is_open:
            self._channel.basic_cancel(self._consumer_tag)

    # -- one request ------------------------------------------------------

    def _on_request(self, _channel: Any, method: Any, properties: pika.BasicProperties, body: bytes) -> None:
        if self._stopped.is_set():
            return  # not acked: the broker requeues it when the connection closes
        headers = properties.headers or {}
        policy = self._policy
        address = wire.choose_reply_address(
            headers, properties.reply_to, policy.read_order, bytes_header=policy.bytes_address == "accept"
        )
        if address is None:
            self._on_unanswerable(method.delivery_tag, properties, body)
            return
        attempt = wire.attempt_number(headers, self._policy.attempt_base)
        tag = _Tag(self._channel, method.delivery_tag)
        if policy.ack_timing == "on_delivery":
            # RR-20.4 forbids this: acked before the handler runs, the request is gone if the
            # connection is lost before the reply is out.
            self._channel.basic_ack(method.delivery_tag)
            tag.acked = True
        delivery = _Delivery(tag, properties, body, address, attempt)
        self._workers.submit(self._handle, delivery)

    def _on_unanswerable(self, number: int, properties: pika.BasicProperties, body: bytes) -> None:
        # RR-12: the handler is not run; its result could go nowhere.
        tag = _Tag(self._channel, number)
        if self._policy.count_unanswerable:  # RR-12 forbids False
            self.unanswerable.increment()
        if self._policy.unanswerable == "dead_letter":  # RR-12 forbids this
            self._dead_letter(
                tag, properties, body, UNANSWERABLE_REASON, then=lambda: self._observer.unanswerable(properties.message_id)
            )
            return
        self._ack(tag)
        self._observer.unanswerable(properties.message_id)

    def _handle(self, delivery: _Delivery) -> None:
        """Worker thread: run the handler, then hand the outcome back to the I/O thread."""
        failure: Optional[str] = None
        payload = b""
        if self._policy.header_types == "strict":
            malformed = wire.first_strict_header(delivery.properties.headers)
            if malformed is not None:
                # WF-1 forbids this: a header of a type it does not expect fails the request.
                self._settle_later(self._fail, delivery, f"MalformedHeader: {malformed}")
                return
        try:
            body = wire.decode_body(delivery.body)
        except ValueError as exc:
            # The handler is not run for a body it could not read: a failure reply, then
            # the RR-11 dead-letter with the same reason.
            if self._policy.malformed_request == "drop":
                self._settle_later(self._ack_silently, delivery)  # the defect: no reply, no dead-letter
            elif self._policy.malformed_request == "reply_only":
                # RR-19 forbids this: the failure reply, then an ack without the dead-letter.
                self._settle_later(self._fail, delivery, wire.malformed_request_text(exc), False)
            else:
                self._settle_later(self._fail, delivery, wire.malformed_request_text(exc))
            return
        try:
            request = Request(
                body=body,
                message_id=delivery.properties.message_id,
                correlation_id=delivery.properties.correlation_id,
                reply_to=delivery.reply_to.queue,
                reply_to_source=delivery.reply_to.source,
                headers=self._shown_headers(delivery.properties.headers),
                attempt=delivery.attempt,
            )
            self._observer.handled(request)
            payload = wire.encode_body(self._handler(request))
        except Exception as exc:  # the handler's failure goes back to the caller (RR-10)
            if self._policy.error_type_name == "qualified":
                failure = wire.qualified_failure_text(exc)  # RR-10.2 forbids this
            else:
                failure = wire.failure_text(exc)
        if failure is None:
            self._settle_later(self._answer, delivery, payload)
        else:
            self._settle_later(self._fail, delivery, failure)

    def _settle_later(self, settle: Callable[..., None], delivery: _Delivery, *args: Any) -> None:
        """Worker thread: hand a request whose handler has returned to the I/O thread to reply
        and settle, and hold stop until it is settled; after stop, abandon it (requeued)."""
        with self._settled:
            if self._stopped.is_set():
                return
            self._settling.add(delivery.tag)
        # Every way through ``settle`` ends in _ack or _nack_requeue, which release it; one that
        # breaks off (a lost connection) is released as lost.
        if self._io.submit(settle, delivery, *args) is False:
            self._settled_tag(delivery.tag)  # the connection is down: the broker took it back

    def _lost(self, delivery: _Delivery) -> bool:
        """I/O thread, before replying: whether the delivery's connection was lost meanwhile.
        The broker has requeued it and it comes again (RR-20.4), to be answered then, once."""
        if not delivery.tag.lost:
            return False
        log.info("request %s came on a lost connection: not answered now, it is delivered again", delivery.message_id)
        self._settled_tag(delivery.tag)
        return True

    def _settled_tag(self, tag: _Tag) -> None:
        with self._settled:
            self._settling.discard(tag)
            self._settled.notify_all()

    def _ack(self, tag: _Tag) -> None:
        try:
            if not tag.acked and tag.channel.is_open:  # a channel that is gone took it back
                tag.channel.basic_ack(tag.number)
        finally:
            self._settled_tag(tag)

    def _nack_requeue(self, tag: _Tag) -> None:
        try:
            if not tag.acked and tag.channel.is_open:
                # requeue given explicitly: not every client defaults to it.
                tag.channel.basic_nack(tag.number, requeue=True)
        finally:
            self._settled_tag(tag)

    def _shown_headers(self, headers: Optional[dict[str, Any]]) -> dict[str, Any]:
        policy = self._policy
        shown = dict(headers or {})
        if policy.strip_engine_headers:  # RR-5
            shown = wire.strip_engine_headers(shown, policy.strip_prefix)
        if not policy.pass_spec_headers:
            # RR-5 forbids this: acemq-reply-to and the other acemq-* are the handler's to see.
            shown = wire.strip_engine_headers(shown, wire.SPEC_HEADER_PREFIX)
        return shown

    # -- replies and dead letters (I/O thread) -------------------------------

    def _reply_properties(self, delivery: _Delivery, failure: Optional[str]) -> pika.BasicProperties:
        headers: dict[str, Any] = {}
        policy = self._policy
        # RR-4, SG-3: the request's id is its message_id, or its correlation_id when it has none.
        request_id = wire.request_id(delivery.message_id, delivery.properties.correlation_id)
        if request_id is not None and policy.response_message_id:  # SG-3
            headers[wire.RESPONSE_MESSAGE_ID_HEADER] = request_id
        if failure is not None:
            headers[wire.ERROR_HEADER] = failure
        correlation_id = request_id  # RR-4
        if policy.reply_correlation_from == "correlation_id":
            correlation_id = delivery.properties.correlation_id  # RR-4 forbids this
        elif policy.reply_correlation_from == "message_id":
            correlation_id = delivery.message_id  # RR-4 forbids this: a tutorial caller cannot match the reply
        content_type = None if policy.reply_content_type == "none" else wire.CONTENT_TYPE  # RR-4 forbids none
        return pika.BasicProperties(
            content_type=content_type,
            correlation_id=correlation_id,
            headers=headers,
        )

    def _publish_then(
        self,
        routing_key: str,
        properties: pika.BasicProperties,
        body: bytes,
        on_confirmed: Callable[[], None],
        on_failed: Callable[[PublishFailed], None],
        mandatory: bool = True,
    ) -> None:
        """Publish to the default exchange without waiting; continue on the I/O thread once it is settled.

        Nothing waits for a confirm, so the replies of all the handler threads are
        outstanding together. The continuation runs outside pika's frame handling
        (``later``) because it acks, nacks and publishes on the blocking channels.
        """
        confirm = self._publisher.publish("", routing_key, properties, body, mandatory=mandatory)

        def settled(done: "Future[None]") -> None:
            error = done.exception()
            if error is None:
                on_confirmed()
            elif isinstance(error, PublishFailed):
                on_failed(error)
            else:
                on_failed(PublishFailed(f"publish failed: {error!r}"))

        confirm.add_done_callback(lambda done: self._io.later(settled, done))

    def _ack_silently(self, delivery: _Delivery) -> None:
        self._ack(delivery.tag)

    def _answer(self, delivery: _Delivery, payload: bytes) -> None:
        if self._lost(delivery):
            return
        policy = self._policy
        counted = policy.answered_timing == "before_publish"
        counts_on_confirm = not counted
        if policy.counters_created == "after_first_delivery" and not self._first_delivery_handled:
            # RR-16 forbids this: counters that come to exist only once the first delivery
            # has been handled never count that delivery.
            self._first_delivery_handled = True
            counted = counts_on_confirm = False
        elif counted:
            self.answered.increment()  # RR-15: before the caller can hold the reply

        def confirmed() -> None:
            if counts_on_confirm:
                # RR-15 forbids this: the caller may hold the reply before the confirm is in.
                self.answered.increment()
            self._ack(delivery.tag)
            self._observer.replied(delivery.message_id, None)

        def failed(exc: PublishFailed) -> None:
            if counted and policy.rollback_answered:  # RR-15: taken back
                self.answered.decrement()
            self._undeliverable(delivery, exc.detail)

        if self._at_most_once(delivery):
            # RR-14: the broker cannot say whether a direct reply-to reply was delivered (3.10 to
            # 4.1 return every one, 4.2 none): sent once without mandatory, counted, acknowledged.
            self._publish_then(delivery.reply_to.queue, self._reply_properties(delivery, None), payload,
                               confirmed, lambda _exc: confirmed(), mandatory=False)
            return
        self._publish_then(delivery.reply_to.queue, self._reply_properties(delivery, None), payload, confirmed, failed)

    def _fail(self, delivery: _Delivery, failure: str, dead_letter: bool = True) -> None:
        if self._lost(delivery):
            return
        policy = self._policy
        if policy.handler_failure == "retry":
            # RR-10 forbids this: no failure reply; the request goes round the retry policy.
            self._retry_or_dead_letter(delivery, failure)
            return
        if policy.count_failures_answered:  # RR-11 forbids this
            self.answered.increment()

        def confirmed() -> None:
            self._observer.replied(delivery.message_id, failure)
            if not policy.dead_letter_failures or not dead_letter:  # RR-11 forbids this
                self._ack(delivery.tag)
                return
            if policy.retry_failures:
                # RR-11 forbids this: the request goes round the retry policy, answered each time.
                self._retry_or_dead_letter(delivery, failure)
                return
            # RR-11: dead-lettered once with the same text, never retried.
            self._dead_letter(delivery.tag, delivery.properties, delivery.body, failure)

        def failed(exc: PublishFailed) -> None:
            if policy.failure_reply_delivery == "unchecked":
                # RR-14 forbids this: a returned failure reply taken as delivered.
                confirmed()
                return
            # RR-14: the caller has no answer yet; the request goes round the retry policy.
            self._undeliverable(delivery, exc.detail)

        body = wire.encode_body({"error": failure}) if policy.failure_body == "json" else b""  # RR-10 forbids json
        if self._at_most_once(delivery):
            # RR-14: a failure reply to a direct reply-to address is at most once too.
            self._publish_then(delivery.reply_to.queue, self._reply_properties(delivery, failure), body,
                               confirmed, lambda _exc: confirmed(), mandatory=False)
            return
        self._publish_then(delivery.reply_to.queue, self._reply_properties(delivery, failure), body, confirmed, failed)

    def _at_most_once(self, delivery: _Delivery) -> bool:
        """A reply to RabbitMQ's direct reply-to (RR-14): no mandatory, never retried or dead-lettered."""
        # "checked": RR-14 forbids it: every such reply is returned, then retried and dead-lettered.
        return wire.is_direct_reply_to(delivery.reply_to.queue) and self._policy.direct_reply_to == "at_most_once"

    def _undeliverable(self, delivery: _Delivery, detail: str) -> None:
        if delivery.tag.lost:
            # The reply failed with the connection: the request is delivered again (RR-20.4).
            self._settled_tag(delivery.tag)
            return
        self._observer.reply_failed(delivery.message_id, delivery.attempt, detail)
        policy = self._policy
        if policy.undeliverable_reply == "ack":
            # RR-14 forbids this: the request is acknowledged into nowhere.
            self._ack(delivery.tag)
            return
        last = wire.retry_decision(delivery.attempt, self.max_attempts) == wire.RETRY_DEAD_LETTER
        if last and policy.last_attempt == "ack":
            # RR-14 forbids this: the last attempt is acked, not dead-lettered; the request is gone.
            self._ack(delivery.tag)
            return
        self._retry_or_dead_letter(delivery, wire.undeliverable_reason(detail))

    def _retry_or_dead_letter(self, delivery: _Delivery, reason: str) -> None:
        """RR-14: requeue for another attempt, or dead-letter on the last one."""
        if wire.retry_decision(delivery.attempt, self.max_attempts) == wire.RETRY_DEAD_LETTER:
            self._dead_letter(delivery.tag, delivery.properties, delivery.body, reason)
        else:
            self._nack_requeue(delivery.tag)

    def _connection_lost(self, reason: str) -> None:
        try:
            self._observer.connection_lost(reason)
        except Exception:
            log.exception("connection_lost observer failed")

    def _dead_letter(
        self,
        tag: _Tag,
        properties: pika.BasicProperties,
        body: bytes,
        reason: str,
        then: Optional[Callable[[], None]] = None,
    ) -> None:
        """Publish the request to ``{queue}.dlq`` and, once confirmed, ack it and run ``then``; requeued if that fails."""
        if tag.lost:
            self._settled_tag(tag)  # its connection is gone: the broker requeued it, it comes again
            return
        headers = encodable_headers(properties.headers)
        headers[wire.DEAD_LETTER_REASON_HEADER] = reason
        dead = pika.BasicProperties(
            content_type=properties.content_type,
            content_encoding=properties.content_encoding,
            headers=headers,
            delivery_mode=properties.delivery_mode,
            priority=properties.priority,
            # RR-11 forbids dropping them: the copy is the request, to be answered later.
            correlation_id=properties.correlation_id if self._policy.dead_letter_copy == "full" else None,
            reply_to=properties.reply_to if self._policy.dead_letter_copy == "full" else None,
            message_id=properties.message_id,
            timestamp=properties.timestamp,
            type=properties.type,
            app_id=properties.app_id,
        )

        def confirmed() -> None:
            self._ack(tag)
            self._observer.dead_lettered(properties.message_id, reason)
            if then is not None:
                then()

        def failed(exc: PublishFailed) -> None:
            log.error("dead-letter of %s to %s failed: %s", properties.message_id, self.dead_letter_queue, exc)
            self._nack_requeue(tag)

        self._publish_then(self.dead_letter_queue, dead, body, confirmed, failed)
