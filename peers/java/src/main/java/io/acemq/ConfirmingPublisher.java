package io.acemq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ReturnListener;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Publishes mandatory messages on a confirm-mode channel, one at a time, and reports a
 * publish as refused when the broker returned or nacked it (RR-13).
 *
 * <p>For an unroutable mandatory publish the broker sends {@code basic.return} and then an ack.
 * The client runs return listeners and confirm bookkeeping on the connection's reader thread
 * in frame order, so once {@code waitForConfirms} has seen the ack the return (if any) has
 * been recorded. Keeping one publish in flight per channel makes that return ours.
 */
final class ConfirmingPublisher implements AutoCloseable {
    private static final Duration CONFIRM_TIMEOUT = Duration.ofSeconds(10);

    private final Connection connection;
    private final boolean ignoresReturns;
    /** Written under the publish lock; read without it by {@link #close()}. */
    private volatile Channel channel;
    private volatile boolean closed;
    private volatile String returned;

    ConfirmingPublisher(Connection connection) {
        this(connection, false);
    }

    /** {@code ignoresReturns}: the {@code ignores-returns} mutant's publisher. */
    ConfirmingPublisher(Connection connection, boolean ignoresReturns) {
        this.connection = connection;
        this.ignoresReturns = ignoresReturns;
    }

    synchronized void publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body)
            throws IOException {
        ShortStrings.check("message_id", properties.getMessageId());
        ShortStrings.check("correlation_id", properties.getCorrelationId());
        ShortStrings.check("reply_to", properties.getReplyTo());
        ShortStrings.check("type", properties.getType());
        Channel target = openChannel();
        returned = null;
        boolean acked;
        try {
            target.basicPublish(exchange, routingKey, true, properties, body);
            acked = target.waitForConfirms(CONFIRM_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PublishRefusedException("interrupted while waiting for the broker's confirm", e);
        } catch (TimeoutException e) {
            // The channel's confirm sequence is now ambiguous: start over on a fresh one.
            abortQuietly(target);
            channel = null;
            throw new PublishRefusedException("no confirm from the broker within " + CONFIRM_TIMEOUT.toMillis() + " ms", e);
        } catch (IOException | RuntimeException e) {
            channel = null;
            throw new PublishRefusedException("publish failed: " + e.getMessage(), e);
        }
        String returnText = returned;
        // ignores-returns breaks RR-13: the ack of a returned message is taken as delivery.
        if (returnText != null && !ignoresReturns) {
            throw new PublishRefusedException("returned by the broker (" + returnText + ") to exchange '"
                    + exchange + "' with routing key '" + routingKey + "'");
        }
        if (!acked) {
            throw new PublishRefusedException("nacked by the broker");
        }
    }

    private Channel openChannel() throws IOException {
        if (closed) {
            throw new PublishRefusedException("the publisher is closed");
        }
        if (channel == null || !channel.isOpen()) {
            Channel fresh = connection.createChannel();
            fresh.confirmSelect();
            fresh.addReturnListener((ReturnListener) (code, text, exchange, key, props, body) ->
                    returned = code + " " + text);
            channel = fresh;
            // close() may have run while the channel was being opened, and not seen it.
            if (closed) {
                abortQuietly(fresh);
                throw new PublishRefusedException("the publisher is closed");
            }
        }
        return channel;
    }

    /** Closes the channel once the publish in flight, if any, has its confirm. */
    @Override
    public synchronized void close() {
        closed = true;
        Channel current = channel;
        if (current != null && current.isOpen()) {
            try {
                current.close();
            } catch (IOException | TimeoutException | RuntimeException ignored) {
                // Closing is best effort: the connection may already be gone.
            }
        }
        channel = null;
    }

    /**
     * Closes the channel without taking the publish lock: a publish waiting for its confirm
     * (up to {@link #CONFIRM_TIMEOUT}) fails at once instead of holding the caller up.
     */
    void abort() {
        closed = true;
        Channel current = channel;
        if (current != null) {
            abortQuietly(current);
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
}
