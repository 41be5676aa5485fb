package io.acemq;

/** The responder's handler failed and sent back its description (RR-10). */
public class ResponderFailedException extends AcemqException {
    private final String failure;

    public ResponderFailedException(String failure) {
        super("responder failed: " + failure);
        this.failure = failure;
    }

    /** The {@code acemq-error} text, {@code {Type}: {message}}. */
    public String getFailure() {
        return failure;
    }
}
