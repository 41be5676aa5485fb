package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.gson.JsonParseException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class JsonTest {
    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void decodesAnyJsonValue() {
        assertEquals("{\"sku\":\"A-1\",\"n\":1.50}", new String(Json.encode(Json.decode(utf8("{\"sku\": \"A-1\", \"n\": 1.50}"))),
                StandardCharsets.UTF_8));
        assertEquals("3", new String(Json.encode(Json.decode(utf8("3"))), StandardCharsets.UTF_8));
        assertEquals("null", new String(Json.encode(Json.decode(utf8("null"))), StandardCharsets.UTF_8));
    }

    @Test
    void anEmptyBodyIsNotJson() {
        assertThrows(JsonParseException.class, () -> Json.decode(new byte[0]));
        assertThrows(JsonParseException.class, () -> Json.decode(null));
        assertThrows(JsonParseException.class, () -> Json.decode(utf8("  ")));
    }

    @Test
    void lenientSyntaxAndTrailingDataAreRefused() {
        assertThrows(JsonParseException.class, () -> Json.decode(utf8("not json")));
        assertThrows(JsonParseException.class, () -> Json.decode(utf8("{'a': 1}")));
        assertThrows(JsonParseException.class, () -> Json.decode(utf8("{} {}")));
        assertThrows(JsonParseException.class, () -> Json.decode(utf8("{\"a\": ")));
    }
}
