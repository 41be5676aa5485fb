package io.acemq;

/** Hooks into a responder, for logs and metrics. Every method defaults to doing nothing. */
public interface ResponderObserver {
    /** The handler is about to run. */
    default void handled(IncomingRequest request) {
    }

    /** A reply was confirmed and not returned; {@code failure} is its {@code acemq-error} or null. */
    default void replied(String messageId, String failure) {
    }

    /** A reply publish was returned, nacked or failed (RR-14). */
    default void replyFailed(String messageId, int attempt, String error) {
    }

    /** The request was published to {@code {queue}.dlq} and acknowledged. */
    default void deadLettered(String messageId, String reason) {
    }

    /** A request without a reply address was counted and acknowledged (RR-12). */
    default void unanswerable(String messageId) {
    }
}
