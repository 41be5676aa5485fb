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
    SHORTFALL_RESOLVES("shortfall-resolves");

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
