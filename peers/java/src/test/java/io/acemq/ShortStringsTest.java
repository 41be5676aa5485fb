package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ShortStringsTest {
    @Test
    void upTo255BytesPass() {
        String max = "a".repeat(255);
        assertEquals(max, ShortStrings.check("message_id", max));
        assertNull(ShortStrings.check("message_id", null));
    }

    @Test
    void longerValuesAreRefusedNotTruncated() {
        assertThrows(IllegalArgumentException.class, () -> ShortStrings.check("correlation_id", "a".repeat(256)));
        // 128 two-byte characters are 256 bytes.
        assertThrows(IllegalArgumentException.class, () -> ShortStrings.check("correlation_id", "é".repeat(128)));
    }
}
