package io.acemq.peer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.acemq.AcemqException;
import io.acemq.ConnectionLostException;
import io.acemq.PublishRefusedException;
import io.acemq.RequestTimedOutException;
import io.acemq.RequestTimeoutException;
import io.acemq.RequesterClosedException;
import io.acemq.ResponderFailedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The adapter reports the binding's timeout as the timeout outcome (a gather's shortfall as
 * timeout_with_partial with its replies) however it is wrapped, and never as a refused call.
 */
class CallOutcomeTest {
    private static final JsonElement ONE = JsonParser.parseString("{\"unitPrice\": 1}");

    /** The shapes a binding error reaches the adapter in: as is, and wrapped every way Java wraps. */
    private static final List<Function<Throwable, Throwable>> WRAPPINGS = List.of(
            error -> error,
            ExecutionException::new,
            CompletionException::new,
            error -> new ExecutionException(new CompletionException(error)),
            error -> new AcemqException("blocking call failed", error));

    @Test
    void aRequestTimeoutIsTheTimeoutOutcomeHoweverWrapped() throws Exception {
        for (Function<Throwable, Throwable> wrap : WRAPPINGS) {
            JsonObject answer = new JsonObject();
            CallOutcome.ofRequest(answer, null, wrap.apply(new RequestTimedOutException("m", Duration.ofSeconds(2))), 3);
            assertEquals("timeout", answer.get("outcome").getAsString());
            assertFalse(answer.has("reply"));
        }
    }

    @Test
    void theFutureOfARequestThatTimedOutIsTheTimeoutOutcome() throws Exception {
        CompletableFuture<JsonElement> timedOut = new CompletableFuture<>();
        timedOut.completeExceptionally(new RequestTimedOutException("m", Duration.ofSeconds(2)));
        // As PeerMain reads it (get) and as a dependent stage of it would (join).
        ExecutionException got = assertThrows(ExecutionException.class, timedOut::get);
        CompletionException joined = assertThrows(CompletionException.class, () -> timedOut.thenApply(x -> x).join());
        for (Throwable error : List.of(got, joined)) {
            JsonObject answer = new JsonObject();
            CallOutcome.ofRequest(answer, null, error, 3);
            assertEquals("timeout", answer.get("outcome").getAsString());
            assertTrue(CallOutcome.isRequestTimeout(error));
        }
    }

    @Test
    void aGatherShortfallIsTimeoutWithPartialHoldingItsRepliesHoweverWrapped() throws Exception {
        for (Function<Throwable, Throwable> wrap : WRAPPINGS) {
            JsonObject answer = new JsonObject();
            CallOutcome.ofGather(answer, null, wrap.apply(new RequestTimeoutException("m", 2, List.of(ONE))), 3);
            assertEquals("timeout_with_partial", answer.get("outcome").getAsString());
            assertEquals("[" + ONE + "]", answer.get("replies").toString());
        }
        // The request's timeout type on a gather is a shortfall with nothing kept.
        JsonObject answer = new JsonObject();
        CallOutcome.ofGather(answer, null, new ExecutionException(new RequestTimedOutException("m", Duration.ofSeconds(1))), 3);
        assertEquals("timeout_with_partial", answer.get("outcome").getAsString());
        assertEquals(0, answer.getAsJsonArray("replies").size());
        // A gather's shortfall type on a request is still a timeout.
        JsonObject request = new JsonObject();
        CallOutcome.ofRequest(request, null, new ExecutionException(new RequestTimeoutException("m", 1, List.of())), 3);
        assertEquals("timeout", request.get("outcome").getAsString());
    }

    @Test
    void repliesAndTheOtherOutcomes() throws Exception {
        JsonObject reply = new JsonObject();
        CallOutcome.ofRequest(reply, ONE, null, 3);
        assertEquals("reply", reply.get("outcome").getAsString());
        assertEquals(ONE, reply.get("reply"));

        JsonObject replies = new JsonObject();
        // A null reply (gather_failure_reply: keep) is JSON null in the list.
        CallOutcome.ofGather(replies, List.of(JsonNull.INSTANCE, ONE), null, 3);
        assertEquals("replies", replies.get("outcome").getAsString());
        assertEquals("[null,{\"unitPrice\":1}]", replies.get("replies").toString());

        JsonObject failed = new JsonObject();
        CallOutcome.ofRequest(failed, null, new ExecutionException(new ResponderFailedException("Boom: no")), 3);
        assertEquals("responder_failed", failed.get("outcome").getAsString());
        assertEquals("Boom: no", failed.get("failure").getAsString());

        JsonObject closed = new JsonObject();
        CallOutcome.ofGather(closed, null, new ExecutionException(new RequesterClosedException()), 3);
        assertEquals("closed", closed.get("outcome").getAsString());
        assertFalse(closed.has("replies"));
    }

    @Test
    void anythingElseIsRefusedWithTheErrorItself() {
        PublishRefusedException returned = new PublishRefusedException("returned: 312 NO_ROUTE");
        Exception refused = assertThrows(Exception.class,
                () -> CallOutcome.ofRequest(new JsonObject(), null, new ExecutionException(returned), 3));
        assertSame(returned, refused);
        // Before protocol 3 there is no closed outcome.
        RequesterClosedException closed = new RequesterClosedException();
        assertSame(closed, assertThrows(Exception.class,
                () -> CallOutcome.ofGather(new JsonObject(), null, new ExecutionException(closed), 2)));
        assertFalse(CallOutcome.isRequestTimeout(new ExecutionException(returned)));
    }

    @Test
    void aSendTheCloseEndedIsTheClosedOutcomeNotARefusal() {
        // The race of rr-requester-close-ends-pending under load: the close lands while send
        // waits for the request's confirm, and send throws instead of returning a pending call.
        for (Function<Throwable, Throwable> wrap : WRAPPINGS) {
            assertTrue(CallOutcome.endedByClose(wrap.apply(new RequesterClosedException()), 3));
            assertFalse(CallOutcome.endedByClose(wrap.apply(new RequesterClosedException()), 2));
        }
        assertFalse(CallOutcome.endedByClose(new PublishRefusedException("returned: 312 NO_ROUTE"), 3));
    }

    @Test
    void aCallItsLostConnectionEndedIsConnectionLostWithTheReasonFromProtocolFive() throws Exception {
        String reason = "CONNECTION_FORCED - Closed via management plugin";
        for (Function<Throwable, Throwable> wrap : WRAPPINGS) {
            JsonObject request = new JsonObject();
            CallOutcome.ofRequest(request, null, wrap.apply(new ConnectionLostException(reason)), 5);
            assertEquals("connection_lost", request.get("outcome").getAsString());
            assertEquals(reason, request.get("reason").getAsString());

            JsonObject gather = new JsonObject();
            CallOutcome.ofGather(gather, null, wrap.apply(new ConnectionLostException(reason)), 5);
            assertEquals("connection_lost", gather.get("outcome").getAsString());
            assertEquals(reason, gather.get("reason").getAsString());
            assertFalse(gather.has("replies"));

            // Ended by the loss before its request was confirmed: the same outcome, not a refusal.
            JsonObject unsent = new JsonObject();
            assertTrue(CallOutcome.endedByLoss(unsent, wrap.apply(new ConnectionLostException(reason)), 5));
            assertEquals("connection_lost", unsent.get("outcome").getAsString());
            assertEquals(reason, unsent.get("reason").getAsString());
        }
        // A timeout is still a timeout: the loss is the only thing that makes connection_lost.
        JsonObject timeout = new JsonObject();
        CallOutcome.ofRequest(timeout, null, new ExecutionException(new RequestTimedOutException("m", Duration.ofSeconds(20))), 5);
        assertEquals("timeout", timeout.get("outcome").getAsString());
        assertFalse(CallOutcome.endedByLoss(new JsonObject(), new PublishRefusedException("nacked by the broker"), 5));
    }

    @Test
    void beforeProtocolFiveALostConnectionIsARefusal() {
        ConnectionLostException lost = new ConnectionLostException("connection reset");
        assertSame(lost, assertThrows(Exception.class,
                () -> CallOutcome.ofRequest(new JsonObject(), null, new ExecutionException(lost), 4)));
        assertSame(lost, assertThrows(Exception.class,
                () -> CallOutcome.ofGather(new JsonObject(), null, new ExecutionException(lost), 4)));
        JsonObject answer = new JsonObject();
        assertFalse(CallOutcome.endedByLoss(answer, lost, 4));
        assertEquals(0, answer.size());
    }
}
