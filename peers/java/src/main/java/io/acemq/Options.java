package io.acemq;

import java.time.Duration;
import java.util.Objects;

/**
 * A {@link Requester}'s default request timeout and a {@link Responder}'s number of reply
 * attempts; {@link #defaults()} is what the wire spec says (30 s, RR-9; 3 attempts, RR-14).
 */
public record Options(Duration defaultTimeout, int maxAttempts) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    public static final int DEFAULT_MAX_ATTEMPTS = 3;

    public Options {
        Objects.requireNonNull(defaultTimeout, "defaultTimeout");
        if (defaultTimeout.isNegative() || defaultTimeout.isZero()) {
            throw new IllegalArgumentException("defaultTimeout must be positive");
        }
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1");
        }
    }

    public static Options defaults() {
        return new Options(DEFAULT_TIMEOUT, DEFAULT_MAX_ATTEMPTS);
    }

    public Options withDefaultTimeout(Duration value) {
        return new Options(value, maxAttempts);
    }

    public Options withMaxAttempts(int value) {
        return new Options(defaultTimeout, value);
    }
}
