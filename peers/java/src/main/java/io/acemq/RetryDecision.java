package io.acemq;

/** What a responder does with a request whose reply publish failed (RR-14). */
enum RetryDecision {
    /** {@code basic.nack} with requeue: the broker delivers it again, one attempt later. */
    REQUEUE,
    /** The last attempt: to {@code {queue}.dlq} with an {@code UndeliverableReply: } reason. */
    DEAD_LETTER;

    /** Requeue while {@code attempt < maxAttempts}, else dead-letter. */
    static RetryDecision after(int attempt, int maxAttempts) {
        return attempt < maxAttempts ? REQUEUE : DEAD_LETTER;
    }
}
