package io.acemq;

import com.google.gson.JsonElement;

/**
 * A responder's business logic. A handler that throws has its failure sent back to the caller
 * as {@code acemq-error} (RR-10).
 */
@FunctionalInterface
public interface Handler {
    JsonElement handle(IncomingRequest request) throws Exception;
}
