package io.acemq;

import com.rabbitmq.client.LongString;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The header names of the wire spec and the rules for reading them. */
public final class Headers {
    /** The reply address, written beside the native {@code reply_to} (RR-1). */
    public static final String REPLY_TO = "acemq-reply-to";
    /** A responder's failure, {@code {Type}: {message}}, on an empty-bodied reply (RR-10). */
    public static final String ERROR = "acemq-error";
    /** Why a request was put in {@code {queue}.dlq} (RR-11, RR-14). */
    public static final String DEAD_LETTER_REASON = "acemq-dead-letter-reason";
    /** The request's message id echoed on every reply; gathers demultiplex on it (SG-4). */
    public static final String RESPONSE_MESSAGE_ID = "responseMessageId";
    /** RabbitMQ's direct reply-to: the broker gives a responder reply_to amq.rabbitmq.reply-to.&lt;token&gt;. */
    public static final String DIRECT_REPLY_TO_PREFIX = "amq.rabbitmq.reply-to.";

    /** Whether an address is one of RabbitMQ's direct reply-to (RR-14.5: a reply to it is at most once). */
    public static boolean isDirectReplyTo(String address) {
        return address != null && address.startsWith(DIRECT_REPLY_TO_PREFIX);
    }

    /** A request's id (RR-4.2, SG-3.1): its message_id, or its correlation_id when it has none. */
    public static String requestId(String messageId, String correlationId) {
        return messageId == null || messageId.isEmpty() ? correlationId : messageId;
    }
    /** The spec's own headers' prefix: they reach the handler like any other (RR-5.2). */
    static final String SPEC_PREFIX = "acemq-";
    /** The engine's namespace, stripped before a handler sees a request (RR-5). */
    public static final String ENGINE_PREFIX = "x-acemq-";
    /** Set by a quorum queue on redelivery; the retry policy counts attempts with it. */
    public static final String DELIVERY_COUNT = "x-delivery-count";

    private Headers() {
    }

    /**
     * A string header's value, whether the writer used a long string or a byte array (RR-2);
     * {@code null} when absent or of another type.
     */
    public static String text(Map<String, Object> headers, String name) {
        if (headers == null) {
            return null;
        }
        return text(headers.get(name));
    }

    /** A header value as text when it is a long string or a byte array, else {@code null}. */
    public static String text(Object value) {
        if (value instanceof LongString longString) {
            return new String(longString.getBytes(), StandardCharsets.UTF_8);
        }
        if (value instanceof byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
        if (value instanceof String string) {
            return string;
        }
        return null;
    }

    /** Absent and empty mean the same everywhere (RR-3). */
    static String nonEmpty(String value) {
        return value == null || value.isEmpty() ? null : value;
    }

    /** The headers a handler is shown: everything but the engine's namespace (RR-5). */
    public static Map<String, Object> visibleToHandler(Map<String, Object> headers) {
        return visibleToHandler(headers, ENGINE_PREFIX);
    }

    /** Every header but those starting with {@code prefix}: any other than {@code x-acemq-} breaks RR-5.2. */
    static Map<String, Object> visibleToHandler(Map<String, Object> headers, String prefix) {
        Map<String, Object> visible = new TreeMap<>();
        if (headers != null) {
            headers.forEach((name, value) -> {
                if (!name.startsWith(prefix)) {
                    visible.put(name, value);
                }
            });
        }
        return visible;
    }

    /**
     * The first header, by name, whose value is a boolean, a floating-point number, a table or
     * an array; {@code null} when there is none. Only a strict header-types policy refuses
     * such headers: WF-1 says every type other clients write must be accepted.
     */
    static String firstOfStrictlyRefusedType(Map<String, Object> headers) {
        if (headers == null) {
            return null;
        }
        return new TreeMap<>(headers).entrySet().stream()
                .filter(header -> header.getValue() instanceof Boolean
                        || header.getValue() instanceof Float
                        || header.getValue() instanceof Double
                        || header.getValue() instanceof Map
                        || header.getValue() instanceof List)
                .map(Map.Entry::getKey)
                .findFirst()
                .orElse(null);
    }

    /**
     * The retry policy's attempt number (RR-14): the quorum queue's delivery count plus one,
     * for a non-negative count of any AMQP integer type; 1 when the broker has not set it or
     * it is anything else (a string is not a count).
     */
    public static int attempt(Map<String, Object> headers) {
        return attempt(headers, 1);
    }

    /**
     * The delivery count plus {@code base} ({@code base} when there is no usable count): 1 is
     * the spec's base; a policy numbering attempts from 0 breaks RR-14.
     */
    static int attempt(Map<String, Object> headers, int base) {
        Object count = headers == null ? null : headers.get(DELIVERY_COUNT);
        if (count instanceof Long || count instanceof Integer || count instanceof Short || count instanceof Byte) {
            long value = ((Number) count).longValue();
            if (value >= 0 && value <= Integer.MAX_VALUE - base) {
                return (int) value + base;
            }
        }
        return base;
    }

    /** {@code {Type}: {message}}, the failure text of RR-10, for a thrown error. */
    public static String failureText(Throwable error) {
        return failureText(error.getClass().getName(), error.getMessage());
    }

    /**
     * {@code {Type}: {message}} from a type name as a language reports it: the unqualified name
     * (after the last {@code .}, {@code ::}, {@code /} or {@code $}, a leading {@code *} or
     * {@code &} dropped), so every binding writes the same text for the same failure (RR-10).
     */
    public static String failureText(String typeName, String message) {
        String name = typeName.replaceFirst("^[*&]+", "");
        int cut = -1;
        for (String separator : List.of(".", "::", "/", "$")) {
            int at = name.lastIndexOf(separator);
            if (at >= 0) {
                cut = Math.max(cut, at + separator.length());
            }
        }
        if (cut >= 0) {
            name = name.substring(cut);
        }
        return name + ": " + (message == null ? "" : message);
    }
}
