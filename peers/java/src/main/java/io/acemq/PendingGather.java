package io.acemq;

import com.google.gson.JsonElement;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A gather on its way: its requestMessageId and the replies to come, in arrival order. The
 * result fails with {@link RequestTimeoutException} on a shortfall.
 */
public record PendingGather(String requestMessageId, CompletableFuture<List<JsonElement>> result) {
}
