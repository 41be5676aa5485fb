package io.acemq;

import com.google.gson.JsonElement;
import java.util.Map;

/**
 * A request as a responder's handler sees it: the engine's {@code x-acemq-*} headers are gone
 * (RR-5), and the reply address is the one the responder chose (RR-3).
 */
public record IncomingRequest(
        byte[] rawBody,
        String messageId,
        String correlationId,
        ReplyAddress replyAddress,
        Map<String, Object> headers,
        int attempt) {

    /** The body decoded as JSON; throws {@code JsonParseException} when it is not JSON. */
    public JsonElement body() {
        return Json.decode(rawBody);
    }
}
