package io.acemq.peer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonParser;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** requester.close answers after the answers of the calls it ended (protocol 3), and the negotiation. */
class InFlightCallsTest {
    @Test
    void closeWaitsForTheAnswersOfEndedCallsOnly() throws Exception {
        InFlightCalls inFlight = new InFlightCalls();
        CompletableFuture<Void> endedAnswer = new CompletableFuture<>();
        CompletableFuture<Void> pendingAnswer = new CompletableFuture<>();
        CompletableFuture<Void> refusedAnswer = new CompletableFuture<>();
        CompletableFuture<Object> ended = new CompletableFuture<>();
        inFlight.begin("q1", endedAnswer).sent(ended);
        // A call the close left pending (pending_at_close: wait): not waited for.
        inFlight.begin("q1", pendingAnswer).sent(new CompletableFuture<>());
        inFlight.begin("q1", refusedAnswer).refused(new IllegalStateException("closed"));
        // Another requester's call is none of this close's business.
        inFlight.begin("q2", new CompletableFuture<>()).sent(CompletableFuture.completedFuture(null));

        ended.complete(null); // what the binding's close does to a pending call
        CountDownLatch closed = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            try {
                inFlight.awaitEnded("q1", Duration.ofSeconds(10));
                closed.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        closer.start();
        assertFalse(closed.await(200, TimeUnit.MILLISECONDS), "answered before the ended calls' answers");
        endedAnswer.complete(null);
        assertFalse(closed.await(200, TimeUnit.MILLISECONDS), "answered before the refused call's answer");
        refusedAnswer.complete(null);
        assertTrue(closed.await(5, TimeUnit.SECONDS));
        closer.join();
    }

    @Test
    void aCallSentAfterTheCloseBeganIsJudgedWhenItIsSent() throws Exception {
        InFlightCalls inFlight = new InFlightCalls();
        CompletableFuture<Void> answer = new CompletableFuture<>();
        InFlightCalls.Call call = inFlight.begin("q1", answer);
        Thread closer = new Thread(() -> {
            try {
                inFlight.awaitEnded("q1", Duration.ofSeconds(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        closer.start();
        call.sent(CompletableFuture.completedFuture(null));
        answer.complete(null);
        closer.join(5_000);
        assertFalse(closer.isAlive());
    }

    @Test
    void theHighestProtocolBothSpeakIsChosen() {
        assertEquals(4, PeerMain.negotiate(JsonParser.parseString("{\"protocol\": 4, \"protocols\": [1, 2, 3, 4]}").getAsJsonObject()));
        assertEquals(3, PeerMain.negotiate(JsonParser.parseString("{\"protocol\": 3, \"protocols\": [1, 2, 3]}").getAsJsonObject()));
        assertEquals(2, PeerMain.negotiate(JsonParser.parseString("{\"protocol\": 2, \"protocols\": [1, 2]}").getAsJsonObject()));
        assertEquals(5, PeerMain.negotiate(JsonParser.parseString("{\"protocols\": [1, 2, 3, 4, 5]}").getAsJsonObject()));
        assertEquals(5, PeerMain.negotiate(JsonParser.parseString("{\"protocols\": [1, 2, 3, 4, 5, 6]}").getAsJsonObject()));
        assertEquals(1, PeerMain.negotiate(JsonParser.parseString("{\"protocol\": 1}").getAsJsonObject()));
        assertEquals(1, PeerMain.negotiate(JsonParser.parseString("{}").getAsJsonObject()));
        assertThrows(IllegalArgumentException.class,
                () -> PeerMain.negotiate(JsonParser.parseString("{\"protocol\": 6, \"protocols\": [6]}").getAsJsonObject()));
    }
}
