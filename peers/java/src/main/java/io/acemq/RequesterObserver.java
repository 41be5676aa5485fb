package io.acemq;

/** Hooks into a requester, for logs and metrics. Every method defaults to doing nothing. */
public interface RequesterObserver {
    /** A reply was counted Unmatched and dropped (RR-8, SG-8). */
    default void unmatched(String correlationId) {
    }

    /**
     * As {@link #unmatched(String)}, with the reply's {@code responseMessageId} header too
     * ({@code null} when absent): a requester cannot tell a stray request reply from a stray
     * gather reply, so both ids are given. By default it calls {@link #unmatched(String)}.
     */
    default void unmatched(String correlationId, String responseMessageId) {
        unmatched(correlationId);
    }
}
