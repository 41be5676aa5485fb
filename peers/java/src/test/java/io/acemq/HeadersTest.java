package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.rabbitmq.client.impl.LongStringHelper;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HeadersTest {
    // RR-4.2, SG-3.1: a tutorial caller sends its own correlation_id and no message_id;
    // RR-14.5: the broker hands a responder amq.rabbitmq.reply-to.<token>.
    @Test
    void aRequestWithoutMessageIdIsKnownByItsCorrelationIdAndDirectReplyToIsRecognised() {
        assertEquals("m-1", Headers.requestId("m-1", "c-1"));
        assertEquals("1", Headers.requestId(null, "1"));
        assertEquals("2", Headers.requestId("", "2"));
        assertNull(Headers.requestId(null, null));
        assertEquals(true, Headers.isDirectReplyTo("amq.rabbitmq.reply-to.g1h2AA5y.H8JZ"));
        assertEquals(false, Headers.isDirectReplyTo("amq.gen-1"));
    }

    @Test
    void plainJavaStringsAreTextToo() {
        // Not on the wire (the client hands over LongString), but a caller's own map may hold them.
        assertEquals("plain", Headers.text("plain"));
        assertNull(Headers.text(null, Headers.REPLY_TO));
    }

    @Test
    void attemptReadsAShortDeliveryCount() {
        assertEquals(4, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, (short) 3)));
        assertEquals(1, Headers.attempt(null));
    }

    @Test
    void failureTextOfAThrowableUsesItsUnqualifiedClassName() {
        assertEquals("IllegalStateException: no price", Headers.failureText(new IllegalStateException("no price")));
        assertEquals("RuntimeException: ", Headers.failureText(new RuntimeException()));
        assertEquals("Nested: x", Headers.failureText(new Nested("x")));
    }

    private static final class Nested extends RuntimeException {
        Nested(String message) {
            super(message);
        }
    }

    @Test
    void strictlyRefusedTypesAreBooleansFloatsTablesAndArrays() {
        Map<String, Object> accepted = new HashMap<>();
        accepted.put("x-text", LongStringHelper.asLongString("t"));
        accepted.put("x-blob", new byte[] {1});
        accepted.put("x-long", 9_000_000_000L);
        accepted.put("x-int", -7);
        accepted.put("x-short", (short) 5);
        accepted.put("x-byte", (byte) 5);
        assertNull(Headers.firstOfStrictlyRefusedType(accepted));
        assertNull(Headers.firstOfStrictlyRefusedType(null));

        for (Object refused : List.of(true, 0.25, 0.5f, Map.of("k", "v"), List.of("a"))) {
            Map<String, Object> headers = new HashMap<>(accepted);
            headers.put("x-odd", refused);
            assertEquals("x-odd", Headers.firstOfStrictlyRefusedType(headers), refused.toString());
        }
        Map<String, Object> several = new HashMap<>(accepted);
        several.put("x-zeta", true);
        several.put("x-alpha", List.of());
        assertEquals("x-alpha", Headers.firstOfStrictlyRefusedType(several));
    }
}
