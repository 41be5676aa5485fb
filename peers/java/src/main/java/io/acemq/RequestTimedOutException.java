package io.acemq;

import java.time.Duration;

/**
 * No reply arrived in time (RR-9). The request may still be processed: a timeout says no
 * answer arrived, not that nothing happened.
 */
public class RequestTimedOutException extends AcemqException {
    private final String requestId;

    public RequestTimedOutException(String requestId, Duration timeout) {
        super("no reply to request " + requestId + " within " + timeout.toMillis() + " ms");
        this.requestId = requestId;
    }

    public String getRequestId() {
        return requestId;
    }
}
