package io.acemq;

import com.google.gson.JsonElement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One pending scatter-gather: the replies collected so far and the rule for ending it
 * (SG-5..SG-7). It holds no broker state, so its decisions can be tested on their own.
 */
final class Gather {
    private final String requestMessageId;
    private final Integer expectedReplyCount;
    private final RequesterPolicy policy;
    private final Consumer<JsonElement> onReply;
    private final List<JsonElement> replies = new ArrayList<>();
    private final CompletableFuture<List<JsonElement>> result = new CompletableFuture<>();

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
    }

    String requestMessageId() {
        return requestMessageId;
    }

    CompletableFuture<List<JsonElement>> result() {
        return result;
    }

    /**
     * Adds a reply; false when the gather has already ended, so the reply is Unmatched (SG-8).
     * Resolves at once when the expected count is reached (SG-5).
     */
    synchronized boolean offer(JsonElement reply) {
        if (result.isDone() || countReached()) {
            return false;
        }
        replies.add(reply);
        if (onReply != null) {
            onReply.accept(reply);
        }
        // Not resolving early breaks SG-5: a full gather still waits for its timeout.
        if (countReached() && policy.gatherResolvesEarly()) {
            result.complete(List.copyOf(replies));
        }
        return true;
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

    private boolean countReached() {
        return expectedReplyCount != null && replies.size() >= expectedReplyCount;
    }
}
