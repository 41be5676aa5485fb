package io.acemq;

import java.nio.charset.StandardCharsets;

/** AMQP short-string properties hold at most 255 bytes; a longer value is refused (RR-18). */
final class ShortStrings {
    static final int MAX_BYTES = 255;

    private ShortStrings() {
    }

    /** Returns the value, or throws when it would not fit: truncating breaks correlation. */
    static String check(String property, String value) {
        if (value != null) {
            int length = value.getBytes(StandardCharsets.UTF_8).length;
            if (length > MAX_BYTES) {
                throw new IllegalArgumentException(
                        property + " is " + length + " bytes of UTF-8; an AMQP short string holds at most " + MAX_BYTES);
            }
        }
        return value;
    }
}
