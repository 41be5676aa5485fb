package io.acemq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonPrimitive;
import com.rabbitmq.client.AMQP;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The decisions the catalogue mutants' policy knobs change, each at the spec's value
 * and at the value that breaks its clause. The broker-facing paths are exercised by the
 * harness's scenarios; these are the pure parts.
 */
class PolicyDecisionsTest {
    private static RequesterPolicy requester(Map<String, Object> knobs) {
        return PolicyKnobs.resolve(RequesterPolicy.SPEC, knobs);
    }

    private static ResponderPolicy responder(Map<String, Object> knobs) {
        return PolicyKnobs.resolve(ResponderPolicy.SPEC, knobs);
    }

    @Test
    void valuesThatAreNoJavaNameMapOntoConstantsAndStrings() {
        assertEquals(ResponderPolicy.ReplyContentType.APPLICATION_JSON,
                responder(Map.of("reply_content_type", "application/json")).replyContentType());
        assertEquals(ResponderPolicy.ReplyContentType.NONE, responder(Map.of("reply_content_type", "none")).replyContentType());
        assertEquals("x-", responder(Map.of("strip_prefix", "x-")).stripPrefix());
        assertEquals("x-acemq-", ResponderPolicy.SPEC.stripPrefix());
        assertEquals(2, requester(Map.of("publish_copies", 2)).publishCopies());
        assertEquals(0, requester(Map.of("multi_copies_without_count", 0)).multiCopiesWithoutCount());
    }

    @Test
    void theNativeAddressIsTheReplyQueueOrAStaleName() {
        AMQP.BasicProperties spec = Requester.requestProperties(RequesterPolicy.SPEC, "m", "m", "amq.gen-1", null, null);
        assertEquals("amq.gen-1", spec.getReplyTo());
        assertEquals("amq.gen-1", spec.getHeaders().get(Headers.REPLY_TO));
        AMQP.BasicProperties stale = Requester.requestProperties(
                requester(Map.of("native_address", "stale")), "m", "m", "amq.gen-1", null, null);
        assertEquals("amq.gen-1.stale", stale.getReplyTo());
        assertEquals("amq.gen-1", stale.getHeaders().get(Headers.REPLY_TO));
        AMQP.BasicProperties empty = Requester.requestProperties(
                requester(Map.of("native_address", "empty")), "m", "m", "amq.gen-1", null, null);
        assertEquals("", empty.getReplyTo());
        assertEquals("amq.gen-1", empty.getHeaders().get(Headers.REPLY_TO));
        AMQP.BasicProperties headerOnly = Requester.requestProperties(
                requester(Map.of("write_native_address", false)), "m", "m", "amq.gen-1", null, null);
        assertNull(headerOnly.getReplyTo());
        assertEquals("amq.gen-1", headerOnly.getHeaders().get(Headers.REPLY_TO));
    }

    @Test
    void unknownReplyHeadersAreThoseOtherThanTheSpecsTwo() {
        assertNull(Requester.unknownReplyHeader(null));
        assertNull(Requester.unknownReplyHeader(Map.of(Headers.ERROR, "E: x", Headers.RESPONSE_MESSAGE_ID, "m")));
        // x- headers are the broker's and clients' (x-dotnet-pub-seq-no): let by.
        assertNull(Requester.unknownReplyHeader(Map.of(Headers.RESPONSE_MESSAGE_ID, "m", "x-dotnet-pub-seq-no", 1)));
        assertEquals("traceparent", Requester.unknownReplyHeader(
                Map.of(Headers.RESPONSE_MESSAGE_ID, "m", "x-extra", 1, "traceparent", "00-ab")));
    }

    @Test
    void aBytesAddressIsReadOrTakenAsAbsent() {
        Map<String, Object> bytes = Map.of(Headers.REPLY_TO, "q-header".getBytes(StandardCharsets.UTF_8));
        List<ReplyAddress.Source> order = ReplyAddress.SPEC_ORDER;
        assertEquals(Optional.of(new ReplyAddress("q-header", ReplyAddress.Source.HEADER)),
                ReplyAddress.resolve(bytes, "q-native", order, true));
        assertEquals(Optional.of(new ReplyAddress("q-native", ReplyAddress.Source.NATIVE)),
                ReplyAddress.resolve(bytes, "q-native", order, false));
        assertEquals(Optional.empty(), ReplyAddress.resolve(bytes, null, order, false));
        // A long string header is read either way.
        assertEquals(Optional.of(new ReplyAddress("q-header", ReplyAddress.Source.HEADER)),
                ReplyAddress.resolve(Map.of(Headers.REPLY_TO, "q-header"), "q-native", order, false));
        // Header only: a request with just reply_to has no address.
        assertEquals(Optional.empty(), ReplyAddress.resolve(Map.of(), "q-native",
                responder(Map.of("read_order", List.of("header"))).readOrder(), true));
    }

    @Test
    void theStrippedPrefixIsTheEnginesOrEveryXHeader() {
        Map<String, Object> headers = Map.of("x-acemq-trace", "t", "x-tenant", "acme", "tenant", "acme");
        assertEquals(Map.of("x-tenant", "acme", "tenant", "acme"), Headers.visibleToHandler(headers, ResponderPolicy.SPEC.stripPrefix()));
        assertEquals(Map.of("tenant", "acme"), Headers.visibleToHandler(headers, "x-"));
    }

    @Test
    void theHandlerSeesTheSpecsOwnHeadersUnlessHidesAcemqHeaders() {
        Map<String, Object> headers = Map.of(Headers.REPLY_TO, "amq.gen-1", Headers.RESPONSE_MESSAGE_ID, "m",
                "acemq-whatever", "w", "x-custom", "c", "x-acemq-trace", "t");
        assertEquals(Set.of(Headers.REPLY_TO, Headers.RESPONSE_MESSAGE_ID, "acemq-whatever", "x-custom"),
                Responder.visibleToHandler(ResponderPolicy.SPEC, headers).keySet());
        assertEquals(Set.of(Headers.RESPONSE_MESSAGE_ID, "x-custom"),
                Responder.visibleToHandler(responder(Map.of("pass_spec_headers", false)), headers).keySet());
        // Independent of RR-5.1's knob: a policy that keeps the engine headers shows x-acemq-* and the acemq-* headers alike.
        assertEquals(headers.keySet(),
                Responder.visibleToHandler(responder(Map.of("strip_engine_headers", false)), headers).keySet());
        assertEquals(Set.of(), Responder.visibleToHandler(ResponderPolicy.SPEC, null).keySet());
    }

    @Test
    void aFailureReplysBodyAndTypeName() {
        assertArrayEquals(new byte[0], Responder.replyBody(ResponderPolicy.SPEC, null, "Boom: no"));
        assertEquals("{\"error\":\"Boom: no\"}", new String(
                Responder.replyBody(responder(Map.of("failure_body", "json")), null, "Boom: no"), StandardCharsets.UTF_8));
        assertEquals("7", new String(Responder.replyBody(ResponderPolicy.SPEC, new JsonPrimitive(7), null), StandardCharsets.UTF_8));
        // Every failure reply gets it, the handler not run too (RR-10.1 for MalformedRequest).
        String malformed = Responder.screen(ResponderPolicy.SPEC, Map.of(), "{not json".getBytes(StandardCharsets.UTF_8)).failure();
        assertTrue(malformed.startsWith("MalformedRequest: "), malformed);
        assertTrue(new String(Responder.replyBody(responder(Map.of("failure_body", "json")), null, malformed),
                StandardCharsets.UTF_8).startsWith("{\"error\":\"MalformedRequest: "));

        Exception error = new IllegalStateException("no stock");
        assertEquals("IllegalStateException: no stock", Responder.failureText(ResponderPolicy.SPEC, error));
        String qualified = Responder.failureText(responder(Map.of("error_type_name", "qualified")), error);
        assertEquals("java.lang.IllegalStateException: no stock", qualified);
        assertTrue(qualified.contains("."), qualified);
    }

    @Test
    void theRequestQueueIsQuorumOrClassicWhenMissing() {
        assertEquals(ResponderPolicy.RequestQueue.QUORUM, ResponderPolicy.SPEC.requestQueue());
        assertEquals(Map.of("x-queue-type", "quorum"), ResponderPolicy.SPEC.requestQueue().arguments);
        ResponderPolicy classic = responder(Map.of("request_queue", "classic_if_missing"));
        assertEquals(ResponderPolicy.RequestQueue.CLASSIC_IF_MISSING, classic.requestQueue());
        // No x-queue-type: the server's default, a classic queue.
        assertEquals(Map.of(), classic.requestQueue().arguments);
    }
}
