package io.acemq.peer;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import java.io.IOException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The bare amqp-client, no acemq code: the physical limit a binding is measured against.
 * {@link #load} is the raw requester of {@code load}; {@link #startEchoResponder} the raw
 * echo responder of {@code responder.start} (docs/peer-protocol.md, Version 2).
 */
final class RawClient {
    private RawClient() {
    }

    /**
     * One connection, one channel, one server-named classic exclusive auto-delete reply queue
     * consumed with auto-ack; waiters found by correlation_id.
     */
    static com.google.gson.JsonObject load(ConnectionFactory factory, String exchange, String routingKey, int requests,
            int inFlight, int bodyBytes, long timeoutMs, int warmup) throws Exception {
        Map<String, Waiter> waiters = new ConcurrentHashMap<>();
        ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1);
        timers.setRemoveOnCancelPolicy(true);
        Connection connection = factory.newConnection("acemq-java raw load");
        try {
            Channel channel = connection.createChannel();
            String replyQueue = channel.queueDeclare("", false, true, true, Map.of("x-queue-type", "classic")).getQueue();
            channel.basicConsume(replyQueue, true, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
                    String id = properties.getCorrelationId();
                    Waiter waiter = id == null ? null : waiters.remove(id);
                    if (waiter != null) {
                        waiter.timer.cancel(false);
                        waiter.load.done(waiter.index, waiter.startedNanos);
                    }
                }
            });
            byte[] body = Load.body(bodyBytes);
            return Load.run("raw", requests, inFlight, bodyBytes, warmup, (index, startedNanos, load) -> {
                String id = UUID.randomUUID().toString();
                Waiter waiter = new Waiter(index, startedNanos, load);
                waiters.put(id, waiter);
                waiter.timer = timers.schedule(() -> {
                    if (waiters.remove(id, waiter)) {
                        load.timedOut();
                    }
                }, timeoutMs, TimeUnit.MILLISECONDS);
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                        .messageId(id).correlationId(id).replyTo(replyQueue).contentType("application/json").build();
                try {
                    // One publishing thread: the channel is never written from two at once.
                    channel.basicPublish(exchange, routingKey, properties, body);
                } catch (IOException | RuntimeException e) {
                    if (waiters.remove(id, waiter)) {
                        waiter.timer.cancel(false);
                        throw e;
                    }
                }
            });
        } finally {
            timers.shutdownNow();
            connection.abort(5_000);
        }
    }

    /**
     * Declares {@code queue} as a durable quorum queue and echoes every request body to its
     * reply_to, correlation_id = the request's message_id (else its correlation_id); manual
     * acks, prefetch 64. Returns what closes it.
     */
    static AutoCloseable startEchoResponder(ConnectionFactory factory, String queue) throws IOException, TimeoutException {
        Connection connection = factory.newConnection("acemq-java raw responder " + queue);
        try {
            Channel channel = connection.createChannel();
            channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            channel.basicQos(64);
            channel.basicConsume(queue, false, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
                        throws IOException {
                    String replyTo = properties.getReplyTo();
                    if (replyTo != null && !replyTo.isEmpty()) {
                        String correlation = properties.getMessageId() != null
                                ? properties.getMessageId()
                                : properties.getCorrelationId();
                        channel.basicPublish("", replyTo, new AMQP.BasicProperties.Builder()
                                .correlationId(correlation).contentType("application/json").build(), body);
                    }
                    channel.basicAck(envelope.getDeliveryTag(), false);
                }
            });
        } catch (IOException | RuntimeException e) {
            connection.abort();
            throw e;
        }
        return () -> connection.abort(5_000);
    }

    private static final class Waiter {
        final int index;
        final long startedNanos;
        final Load load;
        volatile ScheduledFuture<?> timer;

        Waiter(int index, long startedNanos, Load load) {
            this.index = index;
            this.startedNanos = startedNanos;
            this.load = load;
        }
    }

}
