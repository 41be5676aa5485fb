package io.acemq;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
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

    /**
     * The longest prefix of the value that fits in {@value #MAX_BYTES} bytes of UTF-8, cut
     * between characters. Only a policy that breaks RR-18 uses it.
     */
    static String truncate(String value) {
        if (value == null || value.getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES) {
            return value;
        }
        CharsetEncoder encoder = StandardCharsets.UTF_8.newEncoder();
        CharBuffer chars = CharBuffer.wrap(value);
        // The encoder stops before a character that would overflow the buffer.
        encoder.encode(chars, ByteBuffer.allocate(MAX_BYTES), true);
        return value.substring(0, chars.position());
    }
}
