package io.acemq;

/**
 * The requester's connection was lost while the call was pending, or before its request was
 * confirmed (RR-20.1): its reply queue went with the connection, so no reply can reach it.
 * The requester recovers on its own; a later call is answered as before.
 */
public class ConnectionLostException extends AcemqException {
    private final String reason;

    public ConnectionLostException(String reason) {
        super("connection lost: " + reason);
        this.reason = reason;
    }

    /** The client's account of the loss, e.g. {@code CONNECTION_FORCED - Closed via management plugin}. */
    public String getReason() {
        return reason;
    }
}
