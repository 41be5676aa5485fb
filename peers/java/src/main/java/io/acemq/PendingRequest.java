package io.acemq;

import com.google.gson.JsonElement;
import java.util.concurrent.CompletableFuture;

/**
 * A request on its way: the {@code message_id} it was sent with and the reply to come. The
 * result fails with {@link RequestTimedOutException}, {@link ResponderFailedException} or
 * {@link ReplyDecodeException}.
 */
public record PendingRequest(String requestId, CompletableFuture<JsonElement> result) {
}
