"""The responder: consumes a request queue, runs a handler, replies.

Counters exist before the consumer is registered (RR-16). A reply is counted
in ``answered`` before it is published and taken back if the publish fails
(RR-15); a failed publish sends the request round the retry policy counted by
the quorum queue's ``x-delivery-count`` (RR-14); a handler failure is sent
back as ``acemq-error`` and the request dead-lettered once (RR-10, RR-11).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import pika

from . import wire
from .connection import ConnectionThread
from .counters import Counter
from .hooks import ResponderObserver
from .mutants import Mutant, Side, check_mutant, check_profile, header_only
from .publishing import PublishFailed, Publisher, encodable_headers

log = logging.getLogger("acemq.responder")

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_CONCURRENCY = 16
# The answered-after-publish mutant widens a real race window to this, so the
# suite catches it every time.
MUTANT_WINDOW_SECONDS = 1.0
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


@dataclass(frozen=True)
class _Delivery:
    tag: int
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
        url: str,
        queue: str,
        handler: Handler,
        *,
        bind: Optional[Binding] = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        profile: Optional[str] = None,
        mutant: Optional[str] = None,
        observer: Optional[ResponderObserver] = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        name: str = "acemq-responder",
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.queue = queue
        self.dead_letter_queue = f"{queue}.dlq"
        self.profile = check_profile(profile)
        self.mutant = check_mutant(mutant, Side.RESPONDER)
        self.max_attempts = max_attempts
        self._handler = handler
        self._bind = bind
        self._observer = observer or ResponderObserver()
        self._concurrency = concurrency
        self._io = ConnectionThread(url, name)
        self._publisher = Publisher(self._io)
        self._workers = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"{name}-handler")
        self._consumer_tag: Optional[str] = None
        self._lazy_counters_made = False  # only for the counters-after-subscribe mutant
        self._stopped = threading.Event()
        # RR-16: the counters exist, at zero, before anything is consumed.
        self.answered = Counter()
        self.unanswerable = Counter()

    @classmethod
    def start(cls, url: str, queue: str, handler: Handler, **options: Any) -> "Responder":
        """Declare the queue and its dead-letter queue, bind, and register the consumer."""
        responder = cls(url, queue, handler, **options)
        responder._start()
        return responder

    def stop(self) -> None:
        """Cancel the consumer and close the connection; unacknowledged requests go back to the queue."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        try:
            self._io.call(self._cancel, timeout=5.0)
        except Exception as exc:
            log.debug("cancel on stop failed: %r", exc)
        self._io.close()
        self._workers.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "Responder":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- start-up (I/O thread) ---------------------------------------------

    def _start(self) -> None:
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
        quorum = {"x-queue-type": "quorum"}
        self._channel.queue_declare(self.queue, durable=True, arguments=quorum)
        # RR-17: the dead-letter queue is quorum too; the classic-dlq mutant breaks that.
        dlq_type = {"x-queue-type": "classic"} if self.mutant is Mutant.CLASSIC_DLQ else quorum
        self._channel.queue_declare(self.dead_letter_queue, durable=True, arguments=dlq_type)
        if self._bind is not None:
            self._channel.queue_bind(self.queue, self._bind.exchange, self._bind.routing_key)
        self._channel.basic_qos(prefetch_count=self._concurrency)
        self._consumer_tag = self._channel.basic_consume(self.queue, self._on_request)

    def _cancel(self) -> None:
        if self._consumer_tag is not None and self._channel.is_open:
            self._channel.basic_cancel(self._consumer_tag)

    # -- one request ------------------------------------------------------

    def _on_request(self, _channel: Any, method: Any, properties: pika.BasicProperties, body: bytes) -> None:
        headers = properties.headers or {}
        address = wire.choose_reply_address(
            headers,
            properties.reply_to,
            header_only=header_only(self.profile),
            native_first=self.mutant is Mutant.NATIVE_FIRST,
        )
        if address is None:
            self._on_unanswerable(method.delivery_tag, properties, body)
            return
        delivery = _Delivery(method.delivery_tag, properties, body, address, wire.attempt_number(headers))
        self._workers.submit(self._handle, delivery)

    def _on_unanswerable(self, tag: int, properties: pika.BasicProperties, body: bytes) -> None:
        # RR-12: the handler is not run; its result could go nowhere.
        self.unanswerable.increment()
        if self.mutant is Mutant.DEAD_LETTER_UNANSWERABLE:
            if not self._dead_letter(tag, properties, body, UNANSWERABLE_REASON):
                return
        else:
            self._channel.basic_ack(tag)
        self._observer.unanswerable(properties.message_id)

    def _handle(self, delivery: _Delivery) -> None:
        """Worker thread: run the handler, then hand the outcome back to the I/O thread."""
        failure: Optional[str] = None
        payload = b""
        malformed = wire.first_strict_header(delivery.properties.headers)
        if malformed is not None and self.mutant is Mutant.STRICT_HEADER_TYPES:
            # The mutant breaks WF-1: a header of a type it does not expect fails the request.
            self._io.submit(self._fail, delivery, f"MalformedHeader: {malformed}")
            return
        try:
            request = Request(
                body=wire.decode_body(delivery.body),
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
            failure = wire.failure_text(exc)
        if failure is None:
            self._io.submit(self._answer, delivery, payload)
        else:
            self._io.submit(self._fail, delivery, failure)

    def _shown_headers(self, headers: Optional[dict[str, Any]]) -> dict[str, Any]:
        if self.mutant is Mutant.NO_STRIP:
            return dict(headers or {})
        return wire.strip_engine_headers(headers)

    # -- replies and dead letters (I/O thread) -------------------------------

    def _reply_properties(self, delivery: _Delivery, failure: Optional[str]) -> pika.BasicProperties:
        headers: dict[str, Any] = {}
        # SG-3: the no-response-message-id mutant leaves the header off.
        if delivery.message_id is not None and self.mutant is not Mutant.NO_RESPONSE_MESSAGE_ID:
            headers[wire.RESPONSE_MESSAGE_ID_HEADER] = delivery.message_id
        if failure is not None:
            headers[wire.ERROR_HEADER] = failure
        correlation_id = delivery.message_id
        if self.mutant is Mutant.CORRELATION_FROM_CORRELATION_ID:
            correlation_id = delivery.properties.correlation_id  # the mutant breaks RR-4
        return pika.BasicProperties(
            content_type=wire.CONTENT_TYPE,
            correlation_id=correlation_id,
            headers=headers,
        )

    def _answer(self, delivery: _Delivery, payload: bytes) -> None:
        if self._stopped.is_set():
            return  # the connection is going; the broker requeues the request
        count_first = self.mutant is not Mutant.ANSWERED_AFTER_PUBLISH
        if self.mutant is Mutant.COUNTERS_AFTER_SUBSCRIBE and not self._lazy_counters_made:
            # counters-after-subscribe mutant (RR-16): the counter is made lazily, once
            # the first delivery has been handled, so that delivery is never counted.
            self._lazy_counters_made = True
            count_first = False
        elif count_first:
            self.answered.increment()  # RR-15: before the caller can hold the reply
        try:
            self._publisher.publish("", delivery.reply_to.queue, self._reply_properties(delivery, None), payload)
        except PublishFailed as exc:
            if count_first and self.mutant is not Mutant.NO_ROLLBACK:
                self.answered.decrement()
            self._undeliverable(delivery, exc.detail)
            return
        if self.mutant is Mutant.ANSWERED_AFTER_PUBLISH:
            timer = threading.Timer(MUTANT_WINDOW_SECONDS, self.answered.increment)
            timer.daemon = True
            timer.start()
        self._channel.basic_ack(delivery.tag)
        self._observer.replied(delivery.message_id, None)

    def _fail(self, delivery: _Delivery, failure: str) -> None:
        if self._stopped.is_set():
            return
        if self.mutant is Mutant.COUNTS_FAILURES:
            self.answered.increment()
        try:
            self._publisher.publish("", delivery.reply_to.queue, self._reply_properties(delivery, failure), b"")
        except PublishFailed as exc:
            self._undeliverable(delivery, exc.detail)
            return
        self._observer.replied(delivery.message_id, failure)
        if self.mutant is Mutant.NO_DLQ_ON_FAILURE:
            self._channel.basic_ack(delivery.tag)
            return
        # RR-11: dead-lettered once with the same text, never retried.
        self._dead_letter(delivery.tag, delivery.properties, delivery.body, failure)

    def _undeliverable(self, delivery: _Delivery, detail: str) -> None:
        self._observer.reply_failed(delivery.message_id, delivery.attempt, detail)
        if self.mutant is Mutant.ACKS_UNDELIVERABLE:
            # The mutant breaks RR-14: the request is acknowledged into nowhere.
            self._channel.basic_ack(delivery.tag)
        elif delivery.attempt >= self.max_attempts:
            self._dead_letter(delivery.tag, delivery.properties, delivery.body, wire.undeliverable_reason(detail))
        else:
            # requeue given explicitly: not every client defaults to it (RR-14).
            self._channel.basic_nack(delivery.tag, requeue=True)

    def _dead_letter(self, tag: int, properties: pika.BasicProperties, body: bytes, reason: str) -> bool:
        """Publish the request to ``{queue}.dlq`` and ack it; False (and requeued) if that fails."""
        headers = encodable_headers(properties.headers)
        headers[wire.DEAD_LETTER_REASON_HEADER] = reason
        dead = pika.BasicProperties(
            content_type=properties.content_type,
            content_encoding=properties.content_encoding,
            headers=headers,
            delivery_mode=properties.delivery_mode,
            priority=properties.priority,
            correlation_id=properties.correlation_id,
            reply_to=properties.reply_to,
            message_id=properties.message_id,
            timestamp=properties.timestamp,
            type=properties.type,
            app_id=properties.app_id,
        )
        try:
            self._publisher.publish("", self.dead_letter_queue, dead, body)
        except PublishFailed as exc:
            log.error("dead-letter of %s to %s failed: %s", properties.message_id, self.dead_letter_queue, exc)
            self._channel.basic_nack(tag, requeue=True)
            return False
        self._channel.basic_ack(tag)
        self._observer.dead_lettered(properties.message_id, reason)
        return True
