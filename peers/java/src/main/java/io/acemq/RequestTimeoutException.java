package io.acemq;

import com.google.gson.JsonElement;
import java.util.List;

/**
 * A gather with an expected reply count ran out of time short of it (SG-6). The replies that
 * did arrive are attached, in arrival order.
 */
public class RequestTimeoutException extends AcemqException {
    private final transient List<JsonElement> partialReplies;

    public RequestTimeoutException(String requestMessageId, int expected, List<JsonElement> partialReplies) {
        super("gather " + requestMessageId + " got " + partialReplies.size() + " of " + expected + " replies before its timeout");
        this.partialReplies = List.copyOf(partialReplies);
    }

    public List<JsonElement> getPartialReplies() {
        return partialReplies;
    }
}
