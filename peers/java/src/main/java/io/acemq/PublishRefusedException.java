package io.acemq;

/** The broker returned or nacked a mandatory, confirmed publish (RR-13): it was not delivered. */
public class PublishRefusedException extends AcemqException {
    public PublishRefusedException(String message) {
        super(message);
    }

    public PublishRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
