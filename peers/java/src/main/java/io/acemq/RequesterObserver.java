package io.acemq;

/** Hooks into a requester, for logs and metrics. Every method defaults to doing nothing. */
public interface RequesterObserver {
    /** A reply was counted Unmatched and dropped (RR-8, SG-8). */
    default void unmatched(String correlationId) {
    }
}
