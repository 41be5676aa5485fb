package io.acemq;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * How a {@link Responder} behaves where the wire spec could be got wrong: one field per
 * responder knob of the conformance catalogue, each defaulting to the spec's value.
 * Resolved once when the responder starts; its code paths read these fields and nothing else.
 *
 * <p>The knobs that are numbers: {@code defaultMaxAttempts}, the attempts at an undeliverable
 * reply when the responder was built without {@link Options} (RR-14: 3); {@code attemptBase},
 * added to {@code x-delivery-count} (absent: 0) to number an attempt (RR-14: 1). The string:
 * {@code stripPrefix}, the header prefix removed before the handler (RR-5: {@code x-acemq-}).
 * The booleans {@code retryFailures} (RR-11: false), {@code countUnanswerable} (RR-12: true) and
 * {@code passSpecHeaders}, whether the handler is shown the spec's own {@code acemq-*} headers
 * (RR-5.2: true; only {@code x-acemq-*} is the engine's to strip); {@code recoverConnection},
 * whether the responder's connection recovers after it was lost, its queues declared and
 * consumed again (RR-20.2).
 *
 * <p>Package-private on purpose: a service always gets {@link #SPEC}. Only the conformance
 * peer (which ships its own class in this package) chooses another policy.
 */
record ResponderPolicy(
        List<ReplyAddress.Source> readOrder,
        ReplyCorrelationFrom replyCorrelationFrom,
        boolean stripEngineHeaders,
        HandlerFailure handlerFailure,
        boolean deadLetterFailures,
        boolean countFailuresAnswered,
        Unanswerable unanswerable,
        UndeliverableReply undeliverableReply,
        AnsweredTiming answeredTiming,
        boolean rollbackAnswered,
        CountersCreated countersCreated,
        DlqQueueType dlqQueueType,
        boolean responseMessageId,
        HeaderTypes headerTypes,
        int defaultMaxAttempts,
        int attemptBase,
        FailureReplyDelivery failureReplyDelivery,
        MalformedRequest malformedRequest,
        BytesAddress bytesAddress,
        ReplyContentType replyContentType,
        String stripPrefix,
        FailureBody failureBody,
        ErrorTypeName errorTypeName,
        boolean retryFailures,
        boolean countUnanswerable,
        LastAttempt lastAttempt,
        RequestQueue requestQueue,
        boolean passSpecHeaders,
        DeadLetterCopy deadLetterCopy,
        DirectReplyTo directReplyTo,
        boolean recoverConnection,
        AckTiming ackTiming) {

    /**
     * When a request is acknowledged (RR-20.4): once its handler ran and its reply was settled
     * (RR-14), or as soon as it is delivered (a request held when the connection is lost is gone).
     */
    enum AckTiming { AFTER_HANDLING, ON_DELIVERY }

    /**
     * A reply to amq.rabbitmq.reply-to.* (RR-14.5): at most once (no mandatory, never retried),
     * or checked like any reply (mandatory, retried on the broker's return: breaks RR-14.5).
     */
    enum DirectReplyTo { AT_MOST_ONCE, CHECKED }

    /** What the reply's correlation_id copies (RR-4.2: the request's id, its message_id else its correlation_id). */
    enum ReplyCorrelationFrom { REQUEST_ID, MESSAGE_ID, CORRELATION_ID }

    /** A throwing handler: a failure reply, or nothing sent and the request retried (RR-10). */
    enum HandlerFailure { ERROR_REPLY, RETRY }

    /** A request with no reply address (RR-12). */
    enum Unanswerable { ACCEPT, DEAD_LETTER }

    /** A reply publish that failed (RR-14). */
    enum UndeliverableReply { REQUEUE, ACK }

    /** When the counters come to exist (RR-16). */
    enum CountersCreated { BEFORE_SUBSCRIBE, AFTER_FIRST_DELIVERY }

    /** The queue type {queue}.dlq is declared with (RR-17). */
    enum DlqQueueType {
        QUORUM("quorum"),
        CLASSIC("classic");

        final String argument;

        DlqQueueType(String argument) {
            this.argument = argument;
        }
    }

    /** Strict fails a request carrying a bool, double, table or array header (WF-1). */
    enum HeaderTypes { LENIENT, STRICT }

    /**
     * Whether a failure reply's delivery is checked like any reply's (RR-14), or taken as
     * delivered whatever the broker said (breaks RR-14.1: a failure reply is a reply).
     */
    enum FailureReplyDelivery { CHECKED, UNCHECKED }

    /**
     * A request whose body is not JSON: a MalformedRequest failure reply and dead-letter, dropped,
     * or the failure reply alone (RR-19.2 forbids the last two).
     */
    enum MalformedRequest { FAIL_REPLY, DROP, REPLY_ONLY }

    /** What a dead-letter copy keeps of the request: every property (RR-11.4), or only its body, message_id and headers. */
    enum DeadLetterCopy { FULL, ID_AND_HEADERS }

    /** An acemq-reply-to written as a byte array (RR-2): read as UTF-8, or taken as absent. */
    enum BytesAddress { ACCEPT, IGNORE }

    /** The content_type of a reply (RR-4): application/json, or none at all. */
    enum ReplyContentType { APPLICATION_JSON, NONE }

    /** The body of a failure reply (RR-10): empty, or {@code {"error": the acemq-error text}}. */
    enum FailureBody { EMPTY, JSON }

    /** The ExceptionType of acemq-error (RR-10): the unqualified name, or the qualified one. */
    enum ErrorTypeName { SIMPLE, QUALIFIED }

    /** The last attempt at an undeliverable reply (RR-14): dead-letter the request, or ack it. */
    enum LastAttempt { DEAD_LETTER, ACK }

    /**
     * The request queue (RR-17): declared quorum, or looked up passively and used as it is,
     * declared classic (no {@code x-queue-type}) only when missing. The latter breaks RR-17.1:
     * a classic queue's requests carry no {@code x-delivery-count}.
     */
    enum RequestQueue {
        QUORUM(Map.of("x-queue-type", "quorum")),
        CLASSIC_IF_MISSING(Map.of());

        /** The arguments the queue is declared with when it is declared. */
        final Map<String, Object> arguments;

        RequestQueue(Map<String, Object> arguments) {
            this.arguments = arguments;
        }
    }

    /**
     * When Answered is counted (RR-15): before the reply is published, or once the broker
     * confirmed it (a caller holding the reply may then still read a count without it).
     */
    enum AnsweredTiming { BEFORE_PUBLISH, AFTER_CONFIRM }

    /** What the wire spec says: every knob at its catalogue default. */
    static final ResponderPolicy SPEC = new ResponderPolicy(
            List.of(ReplyAddress.Source.HEADER, ReplyAddress.Source.NATIVE), ReplyCorrelationFrom.REQUEST_ID,
            true, HandlerFailure.ERROR_REPLY, true, false, Unanswerable.ACCEPT, UndeliverableReply.REQUEUE,
            AnsweredTiming.BEFORE_PUBLISH, true, CountersCreated.BEFORE_SUBSCRIBE, DlqQueueType.QUORUM,
            true, HeaderTypes.LENIENT, Options.DEFAULT_MAX_ATTEMPTS, 1, FailureReplyDelivery.CHECKED,
            MalformedRequest.FAIL_REPLY, BytesAddress.ACCEPT, ReplyContentType.APPLICATION_JSON,
            Headers.ENGINE_PREFIX, FailureBody.EMPTY, ErrorTypeName.SIMPLE, false, true, LastAttempt.DEAD_LETTER,
            RequestQueue.QUORUM, true, DeadLetterCopy.FULL, DirectReplyTo.AT_MOST_ONCE, true,
            AckTiming.AFTER_HANDLING);

    ResponderPolicy {
        readOrder = List.copyOf(readOrder);
        Objects.requireNonNull(replyCorrelationFrom, "replyCorrelationFrom");
        Objects.requireNonNull(handlerFailure, "handlerFailure");
        Objects.requireNonNull(unanswerable, "unanswerable");
        Objects.requireNonNull(undeliverableReply, "undeliverableReply");
        Objects.requireNonNull(answeredTiming, "answeredTiming");
        Objects.requireNonNull(countersCreated, "countersCreated");
        Objects.requireNonNull(dlqQueueType, "dlqQueueType");
        Objects.requireNonNull(headerTypes, "headerTypes");
        Objects.requireNonNull(failureReplyDelivery, "failureReplyDelivery");
        Objects.requireNonNull(malformedRequest, "malformedRequest");
        Objects.requireNonNull(bytesAddress, "bytesAddress");
        Objects.requireNonNull(replyContentType, "replyContentType");
        Objects.requireNonNull(failureBody, "failureBody");
        Objects.requireNonNull(errorTypeName, "errorTypeName");
        Objects.requireNonNull(lastAttempt, "lastAttempt");
        Objects.requireNonNull(requestQueue, "requestQueue");
        Objects.requireNonNull(deadLetterCopy, "deadLetterCopy");
        Objects.requireNonNull(directReplyTo, "directReplyTo");
        Objects.requireNonNull(ackTiming, "ackTiming");
        if (stripPrefix == null || stripPrefix.isEmpty()) {
            throw new IllegalArgumentException("stripPrefix must name a header prefix");
        }
        if (defaultMaxAttempts < 1) {
            throw new IllegalArgumentException("defaultMaxAttempts must be at least 1");
        }
        if (attemptBase < 0) {
            throw new IllegalArgumentException("attemptBase must not be negative");
        }
    }
}
