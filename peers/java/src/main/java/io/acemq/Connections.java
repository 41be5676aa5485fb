package io.acemq;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.AddressResolver;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeoutException;

/**
 * The connection a requester or responder owns, with amqp-client's automatic recovery
 * (RR-20): reconnect under the same name, then channels, queues, bindings and consumers
 * again. The caller's factory is copied, never changed.
 */
final class Connections {
    /**
     * Between two recovery attempts (RR-20.2: the first within 1 s, at most 5 s apart).
     * amqp-client 5.0.0 has a fixed interval only.
     */
    static final long RECOVERY_INTERVAL_MS = 1_000;

    private Connections() {
    }

    /**
     * Connects to the first reachable of {@code options}' nodes, in order; {@code recover}
     * false leaves the connection down once it is lost.
     */
    static Connection open(ConnectionFactory factory, ConnectionOptions options, boolean recover)
            throws IOException, TimeoutException {
        ConnectionFactory own = factory.clone();
        own.setAutomaticRecoveryEnabled(recover);
        own.setTopologyRecoveryEnabled(recover);
        own.setNetworkRecoveryInterval(RECOVERY_INTERVAL_MS);
        List<Address> addresses = options.addresses().isEmpty()
                ? List.of(new Address(factory.getHost(), factory.getPort()))
                : options.addresses();
        InOrder resolver = new InOrder(addresses);
        IOException last = null;
        for (int i = 0; i < addresses.size(); i++) {
            try {
                return own.newConnection((ExecutorService) null, resolver, options.connectionName());
            } catch (IOException e) {
                last = e;
            }
        }
        throw last;
    }

    /**
     * One node per attempt, each attempt the next in the list: amqp-client 5.0.0 shuffles the
     * list a resolver gives it, so a list of one is the only way to keep the caller's order.
     * After a loss, recovery tries the node after the one it had, round robin.
     */
    static final class InOrder implements AddressResolver {
        private final List<Address> addresses;
        private int next;

        InOrder(List<Address> addresses) {
            if (addresses.isEmpty()) {
                throw new IllegalArgumentException("no broker address");
            }
            this.addresses = List.copyOf(addresses);
        }

        @Override
        public synchronized List<Address> getAddresses() {
            Address address = addresses.get(next);
            next = (next + 1) % addresses.size();
            return List.of(address);
        }
    }
}
