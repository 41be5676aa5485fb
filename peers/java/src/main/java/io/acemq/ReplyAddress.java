package io.acemq;

import java.util.List;
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

    /** The wire spec's read order (RR-3): the header first, then the native property. */
    static final List<Source> SPEC_ORDER = List.of(Source.HEADER, Source.NATIVE);

    /**
     * The reply address of a request (RR-3): the {@code acemq-reply-to} header when present and
     * non-empty, else the native {@code reply_to}; empty when neither names one (RR-12).
     */
    public static Optional<ReplyAddress> resolve(Map<String, Object> headers, String nativeReplyTo) {
        return resolve(headers, nativeReplyTo, SPEC_ORDER);
    }

    /** As {@link #resolve(Map, String)}, looking only at the places named, in that order. */
    static Optional<ReplyAddress> resolve(Map<String, Object> headers, String nativeReplyTo, List<Source> readOrder) {
        return resolve(headers, nativeReplyTo, readOrder, true);
    }

    /**
     * As {@link #resolve(Map, String, List)}; {@code acceptBytes} false takes a header written
     * as a byte array for absent, which breaks RR-2.2.
     */
    static Optional<ReplyAddress> resolve(Map<String, Object> headers, String nativeReplyTo, List<Source> readOrder,
            boolean acceptBytes) {
        for (Source source : readOrder) {
            Object header = headers == null ? null : headers.get(Headers.REPLY_TO);
            String value = Headers.nonEmpty(source == Source.HEADER
                    ? (acceptBytes || !(header instanceof byte[]) ? Headers.text(header) : null)
                    : nativeReplyTo);
            if (value != null) {
                return Optional.of(new ReplyAddress(value, source));
            }
        }
        return Optional.empty();
    }
}
