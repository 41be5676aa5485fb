package io.acemq.peer;

/** The error a {@code fail} behaviour raises, named the same in every language's adapter. */
public class ScenarioFailure extends Exception {
    public ScenarioFailure(String message) {
        super(message);
    }
}
