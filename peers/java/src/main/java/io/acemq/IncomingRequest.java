package io.acemq;

import com.google.gson.JsonElement;
import java.util.Map;

/**
 * A request as a responder's handler sees it: the engine's {@code x-acemq-*} headers are gone
 * (RR-5), the reply address is the one the responder chose (RR-3), and the body is decoded
 * (a request whose body is not JSON never reaches a handler: the responder answers it with a
 * {@code MalformedRequest} failure).
 */
public record IncomingRequest(
        byte[] rawBody,
        JsonElement body,
        String messageId,
        String correlationId,
        ReplyAddress replyAddress,
        Map<String, Object> headers,
        int attempt) {
}
