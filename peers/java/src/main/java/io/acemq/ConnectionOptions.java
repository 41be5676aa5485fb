package io.acemq;

import com.rabbitmq.client.Address;
import java.util.List;
import java.util.Objects;

/**
 * How a {@link Requester} or {@link Responder} connects: the client-provided connection name
 * (the name the management UI shows, on the first connection and on every recovery) and the
 * broker nodes it may connect to, the preferred one first. An empty list is the factory's own
 * host and port. Credentials, virtual host and TLS are the {@code ConnectionFactory}'s.
 */
public record ConnectionOptions(String connectionName, List<Address> addresses) {
    public ConnectionOptions {
        Objects.requireNonNull(connectionName, "connectionName");
        addresses = List.copyOf(addresses);
    }

    /** A connection named {@code connectionName} to the factory's host and port. */
    public static ConnectionOptions named(String connectionName) {
        return new ConnectionOptions(connectionName, List.of());
    }

    public ConnectionOptions withAddresses(List<Address> value) {
        return new ConnectionOptions(connectionName, value);
    }
}
