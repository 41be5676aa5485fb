package io.acemq;

import java.util.Objects;

/**
 * How a {@link Requester} behaves where the wire spec could be got wrong: one field per
 * requester knob of the conformance catalogue, each defaulting to the spec's value.
 * Resolved once when the requester opens; its code paths read these fields and nothing else.
 *
 * <p>The knobs that are not an enum's: {@code defaultTimeoutMs}, the timeout of a call given
 * none when the requester was opened without {@link Options} (RR-9: 30 s);
 * {@code countGatherTimeouts}, whether a gather ending at its timeout counts in TimedOut (the
 * spec: never, TimedOut counts requests); {@code honourGatherReturns}, whether a returned gather
 * copy ends the gather as refused (RR-13 for gathers), as {@code honourReturns} does a request;
 * {@code countUnmatched} and {@code countGatherUnmatched}, whether a reply nobody takes counts in
 * Unmatched (RR-8, SG-8; its observer hears of it either way); {@code exclusiveReplyQueue}
 * (RR-7); {@code publishCopies}, the messages publishRequest publishes (SG-2: 1);
 * {@code multiCopiesWithoutCount}, the copies sendRequestMulti publishes given no count (SG-2: 1);
 * {@code countGatherFailures}, whether a failure reply a pending gather dropped counts in
 * Unmatched (SG-10), apart from {@code countGatherUnmatched} (SG-8); {@code recoverConnection},
 * whether the requester's connection recovers after it was lost and a new reply queue is
 * consumed (RR-20.3).
 *
 * <p>Package-private on purpose: a service always gets {@link #SPEC}. Only the conformance
 * peer (which ships its own class in this package) chooses another policy.
 */
record RequesterPolicy(
        boolean writeHeaderAddress,
        boolean writeNativeAddress,
        boolean headerAddressAsBytes,
        boolean replyQueuePerRequest,
        boolean explicitReplyQueueType,
        MatchRepliesBy matchRepliesBy,
        boolean countTimeouts,
        boolean readErrorHeader,
        boolean honourReturns,
        LongShortString longShortString,
        UndecodableReply undecodableReply,
        GatherCopyIds gatherCopyIds,
        MultiCopies multiCopies,
        GatherDemuxBy gatherDemuxBy,
        boolean gatherResolvesEarly,
        GatherShortfall gatherShortfall,
        GatherMissingCount gatherMissingCount,
        GatherStrayReply gatherStrayReply,
        long defaultTimeoutMs,
        GatherDefaultCorrelation gatherDefaultCorrelation,
        boolean countGatherTimeouts,
        PendingAtClose pendingAtClose,
        boolean honourGatherReturns,
        TypeCarrier typeCarrier,
        NativeAddress nativeAddress,
        boolean countUnmatched,
        UnmatchedReply unmatchedReply,
        TimeoutOutcome timeoutOutcome,
        UnknownReplyHeaders unknownReplyHeaders,
        boolean exclusiveReplyQueue,
        boolean countGatherUnmatched,
        int publishCopies,
        int multiCopiesWithoutCount,
        RequestDeadline requestDeadline,
        GatherDeadline gatherDeadline,
        GatherFailureReply gatherFailureReply,
        boolean countGatherFailures,
        RequestCorrelationId requestCorrelationId,
        OnConnectionLost onConnectionLost,
        boolean recoverConnection) {

    /**
     * What a call or gather pending when the requester's connection is lost does (RR-20.1):
     * ends at once with {@link ConnectionLostException}, or waits out its timeout.
     */
    enum OnConnectionLost { END_LOST, WAIT }

    /** A request's correlation_id (RR-8.4): its message_id, or none (breaks RR-8.4). */
    enum RequestCorrelationId { MESSAGE_ID, NONE }

    /** How a reply finds its caller (RR-8). */
    enum MatchRepliesBy { CORRELATION_ID, OLDEST_WAITER }

    /** A short-string property over 255 bytes (RR-18). */
    enum LongShortString { REFUSE, TRUNCATE }

    /** A reply whose body is not JSON (RR-19). */
    enum UndecodableReply { DECODE_ERROR, DROP }

    /** The message_id of sendRequestMulti's copies (SG-1). */
    enum GatherCopyIds { SHARED, DISTINCT }

    /** How many copies sendRequestMulti publishes (SG-2). */
    enum MultiCopies { EXPECTED_COUNT, ONE }

    /** Which reply field finds the pending gather (SG-4). */
    enum GatherDemuxBy { RESPONSE_MESSAGE_ID, CORRELATION_ID }

    /** A gather short of its count at the timeout (SG-6). */
    enum GatherShortfall { REJECT, RESOLVE }

    /** A gather without expectedReplyCount: wait the whole budget, or take it as 1 (SG-7). */
    enum GatherMissingCount { BUDGET, ONE, COPIES }

    /** A gather reply for no pending gather (SG-8). */
    enum GatherStrayReply { UNMATCHED, OLDEST_GATHER }

    /** The correlation_id of a gather's copies when the caller gives none (SG-1). */
    enum GatherDefaultCorrelation { REQUEST_MESSAGE_ID, NONE }

    /** What a call pending when its requester closes does (RR-9): end at once as closed, or wait out its timeout. */
    enum PendingAtClose { END_CLOSED, WAIT }

    /** Where a request's or gather's type travels (SG-2): the AMQP type property, or a header named type. */
    enum TypeCarrier { PROPERTY, HEADER }

    /**
     * What {@code reply_to} holds (RR-1, RR-3): the reply queue, its name with {@code .stale}
     * appended, or an empty string (amqp-client writes a non-null empty property as present,
     * length 0).
     */
    enum NativeAddress { REPLY_QUEUE, STALE, EMPTY }

    /** A reply that finds no pending call (RR-8): dropped, or handed to the oldest call still waiting. */
    enum UnmatchedReply { DROP, OLDEST_WAITER }

    /** How a call not answered in time ends (RR-9): the timeout outcome, or a reply with a null body. */
    enum TimeoutOutcome { TIMEOUT, NULL_REPLY }

    /**
     * A reply carrying a header it does not know (RR-5): ignored, or a decode error. Known are
     * acemq-error, responseMessageId and every {@code x-} name (broker and client headers).
     */
    enum UnknownReplyHeaders { IGNORE, FAIL }

    /** When a request not answered gives up (RR-9): at its timeout, or half its timeout later. */
    enum RequestDeadline { TIMEOUT, LATE }

    /** A gather's timeout (SG-9): runs from the publish, or starts again at every reply it keeps. */
    enum GatherDeadline { FIXED, RESTART_PER_REPLY }

    /**
     * A reply carrying acemq-error for a pending gather (SG-10): dropped (Unmatched), or kept
     * in the gather as a null reply that counts toward expectedReplyCount.
     */
    enum GatherFailureReply { DROP, KEEP }

    /** What the wire spec says: every knob at its catalogue default. */
    static final RequesterPolicy SPEC = new RequesterPolicy(
            true, true, false, false, true, MatchRepliesBy.CORRELATION_ID, true, true, true,
            LongShortString.REFUSE, UndecodableReply.DECODE_ERROR, GatherCopyIds.SHARED,
            MultiCopies.EXPECTED_COUNT, GatherDemuxBy.RESPONSE_MESSAGE_ID, true,
            GatherShortfall.REJECT, GatherMissingCount.BUDGET, GatherStrayReply.UNMATCHED,
            Options.DEFAULT_TIMEOUT.toMillis(), GatherDefaultCorrelation.REQUEST_MESSAGE_ID, false,
            PendingAtClose.END_CLOSED, true, TypeCarrier.PROPERTY, NativeAddress.REPLY_QUEUE, true,
            UnmatchedReply.DROP, TimeoutOutcome.TIMEOUT, UnknownReplyHeaders.IGNORE, true, true, 1, 1,
            RequestDeadline.TIMEOUT, GatherDeadline.FIXED, GatherFailureReply.DROP, true,
            RequestCorrelationId.MESSAGE_ID, OnConnectionLost.END_LOST, true);

    RequesterPolicy {
        Objects.requireNonNull(matchRepliesBy, "matchRepliesBy");
        Objects.requireNonNull(requestCorrelationId, "requestCorrelationId");
        Objects.requireNonNull(onConnectionLost, "onConnectionLost");
        Objects.requireNonNull(longShortString, "longShortString");
        Objects.requireNonNull(undecodableReply, "undecodableReply");
        Objects.requireNonNull(gatherCopyIds, "gatherCopyIds");
        Objects.requireNonNull(multiCopies, "multiCopies");
        Objects.requireNonNull(gatherDemuxBy, "gatherDemuxBy");
        Objects.requireNonNull(gatherShortfall, "gatherShortfall");
        Objects.requireNonNull(gatherMissingCount, "gatherMissingCount");
        Objects.requireNonNull(gatherStrayReply, "gatherStrayReply");
        Objects.requireNonNull(gatherDefaultCorrelation, "gatherDefaultCorrelation");
        Objects.requireNonNull(pendingAtClose, "pendingAtClose");
        Objects.requireNonNull(typeCarrier, "typeCarrier");
        Objects.requireNonNull(nativeAddress, "nativeAddress");
        Objects.requireNonNull(unmatchedReply, "unmatchedReply");
        Objects.requireNonNull(timeoutOutcome, "timeoutOutcome");
        Objects.requireNonNull(unknownReplyHeaders, "unknownReplyHeaders");
        Objects.requireNonNull(requestDeadline, "requestDeadline");
        Objects.requireNonNull(gatherDeadline, "gatherDeadline");
        Objects.requireNonNull(gatherFailureReply, "gatherFailureReply");
        if (defaultTimeoutMs < 1) {
            throw new IllegalArgumentException("defaultTimeoutMs must be positive");
        }
        if (publishCopies < 1 || multiCopiesWithoutCount < 0) {
            throw new IllegalArgumentException("publishCopies must be at least 1, multiCopiesWithoutCount not negative");
        }
    }
}
