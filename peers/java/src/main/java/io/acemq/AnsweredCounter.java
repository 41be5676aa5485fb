package io.acemq;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A responder's Answered counter (RR-15): counted before the reply is published, so a caller
 * holding the reply already sees it, and taken back if the publish fails. The policy's
 * counting knobs are read here, so the responder's flow stays the same for all of them.
 */
final class AnsweredCounter {
    private final ResponderPolicy policy;
    private final AtomicLong count = new AtomicLong();
    private final AtomicBoolean created;

    AnsweredCounter(ResponderPolicy policy) {
        this.policy = policy;
        // RR-16: the counter exists, at zero, before the consumer is registered.
        this.created = new AtomicBoolean(policy.countersCreated() == ResponderPolicy.CountersCreated.BEFORE_SUBSCRIBE);
    }

    long get() {
        return count.get();
    }

    /**
     * Counts a reply about to be published; true when it counted, so that a failed publish
     * takes it back.
     */
    boolean beforePublish() {
        if (policy.answeredTiming() == ResponderPolicy.AnsweredTiming.AFTER_CONFIRM) {
            return false;
        }
        // A counter made lazily once the first reply has been sent does not exist yet while the
        // first request answered is handled, so that one answer is lost (Unanswerable is not
        // affected). compareAndSet: the responder handles many deliveries at once and exactly
        // one of them must be the lost one.
        if (created.compareAndSet(false, true)) {
            return false;
        }
        count.incrementAndGet();
        return true;
    }

    /** The publish of a reply that {@link #beforePublish()} saw failed. */
    void publishFailed(boolean counted) {
        if (counted && policy.rollbackAnswered()) {
            count.decrementAndGet();
        }
    }

    /**
     * The broker confirmed a reply that {@link #beforePublish()} saw. Counting only now breaks
     * RR-15.1: the caller may hold the reply while Answered still lacks it. Nothing to take back
     * here: a publish that failed was never counted.
     */
    void published() {
        if (policy.answeredTiming() == ResponderPolicy.AnsweredTiming.AFTER_CONFIRM) {
            count.incrementAndGet();
        }
    }
}
