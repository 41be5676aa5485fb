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
    @Test
    void readsLongStringsAndByteArraysAlike() {
        assertEquals("amq.gen-é", Headers.text(LongStringHelper.asLongString("amq.gen-é")));
        assertEquals("amq.gen-é", Headers.text("amq.gen-é".getBytes(StandardCharsets.UTF_8)));
        assertEquals("plain", Headers.text("plain"));
    }

    @Test
    void otherTypesAreNotText() {
        assertNull(Headers.text(42L));
        assertNull(Headers.text(true));
        assertNull(Headers.text(List.of("a")));
        assertNull(Headers.text(null, Headers.REPLY_TO));
        assertNull(Headers.text(Map.of(), Headers.REPLY_TO));
    }

    @Test
    void handlerDoesNotSeeTheEngineNamespace() {
        Map<String, Object> headers = new HashMap<>();
        headers.put("x-acemq-trace", "t");
        headers.put("x-custom", 1);
        headers.put(Headers.REPLY_TO, "q");
        assertEquals(List.of(Headers.REPLY_TO, "x-custom"), List.copyOf(Headers.visibleToHandler(headers).keySet()));
        assertEquals(Map.of(), Headers.visibleToHandler(null));
    }

    @Test
    void attemptIsDeliveryCountPlusOneWhateverItsIntegerType() {
        assertEquals(1, Headers.attempt(null));
        assertEquals(1, Headers.attempt(Map.of()));
        assertEquals(2, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, 1L)));
        assertEquals(3, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, 2)));
        assertEquals(3, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, (byte) 2)));
        assertEquals(4, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, (short) 3)));
        assertEquals(2, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, LongStringHelper.asLongString("1"))));
        assertEquals(1, Headers.attempt(Map.of(Headers.DELIVERY_COUNT, "many")));
    }

    @Test
    void failureTextUsesTheUnqualifiedTypeName() {
        assertEquals("IllegalStateException: no price", Headers.failureText(new IllegalStateException("no price")));
        assertEquals("RuntimeException: ", Headers.failureText(new RuntimeException()));
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
