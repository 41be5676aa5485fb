package io.acemq;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * A responder's Answered counter (RR-15): counted before the reply is published, so a caller
 * holding the reply already sees it, and taken back if the publish fails. The policy's
 * counting knobs are read here, so the responder's flow stays the same for all of them, and
 * when the counter comes to exist (RR-16) too.
 */
final class AnsweredCounter {
    private final ResponderPolicy policy;
    private final BiConsumer<Duration, Runnable> later;
    private final AtomicLong count = new AtomicLong();
    private final AtomicBoolean created;

    AnsweredCounter(ResponderPolicy policy) {
        this(policy, Timers::after);
    }

    AnsweredCounter(ResponderPolicy policy, BiConsumer<Duration, Runnable> later) {
        this.policy = policy;
        this.later = later;
        // RR-16: the counters exist, at zero, before the consumer is registered.
        this.created = new AtomicBoolean(policy.countersCreated() == ResponderPolicy.CountersCreated.BEFORE_SUBSCRIBE);
    }

    long get() {
        return count.get();
    }

    /**
     * Called once per delivery, before it is handled: whether Answered exists for it. Always
     * true under the spec. A counter made lazily once the consumer's first delivery has been
     * handled does not exist while that one is handled, so that delivery is never counted
     * (whatever it was: a request without a reply address or a failure loses nothing, as they
     * are not answers) and every later one is. Unanswerable is not touched: its own scenarios
     * check RR-12, and a mutant must fail only the scenarios that check its rule.
     * compareAndSet: the responder handles many deliveries at once and exactly one of them must
     * be the lost one.
     */
    boolean onDelivery() {
        return created.get() || !created.compareAndSet(false, true);
    }

    /**
     * Counts a reply about to be published (for a delivery {@link #onDelivery()} let in); true when
     * it counted, so that a failed publish takes it back.
     */
    boolean beforePublish() {
        if (policy.answeredTiming().afterConfirm()) {
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

    /** The broker confirmed a reply that {@link #beforePublish()} saw. */
    void published() {
        if (policy.answeredTiming().afterConfirm()) {
            later.accept(policy.answeredTiming().delay(), count::incrementAndGet);
        }
    }
}
