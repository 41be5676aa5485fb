package io.acemq;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A responder's stop: it waits for the requests being settled, and none starts once it waits. */
class SettlingRequestsTest {
    @Test
    void theStopWaitsForARequestBeingSettledAndShutsOutLaterOnes() throws Exception {
        Responder.SettlingRequests settling = new Responder.SettlingRequests();
        assertTrue(settling.enter(), "a request whose handler returned before the stop is settled");
        CompletableFuture<Boolean> stop = CompletableFuture.supplyAsync(() -> settling.closeAndAwaitNone(Duration.ofSeconds(5)));
        // Once the stop has begun, a handler that returns now is abandoned, not settled.
        while (settling.enter()) {
            settling.leave();
            Thread.onSpinWait();
        }
        assertFalse(stop.isDone(), "the stop returned while a request was still being settled");
        settling.leave();
        assertTrue(stop.get(5, TimeUnit.SECONDS), "the stop saw the request settled");
        assertFalse(settling.enter());
    }

    @Test
    void theWaitIsBounded() {
        Responder.SettlingRequests settling = new Responder.SettlingRequests();
        assertTrue(settling.enter());
        long started = System.nanoTime();
        assertFalse(settling.closeAndAwaitNone(Duration.ofMillis(100)));
        assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(100));
    }

    @Test
    void nothingToSettleIsNoWait() {
        assertTrue(new Responder.SettlingRequests().closeAndAwaitNone(Duration.ofSeconds(5)));
    }
}
