package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.impl.LongStringHelper;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ReplyAddressTest {
    private static Optional<ReplyAddress> resolve(Object header, String nativeReplyTo, Profile profile, boolean nativeFirst) {
        Map<String, Object> headers = header == null ? Map.of() : Map.of(Headers.REPLY_TO, header);
        return ReplyAddress.resolve(headers, nativeReplyTo, profile, nativeFirst);
    }

    @Test
    void headerComesFirst() {
        assertEquals(new ReplyAddress("h", ReplyAddress.Source.HEADER),
                resolve(LongStringHelper.asLongString("h"), "n", Profile.CURRENT, false).orElseThrow());
    }

    @Test
    void headerMayBeAByteArray() {
        assertEquals(new ReplyAddress("h", ReplyAddress.Source.HEADER),
                resolve("h".getBytes(StandardCharsets.UTF_8), null, Profile.CURRENT, false).orElseThrow());
    }

    @Test
    void emptyIsAbsentInEitherPlace() {
        assertEquals(new ReplyAddress("n", ReplyAddress.Source.NATIVE),
                resolve(LongStringHelper.asLongString(""), "n", Profile.CURRENT, false).orElseThrow());
        assertEquals(new ReplyAddress("h", ReplyAddress.Source.HEADER),
                resolve("h", "", Profile.CURRENT, false).orElseThrow());
        assertTrue(resolve("", "", Profile.CURRENT, false).isEmpty());
        assertTrue(resolve(null, null, Profile.CURRENT, false).isEmpty());
    }

    @Test
    void release030ReadsOnlyTheNativeProperty() {
        assertTrue(resolve("h", null, Profile.V0_3_0, false).isEmpty());
        assertEquals(new ReplyAddress("n", ReplyAddress.Source.NATIVE),
                resolve("h", "n", Profile.V0_3_0, false).orElseThrow());
        assertEquals(new ReplyAddress("h", ReplyAddress.Source.HEADER),
                resolve("h", "n", Profile.V0_5_0, false).orElseThrow());
    }

    @Test
    void nativeFirstMutantReversesTheOrder() {
        assertEquals(new ReplyAddress("n", ReplyAddress.Source.NATIVE),
                resolve("h", "n", Profile.CURRENT, true).orElseThrow());
        assertEquals(new ReplyAddress("h", ReplyAddress.Source.HEADER),
                resolve("h", null, Profile.CURRENT, true).orElseThrow());
    }
}
