package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonParser;
import com.rabbitmq.client.AMQP;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * The knobs of issue 12 (the spec's defaults and its new decisions), each at the spec's value
 * and at its mutant's, on the pure decisions the requester and responder take them from.
 */
class SpecDefaultsTest {
    @Test
    void defaultTimeoutIsThirtySecondsUnlessOptionsSayOtherwise() {
        assertEquals(Duration.ofSeconds(30), Requester.defaultTimeout(null, RequesterPolicy.SPEC));
        assertEquals(Duration.ofSeconds(10), Requester.defaultTimeout(null, requester("default_timeout_ms", 10000)));
        // A service's own Options win over the binding's default.
        assertEquals(Duration.ofSeconds(5),
                Requester.defaultTimeout(Options.defaults().withDefaultTimeout(Duration.ofSeconds(5)), requester("default_timeout_ms", 10000)));
    }

    @Test
    void aRequestGivesUpAtItsTimeoutAndHalfOfItLaterUnderLateTimeout() {
        assertEquals(Duration.ofMillis(2000), Requester.deadline(RequesterPolicy.SPEC, Duration.ofMillis(2000)));
        RequesterPolicy late = requester("request_deadline", "late");
        assertEquals(Duration.ofMillis(3000), Requester.deadline(late, Duration.ofMillis(2000)));
        // The default's too: 30 s becomes 45 s.
        assertEquals(Duration.ofSeconds(45), Requester.deadline(late, Requester.defaultTimeout(null, late)));
        assertEquals(RequesterPolicy.RequestDeadline.TIMEOUT, RequesterPolicy.SPEC.requestDeadline());
        // Requests only: a gather's timeout is its own knob.
        assertEquals(RequesterPolicy.GatherDeadline.FIXED, late.gatherDeadline());
    }

    @Test
    void defaultMaxAttemptsIsThreeUnlessOptionsSayOtherwise() {
        assertEquals(3, Responder.maxAttempts(null, ResponderPolicy.SPEC));
        assertEquals(5, Responder.maxAttempts(null, responder("default_max_attempts", 5)));
        assertEquals(2, Responder.maxAttempts(Options.defaults().withMaxAttempts(2), responder("default_max_attempts", 5)));
    }

    @Test
    void attemptsAreNumberedFromOneAndFromZeroUnderTheMutant() {
        int spec = ResponderPolicy.SPEC.attemptBase();
        int zero = responder("attempt_base", 0).attemptBase();
        assertEquals(1, Headers.attempt(Map.of(), spec));
        assertEquals(1, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, 0L), spec));
        assertEquals(3, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, 2L), spec));
        assertEquals(0, Headers.attempt(Map.of(), zero));
        assertEquals(0, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, 0L), zero));
        assertEquals(2, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, 2L), zero));
        // The last attempt is the one numbered max_attempts either way: one delivery more from 0.
        assertEquals(3, deliveriesUntilDeadLetter(spec, 3));
        assertEquals(4, deliveriesUntilDeadLetter(zero, 3));
    }

    @Test
    void aGatherGivenNoCorrelationIdUsesItsRequestMessageId() {
        assertEquals("req-1", Requester.gatherCorrelationId(RequesterPolicy.SPEC, null, "req-1"));
        assertEquals("req-1", Requester.gatherCorrelationId(RequesterPolicy.SPEC, "", "req-1"));
        assertEquals("order-7", Requester.gatherCorrelationId(RequesterPolicy.SPEC, "order-7", "req-1"));
        RequesterPolicy none = requester("gather_default_correlation", "none");
        assertNull(Requester.gatherCorrelationId(none, null, "req-1"));
        assertEquals("order-7", Requester.gatherCorrelationId(none, "order-7", "req-1"));
    }

    @Test
    void aGatherEndingAtItsTimeoutSaysSoOnce() {
        Gather shortfall = new Gather("m", 2, RequesterPolicy.SPEC, null);
        assertTrue(shortfall.expire());
        assertFalse(shortfall.expire());
        Gather full = new Gather("f", 1, RequesterPolicy.SPEC, null);
        full.offer(JsonParser.parseString("1"));
        assertFalse(full.expire());
        Gather closed = new Gather("c", null, RequesterPolicy.SPEC, null);
        closed.fail(new RequesterClosedException());
        assertFalse(closed.expire());
        ExecutionException error = assertThrows(ExecutionException.class, () -> closed.result().get());
        assertInstanceOf(RequesterClosedException.class, error.getCause());
        assertEquals(false, RequesterPolicy.SPEC.countGatherTimeouts());
        assertEquals(true, requester("count_gather_timeouts", true).countGatherTimeouts());
    }

    @Test
    void pendingCallsEndAtCloseUnlessTheMutantLeavesThem() {
        assertEquals(RequesterPolicy.PendingAtClose.END_CLOSED, RequesterPolicy.SPEC.pendingAtClose());
        assertEquals(RequesterPolicy.PendingAtClose.WAIT, requester("pending_at_close", "wait").pendingAtClose());
    }

    @Test
    void gatherReturnsAreHonouredApartFromRequestReturns() {
        assertTrue(RequesterPolicy.SPEC.honourGatherReturns());
        RequesterPolicy ignores = requester("honour_gather_returns", false);
        assertFalse(ignores.honourGatherReturns());
        assertTrue(ignores.honourReturns());
    }

    @Test
    void theTypeTravelsAsTheAmqpTypeProperty() {
        AMQP.BasicProperties spec = Requester.requestProperties(RequesterPolicy.SPEC, "m", "m", "q", "quote.requested", null);
        assertEquals("quote.requested", spec.getType());
        assertFalse(spec.getHeaders().containsKey("type"));
        AMQP.BasicProperties none = Requester.requestProperties(RequesterPolicy.SPEC, "m", "m", "q", null, null);
        assertNull(none.getType());
        assertFalse(none.getHeaders().containsKey("type"));

        RequesterPolicy header = requester("type_carrier", "header");
        AMQP.BasicProperties mutant = Requester.requestProperties(header, "m", "m", "q", "quote.requested", null);
        assertNull(mutant.getType());
        assertEquals("quote.requested", mutant.getHeaders().get("type"));
        assertFalse(Requester.requestProperties(header, "m", "m", "q", null, null).getHeaders().containsKey("type"));
    }

    @Test
    void aBodyThatIsNotJsonIsAMalformedRequestWithoutTheHandler() {
        Responder.Admission json = Responder.screen(ResponderPolicy.SPEC, Map.of(), bytes("{\"a\":1}"));
        assertEquals(JsonParser.parseString("{\"a\":1}"), json.body());
        assertNull(json.failure());
        assertFalse(json.drop());

        for (String body : List.of("not json", "", "{\"a\":")) {
            Responder.Admission malformed = Responder.screen(ResponderPolicy.SPEC, Map.of(), bytes(body));
            assertNull(malformed.body());
            assertFalse(malformed.drop());
            assertTrue(malformed.failure().startsWith("MalformedRequest: "), malformed.failure());
            assertTrue(malformed.failure().length() > "MalformedRequest: ".length(), malformed.failure());

            Responder.Admission dropped = Responder.screen(responder("malformed_request", "drop"), Map.of(), bytes(body));
            assertTrue(dropped.drop());
            assertNull(dropped.failure());
        }
    }

    @Test
    void strictHeaderTypesFailsBeforeTheBodyIsLookedAt() {
        Responder.Admission strict = Responder.screen(responder("header_types", "strict"), Map.of("flag", true), bytes("{}"));
        assertEquals("MalformedHeader: flag", strict.failure());
        assertNull(strict.body());
        assertFalse(strict.drop());
        assertNull(Responder.screen(ResponderPolicy.SPEC, Map.of("flag", true), bytes("{}")).failure());
    }

    @Test
    void aFailureReplyIsCheckedLikeAnyReply() {
        assertFalse(Responder.takenAsDelivered(ResponderPolicy.SPEC, "ScenarioFailure: boom"));
        assertFalse(Responder.takenAsDelivered(ResponderPolicy.SPEC, null));
        ResponderPolicy unchecked = responder("failure_reply_delivery", "unchecked");
        assertTrue(Responder.takenAsDelivered(unchecked, "ScenarioFailure: boom"));
        // Only a failure reply: an answer's delivery is still checked.
        assertFalse(Responder.takenAsDelivered(unchecked, null));
    }

    @Test
    void numericKnobsTakeAnyWholeNumberAndRefuseTheRest() {
        assertEquals(10000, PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("default_timeout_ms", 10000.0)).defaultTimeoutMs());
        assertEquals(5, PolicyKnobs.resolve(ResponderPolicy.SPEC, Map.of("default_max_attempts", 5L)).defaultMaxAttempts());
        assertThrows(IllegalArgumentException.class,
                () -> PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("default_timeout_ms", 1.5)));
        assertThrows(IllegalArgumentException.class,
                () -> PolicyKnobs.resolve(ResponderPolicy.SPEC, Map.of("attempt_base", "zero")));
        assertThrows(IllegalStateException.class,
                () -> PolicyKnobs.resolve(ResponderPolicy.SPEC, Map.of("default_max_attempts", 0)));
    }

    /** Deliveries of a request whose reply never goes through, x-delivery-count as the broker counts. */
    private static int deliveriesUntilDeadLetter(int base, int maxAttempts) {
        List<RetryDecision> decisions = new ArrayList<>();
        for (long count = 0; decisions.isEmpty() || decisions.get(decisions.size() - 1) == RetryDecision.REQUEUE; count++) {
            decisions.add(RetryDecision.after(Headers.attempt(Map.of(Headers.DELIVERY_COUNT, count), base), maxAttempts));
        }
        return decisions.size();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static RequesterPolicy requester(String knob, Object value) {
        return PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of(knob, value));
    }

    private static ResponderPolicy responder(String knob, Object value) {
        return PolicyKnobs.resolve(ResponderPolicy.SPEC, Map.of(knob, value));
    }
}
