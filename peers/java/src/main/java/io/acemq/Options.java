package io.acemq;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link Requester} or {@link Responder} behaves: the release it emulates, an optional
 * deliberate defect, the default request timeout and the number of reply attempts.
 */
public record Options(Profile profile, Mutant mutant, Duration defaultTimeout, int maxAttempts) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    public static final int DEFAULT_MAX_ATTEMPTS = 3;

    public Options {
        Objects.requireNonNull(profile, "profile");
        Objects.requireNonNull(defaultTimeout, "defaultTimeout");
        if (defaultTimeout.isNegative() || defaultTimeout.isZero()) {
            throw new IllegalArgumentException("defaultTimeout must be positive");
        }
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1");
        }
    }

    public static Options defaults() {
        return new Options(Profile.CURRENT, null, DEFAULT_TIMEOUT, DEFAULT_MAX_ATTEMPTS);
    }

    public Options withProfile(Profile value) {
        return new Options(value, mutant, defaultTimeout, maxAttempts);
    }

    public Options withMutant(Mutant value) {
        return new Options(profile, value, defaultTimeout, maxAttempts);
    }

    public Options withDefaultTimeout(Duration value) {
        return new Options(profile, mutant, value, maxAttempts);
    }

    public Options withMaxAttempts(int value) {
        return new Options(profile, mutant, defaultTimeout, value);
    }

    boolean is(Mutant candidate) {
        return mutant == candidate;
    }
}
