package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AnsweredCounterTest {
    @Test
    void countsBeforePublishingAndTakesAFailureBack() {
        AnsweredCounter answered = new AnsweredCounter(ResponderPolicy.SPEC);
        assertTrue(answered.beforePublish());
        assertEquals(1, answered.get());
        answered.publishFailed(true);
        assertEquals(0, answered.get());
        assertTrue(answered.beforePublish());
        answered.published();
        assertEquals(1, answered.get());
    }

    @Test
    void noRollbackKeepsAFailedReply() {
        AnsweredCounter answered = new AnsweredCounter(policy("rollback_answered", false));
        answered.publishFailed(answered.beforePublish());
        assertEquals(1, answered.get());
    }

    @Test
    void answeredAfterPublishCountsAtTheConfirmAndNoLater() {
        AnsweredCounter answered = new AnsweredCounter(policy("answered_timing", "after_confirm"));
        assertFalse(answered.beforePublish());
        // Published, not yet confirmed: the caller may hold the reply, Answered lacks it (RR-15.1).
        assertEquals(0, answered.get());
        answered.published();
        assertEquals(1, answered.get());
        // A failed publish was never counted, so there is nothing to take back.
        answered.publishFailed(answered.beforePublish());
        assertEquals(1, answered.get());
    }

    @Test
    void countersAfterSubscribeLosesOnlyTheFirstAnswer() {
        AnsweredCounter answered = new AnsweredCounter(policy("counters_created", "after_first_delivery"));
        boolean first = answered.beforePublish();
        assertFalse(first);
        answered.publishFailed(first);
        assertEquals(0, answered.get());
        for (int i = 0; i < 3; i++) {
            assertTrue(answered.beforePublish());
            answered.published();
        }
        assertEquals(3, answered.get());
    }

    @Test
    void countersAfterSubscribeLosesExactlyOneUnderConcurrency() throws InterruptedException {
        AnsweredCounter answered = new AnsweredCounter(policy("counters_created", "after_first_delivery"));
        int threads = 16;
        int each = 100;
        AtomicInteger lost = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int t = 0; t < threads; t++) {
                pool.execute(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    for (int i = 0; i < each; i++) {
                        if (!answered.beforePublish()) {
                            lost.incrementAndGet();
                        }
                    }
                });
            }
            go.countDown();
        } finally {
            pool.shutdown();
        }
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        assertEquals(1, lost.get());
        assertEquals(threads * each - 1, answered.get());
    }

    private static ResponderPolicy policy(String knob, Object value) {
        return PolicyKnobs.resolve(ResponderPolicy.SPEC, java.util.Map.of(knob, value));
    }
}
