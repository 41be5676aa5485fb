package io.acemq;

/**
 * A named, deliberate defect from the wire spec's mutant catalogue. A conformance suite opens
 * a binding with one of these to show that it notices the rule being broken.
 */
public enum Mutant {
    NATIVE_ONLY("native-only"),
    HEADER_BYTES("header-bytes"),
    QUEUE_PER_REQUEST("queue-per-request"),
    LATE_REPLY_TO_NEXT("late-reply-to-next"),
    IGNORES_ERROR_HEADER("ignores-error-header"),
    NATIVE_FIRST("native-first"),
    NO_STRIP("no-strip"),
    NO_DLQ_ON_FAILURE("no-dlq-on-failure"),
    COUNTS_FAILURES("counts-failures"),
    DEAD_LETTER_UNANSWERABLE("dead-letter-unanswerable"),
    NO_ROLLBACK("no-rollback"),
    ANSWERED_AFTER_PUBLISH("answered-after-publish"),
    COUNTERS_AFTER_SUBSCRIBE("counters-after-subscribe"),
    GATHER_BY_CORRELATION_ID("gather-by-correlation-id"),
    SHORTFALL_RESOLVES("shortfall-resolves"),
    IMPLICIT_QUEUE_TYPE("implicit-queue-type"),
    TIMEOUTS_NOT_COUNTED("timeouts-not-counted"),
    IGNORES_RETURNS("ignores-returns"),
    TRUNCATES_SHORT_STRINGS("truncates-short-strings"),
    DROPS_UNDECODABLE("drops-undecodable"),
    CORRELATION_FROM_CORRELATION_ID("correlation-from-correlation-id"),
    ACKS_UNDELIVERABLE("acks-undeliverable"),
    CLASSIC_DLQ("classic-dlq"),
    NO_RESPONSE_MESSAGE_ID("no-response-message-id"),
    STRICT_HEADER_TYPES("strict-header-types"),
    COPIES_DISTINCT_IDS("copies-distinct-ids"),
    MULTI_ONE_COPY("multi-one-copy"),
    NO_EARLY_RESOLVE("no-early-resolve"),
    NO_COUNT_MEANS_ONE("no-count-means-one"),
    STRAY_REPLY_TO_OLDEST_GATHER("stray-reply-to-oldest-gather");

    private final String wireName;

    Mutant(String wireName) {
        this.wireName = wireName;
    }

    public String wireName() {
        return wireName;
    }

    /** The mutant for a catalogue name; {@code null} means none. */
    public static Mutant fromWireName(String name) {
        if (name == null) {
            return null;
        }
        for (Mutant mutant : values()) {
            if (mutant.wireName.equals(name)) {
                return mutant;
            }
        }
        throw new IllegalArgumentException("unknown mutant '" + name + "'");
    }
}
