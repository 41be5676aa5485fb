package io.acemq;

/** The base of every failure a request or gather ends with. */
public class AcemqException extends RuntimeException {
    public AcemqException(String message) {
        super(message);
    }

    public AcemqException(String message, Throwable cause) {
        super(message, cause);
    }
}
