package io.acemq;

/** The requester was closed while the call was waiting. */
public class RequesterClosedException extends AcemqException {
    public RequesterClosedException() {
        super("requester closed");
    }
}
