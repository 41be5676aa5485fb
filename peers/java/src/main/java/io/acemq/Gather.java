package io.acemq;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.function.BiFunction;
import java.util.function.Consumer;

/**
 * One pending scatter-gather: the replies collected so far and the rule for ending it
 * (SG-5..SG-10). It holds no broker state, and its timer comes from a scheduler it is given,
 * so its decisions can be tested on their own.
 *
 * <p>Every decision is taken under the gather's lock, together with the change it makes: a
 * reply is added only if the gather is still open at that instant, so one that arrives after
 * the count was reached or the timeout fired, while the gather is still in the requester's
 * table, is refused (and counted Unmatched there, SG-8), never added to a finished gather.
 */
final class Gather {
    /** What became of a failure reply offered to a gather (SG-10). */
    enum FailureReply {
        /** The gather was open and dropped it: Unmatched, under SG-10's counter. */
        DROPPED,
        /** The gather had ended: a reply for no pending gather, Unmatched under SG-8's. */
        ENDED,
        /** Added as a null reply (a policy that breaks SG-10.1): not Unmatched. */
        KEPT
    }

    private final String requestMessageId;
    private final Integer expectedReplyCount;
    private final RequesterPolicy policy;
    private final Consumer<JsonElement> onReply;
    private final List<JsonElement> replies = new ArrayList<>();
    private final CompletableFuture<List<JsonElement>> result = new CompletableFuture<>();
    /** The timeout, once started: how long, the scheduler, what runs when it ends the gather. */
    private Duration budget;
    private BiFunction<Duration, Runnable, ? extends Future<?>> timers;
    private Runnable expired;
    private Future<?> timer;
    /** Bumped at every arming, so a timer that was replaced (but already fired) ends nothing. */
    private long armings;

    /** Only the policy's gather knobs change anything here. */
    Gather(String requestMessageId, Integer expectedReplyCount, RequesterPolicy policy, Consumer<JsonElement> onReply) {
        this.requestMessageId = requestMessageId;
        // Taking "no count" as "one reply" breaks SG-7.
        this.expectedReplyCount = expectedReplyCount == null
                && policy.gatherMissingCount() == RequesterPolicy.GatherMissingCount.ONE
                ? Integer.valueOf(1)
                : expectedReplyCount;
        this.policy = policy;
        this.onReply = onReply;
        result.whenComplete((replies, error) -> cancelTimer());
    }

    String requestMessageId() {
        return requestMessageId;
    }

    CompletableFuture<List<JsonElement>> result() {
        return result;
    }

    /**
     * Starts the timeout (SG-9): {@code budget} from now the gather expires, and {@code expired}
     * runs when that is what ended it. {@code timers} schedules a task after a delay.
     */
    synchronized void startTimer(Duration budget, BiFunction<Duration, Runnable, ? extends Future<?>> timers,
            Runnable expired) {
        this.budget = budget;
        this.timers = timers;
        this.expired = expired;
        if (!result.isDone()) {
            arm();
        }
    }

    /**
     * Adds a reply; false when the gather has already ended, so the reply is Unmatched (SG-8).
     * Resolves at once when the expected count is reached (SG-5).
     */
    synchronized boolean offer(JsonElement reply) {
        if (!isOpen()) {
            return false;
        }
        add(reply);
        return true;
    }

    /**
     * A reply carrying acemq-error (SG-10): not an answer, so it is kept out of the replies and
     * of onReply and does not count toward expectedReplyCount; the gather goes on waiting.
     */
    synchronized FailureReply offerFailure() {
        if (!isOpen()) {
            return FailureReply.ENDED;
        }
        if (policy.gatherFailureReply() == RequesterPolicy.GatherFailureReply.KEEP) {
            // Breaks SG-10.1: a failure takes the place of an answer, and may complete the count.
            add(JsonNull.INSTANCE);
            return FailureReply.KEPT;
        }
        return FailureReply.DROPPED;
    }

    /**
     * The timeout elapsed: without a count the gather resolves with what arrived (SG-7); with a
     * count it is a shortfall and rejects with the partial replies (SG-6). True when this ended
     * the gather, false when it had ended already.
     */
    synchronized boolean expire() {
        if (result.isDone()) {
            return false;
        }
        // Resolving a shortfall breaks SG-6: it is taken for success.
        if (expectedReplyCount == null || countReached()
                || policy.gatherShortfall() == RequesterPolicy.GatherShortfall.RESOLVE) {
            result.complete(List.copyOf(replies));
        } else {
            result.completeExceptionally(new RequestTimeoutException(requestMessageId, expectedReplyCount, replies));
        }
        return true;
    }

    synchronized void fail(RuntimeException error) {
        result.completeExceptionally(error);
    }

    synchronized boolean isDone() {
        return result.isDone();
    }

    /** Open for replies: not ended, and (a gather that does not resolve early) not full either. */
    private boolean isOpen() {
        return !result.isDone() && !countReached();
    }

    private void add(JsonElement reply) {
        replies.add(reply);
        if (onReply != null) {
            onReply.accept(reply);
        }
        // Not resolving early breaks SG-5: a full gather still waits for its timeout.
        if (countReached() && policy.gatherResolvesEarly()) {
            result.complete(List.copyOf(replies));
        } else if (policy.gatherDeadline() == RequesterPolicy.GatherDeadline.RESTART_PER_REPLY && timer != null) {
            // Breaks SG-9.1: every reply buys the gather a whole timeout more.
            arm();
        }
    }

    /** Holding the lock: (re)schedules the timeout a whole budget from now. */
    private void arm() {
        cancelTimer();
        long arming = ++armings;
        timer = timers.apply(budget, () -> {
            if (expireArmed(arming)) {
                expired.run();
            }
        });
    }

    /** Expires the gather if the timer that fired is still the current one. */
    private synchronized boolean expireArmed(long arming) {
        return arming == armings && expire();
    }

    private synchronized void cancelTimer() {
        if (timer != null) {
            timer.cancel(false);
        }
    }

    private boolean countReached() {
        return expectedReplyCount != null && replies.size() >= expectedReplyCount;
    }
}
