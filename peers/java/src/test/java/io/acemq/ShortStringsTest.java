package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

class ShortStringsTest {
    @Test
    void absentIsFine() {
        assertNull(ShortStrings.check("message_id", null));
    }

    @Test
    void truncateCutsTo255BytesBetweenCharacters() {
        assertEquals("a".repeat(255), ShortStrings.truncate("a".repeat(300)));
        // 127 two-byte characters are 254 bytes; the 128th would not fit.
        assertEquals("é".repeat(127), ShortStrings.truncate("é".repeat(200)));
        // A surrogate pair (4 bytes) is kept whole or dropped whole.
        String emoji = "a".repeat(253) + "\uD83D\uDE00";
        assertEquals("a".repeat(253), ShortStrings.truncate(emoji));
        String fits = "é".repeat(127);
        assertEquals(fits, ShortStrings.truncate(fits));
        assertNull(ShortStrings.truncate(null));
    }
}
