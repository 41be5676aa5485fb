package io.acemq;

/** A reply without {@code acemq-error} whose body is not JSON (RR-19). */
public class ReplyDecodeException extends AcemqException {
    public ReplyDecodeException(String message, Throwable cause) {
        super(message, cause);
    }
}
