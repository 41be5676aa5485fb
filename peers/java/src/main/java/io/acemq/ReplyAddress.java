package io.acemq;

import java.util.Map;
import java.util.Optional;

/** Where a responder sends its reply, and where in the request it found the address. */
public record ReplyAddress(String queue, Source source) {
    public enum Source {
        HEADER("header"),
        NATIVE("native");

        private final String wireName;

        Source(String wireName) {
            this.wireName = wireName;
        }

        public String wireName() {
            return wireName;
        }
    }

    /**
     * The reply address of a request (RR-3): the {@code acemq-reply-to} header when present and
     * non-empty, else the native {@code reply_to}. A 0.3.0 responder knows only the native
     * property; the {@code native-first} mutant reverses the order.
     */
    public static Optional<ReplyAddress> resolve(
            Map<String, Object> headers, String nativeReplyTo, Profile profile, boolean nativeFirst) {
        String header = profile.usesReplyToHeader() ? Headers.nonEmpty(Headers.text(headers, Headers.REPLY_TO)) : null;
        String nativeValue = Headers.nonEmpty(nativeReplyTo);
        if (nativeFirst && nativeValue != null) {
            return Optional.of(new ReplyAddress(nativeValue, Source.NATIVE));
        }
        if (header != null) {
            return Optional.of(new ReplyAddress(header, Source.HEADER));
        }
        if (nativeValue != null) {
            return Optional.of(new ReplyAddress(nativeValue, Source.NATIVE));
        }
        return Optional.empty();
    }
}
