package io.acemq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ReturnListener;
import com.rabbitmq.client.ShutdownListener;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Publishes mandatory messages on a confirm-mode channel and reports a publish as refused
 * when the broker returned or nacked it (RR-13). Any number of threads may publish at once:
 * each waits only for its own confirm, so many publishes are outstanding together.
 *
 * <p>Confirms are tracked per delivery tag (the channel's next publish sequence number, taken
 * under a lock together with the publish), {@code multiple} acks and nacks included. For an
 * unroutable mandatory publish the broker sends {@code basic.return} and then the ack of that
 * publish. A return carries no delivery tag, but it carries the message: it is tied to the
 * oldest unconfirmed publish with the same exchange, routing key, {@code message_id} and
 * {@code correlation_id} that is not marked yet. The client runs return and confirm listeners
 * on the connection's reader thread in frame order, so the publish is still unconfirmed when
 * it is marked. Publishes that look alike route alike, so which of several identical ones is
 * marked does not matter.
 */
final class ConfirmingPublisher implements AutoCloseable {
    private static final Duration CONFIRM_TIMEOUT = Duration.ofSeconds(10);

    private final Connection connection;
    /** Guards opening a channel and taking a sequence number together with its publish. */
    private final Object lock = new Object();
    private volatile ConfirmChannel current;
    private volatile boolean closed;

    ConfirmingPublisher(Connection connection) {
        this.connection = connection;
    }

    /** Publishes and waits for this message's confirm; other publishes go on meanwhile. */
    void publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body)
            throws IOException {
        publish(exchange, routingKey, properties, body, true);
    }

    /**
     * As {@link #publish(String, String, AMQP.BasicProperties, byte[])}; {@code honourReturn}
     * false takes the ack of a returned message as delivery (breaks RR-13).
     */
    void publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body,
            boolean honourReturn) throws IOException {
        publish(exchange, routingKey, properties, body, honourReturn, true);
    }

    /**
     * Publishes without {@code mandatory}, still waiting for its confirm: a reply to a direct
     * reply-to address, which RabbitMQ 3.10 to 4.1 return whether or not it was delivered (RR-14.5).
     */
    void publishNotMandatory(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body)
            throws IOException {
        publish(exchange, routingKey, properties, body, true, false);
    }

    private void publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body,
            boolean honourReturn, boolean mandatory) throws IOException {
        ShortStrings.check("message_id", properties.getMessageId());
        ShortStrings.check("correlation_id", properties.getCorrelationId());
        ShortStrings.check("reply_to", properties.getReplyTo());
        ShortStrings.check("type", properties.getType());
        ConfirmChannel target;
        Unconfirmed publish;
        synchronized (lock) {
            target = openChannel();
            publish = target.publish(exchange, routingKey, properties, body, honourReturn, mandatory);
        }
        try {
            publish.outcome.get(CONFIRM_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PublishRefusedException("interrupted while waiting for the broker's confirm", e);
        } catch (TimeoutException e) {
            // The channel's confirms are now in doubt: every publish on it fails, the next opens afresh.
            target.abort();
            throw new PublishRefusedException("no confirm from the broker within " + CONFIRM_TIMEOUT.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof PublishRefusedException refused) {
                throw refused;
            }
            throw new PublishRefusedException("publish failed: " + e.getCause().getMessage(), e.getCause());
        }
    }

    /** Under the lock: the open channel, or a fresh one in confirm mode. */
    private ConfirmChannel openChannel() throws IOException {
        if (closed) {
            throw new PublishRefusedException("the publisher is closed");
        }
        ConfirmChannel open = current;
        if (open == null || !open.isUsable()) {
            if (open != null) {
                // Lost with its connection: its confirms are in doubt even once amqp-client's
                // recovery has opened it again, so it is closed for a fresh one.
                abortQuietly(open.channel);
            }
            Channel fresh = connection.createChannel();
            try {
                fresh.confirmSelect();
            } catch (IOException | RuntimeException e) {
                abortQuietly(fresh);
                throw e;
            }
            open = new ConfirmChannel(fresh);
            current = open;
            // abort() may have run while the channel was being opened, and not seen it.
            if (closed) {
                open.abort();
                throw new PublishRefusedException("the publisher is closed");
            }
        }
        return open;
    }

    /** Closes the channel once the publishes outstanding on it have their confirms. */
    @Override
    public void close() {
        ConfirmChannel open;
        synchronized (lock) {
            closed = true;
            open = current;
            current = null;
        }
        if (open != null) {
            open.awaitOutstanding(CONFIRM_TIMEOUT);
            open.close();
        }
    }

    /**
     * Closes the channel without waiting: publishes waiting for their confirms (up to
     * {@link #CONFIRM_TIMEOUT}) fail at once instead of holding the caller up.
     */
    void abort() {
        closed = true;
        ConfirmChannel open = current;
        if (open != null) {
            open.abort();
        }
    }

    private static void abortQuietly(Channel target) {
        try {
            if (target.isOpen()) {
                target.abort();
            }
        } catch (IOException | RuntimeException ignored) {
            // Closing is best effort: the connection may already be gone.
        }
    }

    /** One publish the broker has not confirmed yet. */
    private static final class Unconfirmed {
        final String exchange;
        final String routingKey;
        final String messageId;
        final String correlationId;
        final boolean honourReturn;
        final CompletableFuture<Void> outcome = new CompletableFuture<>();
        /** The return's code and text; written and read on the connection's reader thread. */
        String returned;

        Unconfirmed(String exchange, String routingKey, AMQP.BasicProperties properties, boolean honourReturn) {
            this.exchange = exchange;
            this.routingKey = routingKey;
            this.messageId = properties.getMessageId();
            this.correlationId = properties.getCorrelationId();
            this.honourReturn = honourReturn;
        }

        boolean sameMessage(String exchange, String routingKey, AMQP.BasicProperties properties) {
            return this.exchange.equals(exchange) && this.routingKey.equals(routingKey)
                    && Objects.equals(messageId, properties.getMessageId())
                    && Objects.equals(correlationId, properties.getCorrelationId());
        }
    }

    /** A confirm-mode channel and the publishes on it still waiting for their confirms. */
    private final class ConfirmChannel implements ConfirmListener, ReturnListener, ShutdownListener {
        private final Channel channel;
        /** By delivery tag, oldest first. */
        private final ConcurrentNavigableMap<Long, Unconfirmed> unconfirmed = new ConcurrentSkipListMap<>();
        private volatile ShutdownSignalException shutdown;

        ConfirmChannel(Channel channel) {
            this.channel = channel;
            channel.addConfirmListener(this);
            channel.addReturnListener(this);
            channel.addShutdownListener(this);
        }

        boolean isUsable() {
            return shutdown == null && channel.isOpen();
        }

        /** Under the publisher's lock, so the sequence number is this publish's delivery tag. */
        Unconfirmed publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body,
                boolean honourReturn, boolean mandatory) throws IOException {
            Unconfirmed publish = new Unconfirmed(exchange, routingKey, properties, honourReturn);
            long tag = channel.getNextPublishSeqNo();
            // Registered before the publish: its confirm may come before basicPublish returns.
            unconfirmed.put(tag, publish);
            try {
                channel.basicPublish(exchange, routingKey, mandatory, properties, body);
            } catch (IOException | RuntimeException e) {
                unconfirmed.remove(tag, publish);
                current = null;
                throw new PublishRefusedException("publish failed: " + e.getMessage(), e);
            }
            if (shutdown != null) {
                // The channel went while this was being registered: the listener may have missed it.
                failAll("channel closed: " + ConnectionLoss.reason(shutdown));
            }
            return publish;
        }

        @Override
        public void handleReturn(int replyCode, String replyText, String exchange, String routingKey,
                AMQP.BasicProperties properties, byte[] body) {
            for (Unconfirmed publish : unconfirmed.values()) {
                if (publish.returned == null && publish.sameMessage(exchange, routingKey, properties)) {
                    publish.returned = replyCode + " " + replyText;
                    return;
                }
            }
        }

        @Override
        public void handleAck(long deliveryTag, boolean multiple) {
            for (Unconfirmed publish : settle(deliveryTag, multiple)) {
                if (publish.returned != null && publish.honourReturn) {
                    publish.outcome.completeExceptionally(new PublishRefusedException("returned by the broker ("
                            + publish.returned + ") to exchange '" + publish.exchange + "' with routing key '"
                            + publish.routingKey + "'"));
                } else {
                    publish.outcome.complete(null);
                }
            }
        }

        @Override
        public void handleNack(long deliveryTag, boolean multiple) {
            for (Unconfirmed publish : settle(deliveryTag, multiple)) {
                publish.outcome.completeExceptionally(new PublishRefusedException("nacked by the broker"));
            }
        }

        /** The publishes a confirm settles: its own tag, or with {@code multiple} every tag up to it. */
        private List<Unconfirmed> settle(long deliveryTag, boolean multiple) {
            List<Unconfirmed> settled = new ArrayList<>();
            if (multiple) {
                ConcurrentNavigableMap<Long, Unconfirmed> upTo = unconfirmed.headMap(deliveryTag, true);
                for (Map.Entry<Long, Unconfirmed> entry : upTo.entrySet()) {
                    if (upTo.remove(entry.getKey(), entry.getValue())) {
                        settled.add(entry.getValue());
                    }
                }
            } else {
                Unconfirmed publish = unconfirmed.remove(deliveryTag);
                if (publish != null) {
                    settled.add(publish);
                }
            }
            return settled;
        }

        @Override
        public void shutdownCompleted(ShutdownSignalException cause) {
            shutdown = cause;
            failAll("channel closed: " + ConnectionLoss.reason(cause));
        }

        private void failAll(String reason) {
            for (Long tag : unconfirmed.keySet()) {
                Unconfirmed publish = unconfirmed.remove(tag);
                if (publish != null) {
                    publish.outcome.completeExceptionally(new PublishRefusedException("publish failed: " + reason));
                }
            }
        }

        void awaitOutstanding(Duration bound) {
            CompletableFuture<?>[] outcomes = unconfirmed.values().stream()
                    .map(publish -> publish.outcome)
                    .toArray(CompletableFuture<?>[]::new);
            try {
                CompletableFuture.allOf(outcomes).get(bound.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException ignored) {
                // Their publishers hear the outcome; closing goes ahead either way.
            }
        }

        void close() {
            try {
                if (channel.isOpen()) {
                    channel.close();
                }
            } catch (IOException | TimeoutException | RuntimeException ignored) {
                // Closing is best effort: the connection may already be gone.
            }
        }

        void abort() {
            synchronized (lock) {
                if (current == this) {
                    current = null;
                }
            }
            abortQuietly(channel);
        }
    }
}
