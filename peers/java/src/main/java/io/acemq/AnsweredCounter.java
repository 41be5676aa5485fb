package io.acemq;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * A responder's Answered counter (RR-15): counted before the reply is published, so a caller
 * holding the reply already sees it, and taken back if the publish fails. The mutants that
 * count wrongly are kept here, so the responder's flow stays the same for all of them.
 */
final class AnsweredCounter {
    /** Wide enough for the answered-after-publish defect to be caught every time. */
    static final Duration AFTER_PUBLISH_DELAY = Duration.ofMillis(1000);

    private final Mutant mutant;
    private final BiConsumer<Duration, Runnable> later;
    private final AtomicLong count = new AtomicLong();
    private final AtomicBoolean lazilyCreated = new AtomicBoolean();

    AnsweredCounter(Mutant mutant) {
        this(mutant, Timers::after);
    }

    AnsweredCounter(Mutant mutant, BiConsumer<Duration, Runnable> later) {
        this.mutant = mutant;
        this.later = later;
    }

    long get() {
        return count.get();
    }

    /**
     * Counts a reply about to be published; true when it counted, so that a failed publish
     * takes it back.
     */
    boolean beforePublish() {
        if (mutant == Mutant.ANSWERED_AFTER_PUBLISH) {
            return false;
        }
        // counters-after-subscribe (RR-16): a lazily made counter does not exist yet when the
        // first delivery is handled, so that one answer is lost. compareAndSet: the responder
        // handles many deliveries at once and exactly one of them must be the lost one.
        if (mutant == Mutant.COUNTERS_AFTER_SUBSCRIBE && lazilyCreated.compareAndSet(false, true)) {
            return false;
        }
        count.incrementAndGet();
        return true;
    }

    /** The publish of a reply that {@link #beforePublish()} saw failed. */
    void publishFailed(boolean counted) {
        if (counted && mutant != Mutant.NO_ROLLBACK) {
            count.decrementAndGet();
        }
    }

    /** The broker confirmed a reply that {@link #beforePublish()} saw. */
    void published() {
        if (mutant == Mutant.ANSWERED_AFTER_PUBLISH) {
            later.accept(AFTER_PUBLISH_DELAY, count::incrementAndGet);
        }
    }
}
