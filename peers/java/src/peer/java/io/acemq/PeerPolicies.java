package io.acemq;

import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * The conformance peer's way into the binding's package-private policies. This class lives in
 * the binding's package but in the peer's source tree and jar: the binding's jar does not have
 * it, so a service using the binding cannot open a requester or responder off the spec.
 *
 * <p>A policy is given as the catalogue's knobs ({@code snake_case} name to value, as protocol
 * 4's {@code policy} carries them), set on the policy record field by field by
 * {@link PolicyKnobs}; every knob left out keeps the spec's value, and a knob or value the
 * record has not is refused, naming it.
 */
public final class PeerPolicies {
    private PeerPolicies() {
    }

    /** The requester knobs the binding has, by catalogue name. */
    public static Set<String> requesterKnobs() {
        return PolicyKnobs.names(RequesterPolicy.class);
    }

    /** The responder knobs the binding has, by catalogue name. */
    public static Set<String> responderKnobs() {
        return PolicyKnobs.names(ResponderPolicy.class);
    }

    /**
     * Opens a requester whose policy is the spec's with {@code knobs} applied, without
     * {@link Options}: a call given no timeout gets the binding's own default.
     */
    public static Requester openRequester(ConnectionFactory factory, RequesterObserver observer, Map<String, Object> knobs)
            throws IOException, TimeoutException {
        return Requester.open(factory, null, observer, requesterPolicy(knobs));
    }

    /** As {@link #openRequester(ConnectionFactory, RequesterObserver, Map)}, its connection named and placed as {@code connection} says. */
    public static Requester openRequester(ConnectionFactory factory, ConnectionOptions connection, RequesterObserver observer,
            Map<String, Object> knobs) throws IOException, TimeoutException {
        return Requester.open(factory, connection, null, observer, requesterPolicy(knobs));
    }

    /** Gives the builder the spec's responder policy with {@code knobs} applied. */
    public static Responder.Builder withPolicy(Responder.Builder builder, Map<String, Object> knobs) {
        return builder.policy(responderPolicy(knobs));
    }

    static RequesterPolicy requesterPolicy(Map<String, Object> knobs) {
        return PolicyKnobs.resolve(RequesterPolicy.SPEC, knobs);
    }

    static ResponderPolicy responderPolicy(Map<String, Object> knobs) {
        return PolicyKnobs.resolve(ResponderPolicy.SPEC, knobs);
    }
}
