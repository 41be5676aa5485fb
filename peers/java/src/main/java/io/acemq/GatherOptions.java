package io.acemq;

import java.time.Duration;

/**
 * Options of one scatter-gather: {@code expectedReplyCount} ({@code null} for "whatever arrives
 * by the timeout"), the timeout ({@code null}: the requester's default), and the business
 * correlation id shared by every copy ({@code null} or empty: the gather's requestMessageId, SG-1).
 */
public record GatherOptions(Integer expectedReplyCount, Duration timeout, String correlationId) {
    public GatherOptions {
        if (expectedReplyCount != null && expectedReplyCount < 1) {
            throw new IllegalArgumentException("expectedReplyCount must be at least 1");
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout must be positive");
        }
    }

    /** No count, the requester's default timeout, the requestMessageId as correlation id. */
    public static GatherOptions defaults() {
        return new GatherOptions(null, null, null);
    }

    public static GatherOptions within(Duration timeout) {
        return new GatherOptions(null, timeout, null);
    }

    public GatherOptions expecting(int count) {
        return new GatherOptions(count, timeout, correlationId);
    }

    public GatherOptions correlatedBy(String value) {
        return new GatherOptions(expectedReplyCount, timeout, value);
    }
}
