package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonPrimitive;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

class GatherTest {
    private static final JsonElement A = new JsonPrimitive("a");
    private static final JsonElement B = new JsonPrimitive("b");

    @Test
    void resolvesAsSoonAsTheCountIsReached() throws Exception {
        Gather gather = new Gather("m", 2, RequesterPolicy.SPEC, null);
        assertTrue(gather.offer(A));
        assertFalse(gather.isDone());
        assertTrue(gather.offer(B));
        assertEquals(List.of(A, B), gather.result().getNow(null));
    }

    @Test
    void aShortfallRejectsWithThePartialReplies() {
        Gather gather = new Gather("m", 3, RequesterPolicy.SPEC, null);
        gather.offer(A);
        gather.offer(B);
        gather.expire();
        ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> gather.result().get());
        RequestTimeoutException shortfall = assertInstanceOf(RequestTimeoutException.class, error.getCause());
        assertEquals(List.of(A, B), shortfall.getPartialReplies());
    }

    @Test
    void withoutACountItResolvesAtTheTimeoutWithWhateverArrived() throws Exception {
        Gather gather = new Gather("m", null, RequesterPolicy.SPEC, null);
        gather.offer(A);
        gather.offer(B);
        assertFalse(gather.isDone());
        gather.expire();
        assertEquals(List.of(A, B), gather.result().get());

        Gather empty = new Gather("e", null, RequesterPolicy.SPEC, null);
        empty.expire();
        assertEquals(List.of(), empty.result().get());
    }

    @Test
    void repliesAfterTheEndAreRefused() {
        Gather gather = new Gather("m", 1, RequesterPolicy.SPEC, null);
        assertTrue(gather.offer(A));
        assertFalse(gather.offer(B));
        gather.expire();
        assertEquals(List.of(A), gather.result().getNow(null));
    }

    @Test
    void onReplySeesEachReplyInArrivalOrder() {
        List<JsonElement> seen = new ArrayList<>();
        Gather gather = new Gather("m", 2, RequesterPolicy.SPEC, seen::add);
        gather.offer(B);
        gather.offer(A);
        assertEquals(List.of(B, A), seen);
    }

    @Test
    void shortfallResolvesMutantResolvesWithThePartialReplies() throws Exception {
        Gather gather = new Gather("m", 3, policy("gather_shortfall", "resolve"), null);
        gather.offer(A);
        gather.expire();
        assertEquals(List.of(A), gather.result().get());
    }

    @Test
    void noEarlyResolveMutantWaitsForTheTimeoutThenResolves() throws Exception {
        Gather gather = new Gather("m", 2, policy("gather_resolves_early", false), null);
        assertTrue(gather.offer(A));
        assertTrue(gather.offer(B));
        assertFalse(gather.isDone());
        // The gather is full: a third reply is as Unmatched as it would be after resolving.
        assertFalse(gather.offer(A));
        gather.expire();
        assertEquals(List.of(A, B), gather.result().get());
    }

    @Test
    void noEarlyResolveMutantStillRejectsAShortfall() {
        Gather gather = new Gather("m", 2, policy("gather_resolves_early", false), null);
        gather.offer(A);
        gather.expire();
        ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> gather.result().get());
        assertInstanceOf(RequestTimeoutException.class, error.getCause());
    }

    @Test
    void noCountMeansOneMutantResolvesAtTheFirstReplyAndRejectsWithNone() {
        Gather gather = new Gather("m", null, policy("gather_missing_count", "one"), null);
        assertTrue(gather.offer(A));
        assertEquals(List.of(A), gather.result().getNow(null));

        Gather empty = new Gather("e", null, policy("gather_missing_count", "one"), null);
        empty.expire();
        ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> empty.result().get());
        RequestTimeoutException shortfall = assertInstanceOf(RequestTimeoutException.class, error.getCause());
        assertEquals(List.of(), shortfall.getPartialReplies());
    }

    @Test
    void noEarlyResolveMutantLeavesAGatherWithoutACountAlone() throws Exception {
        Gather gather = new Gather("m", null, policy("gather_resolves_early", false), null);
        gather.offer(A);
        assertFalse(gather.isDone());
        gather.expire();
        assertEquals(List.of(A), gather.result().get());
    }

    @Test
    void aFailureReplyIsNoAnswerAndTheGatherWaitsOn() throws Exception {
        List<JsonElement> seen = new ArrayList<>();
        Gather gather = new Gather("m", 2, RequesterPolicy.SPEC, seen::add);
        assertEquals(Gather.FailureReply.DROPPED, gather.offerFailure());
        assertTrue(gather.offer(A));
        assertFalse(gather.isDone());
        assertEquals(Gather.FailureReply.DROPPED, gather.offerFailure());
        assertTrue(gather.offer(B));
        assertEquals(List.of(A, B), gather.result().get());
        assertEquals(List.of(A, B), seen);
        // Once it ended, a failure reply is one for no pending gather (SG-8).
        assertEquals(Gather.FailureReply.ENDED, gather.offerFailure());

        Gather budget = new Gather("n", null, RequesterPolicy.SPEC, seen::add);
        assertEquals(Gather.FailureReply.DROPPED, budget.offerFailure());
        budget.expire();
        assertEquals(List.of(), budget.result().get());
    }

    @Test
    void gatherKeepsFailuresMutantAddsANullReplyThatCounts() throws Exception {
        List<JsonElement> seen = new ArrayList<>();
        Gather gather = new Gather("m", 2, policy("gather_failure_reply", "keep"), seen::add);
        assertEquals(Gather.FailureReply.KEPT, gather.offerFailure());
        assertFalse(gather.isDone());
        assertTrue(gather.offer(A));
        assertEquals(List.of(JsonNull.INSTANCE, A), gather.result().get());
        assertEquals(List.of(JsonNull.INSTANCE, A), seen);
        assertEquals(Gather.FailureReply.ENDED, gather.offerFailure());
    }

    @Test
    void aDroppedFailureCountsUnderItsOwnKnobAndALateOneUnderSg8s() {
        assertTrue(Requester.countsInUnmatched(RequesterPolicy.SPEC, Gather.FailureReply.DROPPED));
        assertTrue(Requester.countsInUnmatched(RequesterPolicy.SPEC, Gather.FailureReply.ENDED));
        RequesterPolicy failuresNotCounted = policy("count_gather_failures", false);
        assertFalse(Requester.countsInUnmatched(failuresNotCounted, Gather.FailureReply.DROPPED));
        assertTrue(Requester.countsInUnmatched(failuresNotCounted, Gather.FailureReply.ENDED));
        // The SG-8.1 mutant leaves a failure reply to a pending gather counted, and vice versa.
        RequesterPolicy unmatchedNotCounted = policy("count_gather_unmatched", false);
        assertTrue(Requester.countsInUnmatched(unmatchedNotCounted, Gather.FailureReply.DROPPED));
        assertFalse(Requester.countsInUnmatched(unmatchedNotCounted, Gather.FailureReply.ENDED));
        assertTrue(unmatchedNotCounted.countGatherFailures());
        assertTrue(failuresNotCounted.countGatherUnmatched());
        assertEquals(RequesterPolicy.GatherFailureReply.DROP, unmatchedNotCounted.gatherFailureReply());
        // Not counted, still kept out of the gather.
        assertEquals(Gather.FailureReply.DROPPED, new Gather("m", 1, failuresNotCounted, null).offerFailure());
    }

    @Test
    void theTimeoutRunsFromThePublishWhateverArrives() {
        FakeTimers timers = new FakeTimers();
        List<String> expired = new ArrayList<>();
        Gather gather = new Gather("m", 3, RequesterPolicy.SPEC, null);
        gather.startTimer(Duration.ofMillis(500), timers, () -> expired.add("m"));
        gather.offer(A);
        gather.offerFailure();
        gather.offer(B);
        assertEquals(1, timers.scheduled.size());
        timers.fire(0);
        assertEquals(List.of("m"), expired);
        assertTrue(gather.isDone());
    }

    @Test
    void budgetRestartsPerReplyMutantArmsAWholeTimeoutAtEveryKeptReply() throws Exception {
        for (Integer count : new Integer[] {3, null}) {
            FakeTimers timers = new FakeTimers();
            List<String> expired = new ArrayList<>();
            Gather gather = new Gather("m", count, policy("gather_deadline", "restart_per_reply"), null);
            gather.startTimer(Duration.ofMillis(500), timers, () -> expired.add("m"));
            gather.offer(A);
            // A failure reply is not kept: no restart for it.
            gather.offerFailure();
            assertEquals(2, timers.scheduled.size());
            assertEquals(List.of(Duration.ofMillis(500), Duration.ofMillis(500)), timers.delays);
            assertTrue(timers.scheduled.get(0).isCancelled());
            // The first timer fired just as it was replaced: it ends nothing.
            timers.fire(0);
            assertFalse(gather.isDone());
            timers.fire(1);
            assertEquals(List.of("m"), expired);
            assertTrue(gather.isDone());
        }
    }

    @Test
    void aGatherThatEndedCancelsItsTimer() {
        FakeTimers timers = new FakeTimers();
        Gather gather = new Gather("m", 1, policy("gather_deadline", "restart_per_reply"), null);
        gather.startTimer(Duration.ofMillis(500), timers, () -> { });
        gather.offer(A);
        assertEquals(1, timers.scheduled.size());
        assertTrue(timers.scheduled.get(0).isCancelled());
    }

    @Test
    void concurrentRepliesBeyondTheCountAreRefusedNeverLost() throws Exception {
        for (int round = 0; round < 50; round++) {
            Gather gather = new Gather("m", 5, RequesterPolicy.SPEC, null);
            AtomicInteger kept = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(8);
            for (int t = 0; t < 8; t++) {
                pool.execute(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    for (int i = 0; i < 4; i++) {
                        if (gather.offer(A)) {
                            kept.incrementAndGet();
                        }
                    }
                });
            }
            go.countDown();
            pool.shutdown();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
            // Every reply offer() took is in the result; every other one the caller counts Unmatched.
            assertEquals(5, kept.get());
            assertEquals(5, gather.result().get().size());
        }
    }

    @Test
    void aReplyRacingTheTimeoutIsEitherInThePartialRepliesOrRefused() throws Exception {
        for (int round = 0; round < 200; round++) {
            Gather gather = new Gather("m", 2, RequesterPolicy.SPEC, null);
            CountDownLatch go = new CountDownLatch(1);
            CompletableFuture<Boolean> offered = CompletableFuture.supplyAsync(() -> {
                awaitQuietly(go);
                return gather.offer(A);
            });
            CompletableFuture<Boolean> expired = CompletableFuture.supplyAsync(() -> {
                awaitQuietly(go);
                return gather.expire();
            });
            go.countDown();
            assertTrue(expired.get());
            ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                    ExecutionException.class, () -> gather.result().get());
            RequestTimeoutException shortfall = assertInstanceOf(RequestTimeoutException.class, error.getCause());
            assertEquals(offered.get() ? List.of(A) : List.of(), shortfall.getPartialReplies());
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A scheduler that runs nothing by itself: the test fires each task. */
    private static final class FakeTimers implements BiFunction<Duration, Runnable, Future<?>> {
        final List<Duration> delays = new ArrayList<>();
        final List<CompletableFuture<Void>> scheduled = new ArrayList<>();
        final List<Runnable> tasks = new ArrayList<>();

        @Override
        public Future<?> apply(Duration delay, Runnable task) {
            delays.add(delay);
            tasks.add(task);
            CompletableFuture<Void> future = new CompletableFuture<>();
            scheduled.add(future);
            return future;
        }

        /** Runs task {@code index} as a timer that fired (even if cancelled meanwhile) would. */
        void fire(int index) {
            tasks.get(index).run();
        }
    }

    private static RequesterPolicy policy(String knob, Object value) {
        return PolicyKnobs.resolve(RequesterPolicy.SPEC, java.util.Map.of(knob, value));
    }
}
