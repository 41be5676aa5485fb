package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * RR-20's knobs at the spec's value and at the value that breaks their clause, and the pure
 * parts of a binding's recovery: the order nodes are tried in, and what a delivery may still
 * settle. The losses and recoveries themselves are the harness's scenarios, on a broker.
 */
class ConnectionRecoveryTest {
    @Test
    void theSpecEndsLostCallsAndRecoversBothSides() {
        assertEquals(RequesterPolicy.OnConnectionLost.END_LOST, RequesterPolicy.SPEC.onConnectionLost());
        assertTrue(RequesterPolicy.SPEC.recoverConnection());
        assertTrue(ResponderPolicy.SPEC.recoverConnection());
        assertEquals(ResponderPolicy.AckTiming.AFTER_HANDLING, ResponderPolicy.SPEC.ackTiming());
    }

    @Test
    void theKnobsThatBreakRr20SetTheirFieldsOnly() {
        RequesterPolicy waits = PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("on_connection_lost", "wait"));
        assertEquals(RequesterPolicy.OnConnectionLost.WAIT, waits.onConnectionLost());
        assertTrue(waits.recoverConnection());
        RequesterPolicy down = PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("recover_connection", false));
        assertFalse(down.recoverConnection());
        assertEquals(RequesterPolicy.OnConnectionLost.END_LOST, down.onConnectionLost());
        ResponderPolicy early = PolicyKnobs.resolve(ResponderPolicy.SPEC, Map.of("ack_timing", "on_delivery"));
        assertEquals(ResponderPolicy.AckTiming.ON_DELIVERY, early.ackTiming());
        assertTrue(early.recoverConnection());
        assertFalse(PolicyKnobs.resolve(ResponderPolicy.SPEC, Map.of("recover_connection", false)).recoverConnection());
        assertThrows(IllegalArgumentException.class,
                () -> PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("on_connection_lost", "retry")));
    }

    @Test
    void nodesAreTriedInTheGivenOrderOnePerAttemptRoundRobin() {
        Address a = new Address("a", 5672);
        Address b = new Address("b", 5673);
        Address c = new Address("c", 5674);
        Connections.InOrder resolver = new Connections.InOrder(List.of(a, b, c));
        List<Address> tried = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            List<Address> attempt = resolver.getAddresses();
            // One a time: amqp-client 5.0.0 shuffles whatever list it is given.
            assertEquals(1, attempt.size());
            tried.add(attempt.get(0));
        }
        assertEquals(List.of(a, b, c, a, b), tried);
        assertThrows(IllegalArgumentException.class, () -> new Connections.InOrder(List.of()));
    }

    @Test
    void aDeliveryFromBeforeALossIsNoLongerSettled() {
        Responder.Delivery delivery = new Responder.Delivery(recording(new ArrayList<>()), 7, 0);
        assertFalse(delivery.lostSince(0));
        assertTrue(delivery.lostSince(1));
    }

    @Test
    void aDeliveryIsSettledOnceWhateverComesAfter() throws Exception {
        // Under ack_timing: on_delivery the ack comes first; the settlement after the handler
        // (ack, requeue) must not settle it again (a second ack of a tag closes the channel).
        List<String> calls = new ArrayList<>();
        Responder.Delivery early = new Responder.Delivery(recording(calls), 7, 0);
        early.ack();
        early.requeue();
        early.ack();
        assertEquals(List.of("basicAck 7"), calls);

        calls.clear();
        Responder.Delivery retried = new Responder.Delivery(recording(calls), 8, 0);
        retried.requeue();
        assertEquals(List.of("basicNack 8 requeue=true"), calls);
    }

    @Test
    void aConnectionLostErrorCarriesTheClientsReason() {
        ConnectionLostException lost = new ConnectionLostException("CONNECTION_FORCED - Closed via management plugin");
        assertEquals("CONNECTION_FORCED - Closed via management plugin", lost.getReason());
        assertTrue(lost instanceof AcemqException);
        assertTrue(lost.getMessage().contains("Closed via management plugin"), lost.getMessage());
    }

    /** A channel that records the settlements made on it. */
    private static Channel recording(List<String> calls) {
        return (Channel) Proxy.newProxyInstance(Channel.class.getClassLoader(), new Class<?>[] {Channel.class},
                (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "basicAck" -> calls.add("basicAck " + args[0]);
                        case "basicNack" -> calls.add("basicNack " + args[0] + " requeue=" + args[2]);
                        default -> throw new UnsupportedOperationException(method.getName());
                    }
                    return null;
                });
    }
}
