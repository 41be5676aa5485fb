package io.acemq;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a durable quorum request queue and replies to whatever queue each request names.
 * Replies are mandatory and confirmed; one that cannot be delivered sends the request back to
 * the queue until the last attempt, which dead-letters it to {@code {queue}.dlq} (RR-14).
 */
public final class Responder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Responder.class);
    /** Requests handled at once by one responder, unless the builder says otherwise. */
    public static final int DEFAULT_CONCURRENCY = 16;

    private final String queue;
    private final Handler handler;
    private final Options options;
    private final ResponderObserver observer;
    private final int concurrency;
    private final ExecutorService workers;
    // RR-16: the counters exist, at zero, before the consumer is registered.
    private final AnsweredCounter answered;
    private final AtomicLong unanswerable = new AtomicLong();
    private Connection connection;
    private boolean ownsConnection;
    private Channel channel;
    private ConfirmingPublisher publisher;
    private String consumerTag;

    private Responder(Builder builder) {
        this.queue = builder.queue;
        this.handler = Objects.requireNonNull(builder.handler, "handler");
        this.options = builder.options;
        this.answered = new AnsweredCounter(options.mutant());
        this.observer = builder.observer == null ? new ResponderObserver() { } : builder.observer;
        this.concurrency = builder.concurrency;
        this.workers = Executors.newFixedThreadPool(concurrency, runnable -> {
            Thread thread = new Thread(runnable, "acemq-responder-" + queue);
            thread.setDaemon(true);
            return thread;
        });
    }

    public static Builder builder(String queue) {
        return new Builder(queue);
    }

    public String queue() {
        return queue;
    }

    /** Requests answered, counted before the reply left and taken back if it failed (RR-15). */
    public long getAnswered() {
        return answered.get();
    }

    /** Requests that named nowhere to reply (RR-12). */
    public long getUnanswerable() {
        return unanswerable.get();
    }

    private void start(Connection target, boolean owns, Builder builder) throws IOException {
        connection = target;
        ownsConnection = owns;
        channel = connection.createChannel();
        Map<String, Object> quorum = Map.of("x-queue-type", "quorum");
        channel.queueDeclare(queue, true, false, false, quorum);
        // classic-dlq breaks RR-17: the dead-letter queue loses the quorum queue's guarantees.
        channel.queueDeclare(deadLetterQueue(), true, false, false,
                options.is(Mutant.CLASSIC_DLQ) ? Map.of("x-queue-type", "classic") : quorum);
        if (builder.bindExchange != null) {
            channel.queueBind(queue, builder.bindExchange, builder.bindRoutingKey == null ? "" : builder.bindRoutingKey);
        }
        // The prefetch matches the handler threads: a slow handler does not hold back the rest.
        channel.basicQos(concurrency);
        publisher = new ConfirmingPublisher(connection);
        consumerTag = channel.basicConsume(queue, false, new RequestConsumer(channel));
    }

    private String deadLetterQueue() {
        return queue + ".dlq";
    }

    private void onRequest(long tag, AMQP.BasicProperties properties, byte[] body) throws IOException {
        Map<String, Object> headers = properties.getHeaders();
        String messageId = properties.getMessageId();
        Optional<ReplyAddress> address = ReplyAddress.resolve(
                headers, properties.getReplyTo(), options.profile(), options.is(Mutant.NATIVE_FIRST));
        if (address.isEmpty()) {
            unanswerable.incrementAndGet();
            if (options.is(Mutant.DEAD_LETTER_UNANSWERABLE)) {
                deadLetter(tag, properties, body, "Unanswerable: the request names no reply address");
            } else {
                channel.basicAck(tag, false);
            }
            observer.unanswerable(messageId);
            return;
        }
        int attempt = Headers.attempt(headers);
        Map<String, Object> visible = options.is(Mutant.NO_STRIP)
                ? new TreeMap<>(headers == null ? Map.of() : headers)
                : Headers.visibleToHandler(headers);
        IncomingRequest request = new IncomingRequest(
                body, messageId, properties.getCorrelationId(), address.get(), visible, attempt);

        JsonElement reply = JsonNull.INSTANCE;
        String failure = null;
        String refusedHeader = options.is(Mutant.STRICT_HEADER_TYPES) ? Headers.firstOfStrictlyRefusedType(headers) : null;
        if (refusedHeader != null) {
            // Breaks WF-1: a header type other clients write fails the request, handler not run.
            failure = "MalformedHeader: " + refusedHeader;
        } else {
            observer.handled(request);
            try {
                JsonElement result = handler.handle(request);
                reply = result == null ? JsonNull.INSTANCE : result;
            } catch (Exception e) {
                failure = Headers.failureText(e);
            }
        }

        boolean counts = failure == null || options.is(Mutant.COUNTS_FAILURES);
        boolean counted = counts && answered.beforePublish();
        try {
            publisher.publish("", address.get().queue(), replyProperties(properties, failure),
                    failure == null ? Json.encode(reply) : new byte[0]);
        } catch (IOException | RuntimeException e) {
            answered.publishFailed(counted);
            onReplyFailed(tag, properties, body, attempt, e.getMessage());
            return;
        }
        if (counts) {
            answered.published();
        }
        observer.replied(messageId, failure);
        if (failure != null && !options.is(Mutant.NO_DLQ_ON_FAILURE)) {
            // RR-11: the caller has its answer; a retry would answer twice.
            deadLetter(tag, properties, body, failure);
        } else {
            channel.basicAck(tag, false);
        }
    }

    private void onReplyFailed(long tag, AMQP.BasicProperties properties, byte[] body, int attempt, String error)
            throws IOException {
        String messageId = properties.getMessageId();
        LOG.warn("reply to {} failed on attempt {}: {}", messageId, attempt, error);
        observer.replyFailed(messageId, attempt, error);
        if (options.is(Mutant.ACKS_UNDELIVERABLE)) {
            // Breaks RR-14: the request is gone, neither retried nor dead-lettered.
            channel.basicAck(tag, false);
        } else if (attempt >= options.maxAttempts()) {
            deadLetter(tag, properties, body, "UndeliverableReply: " + error);
        } else {
            // requeue given explicitly: client libraries disagree on its default.
            channel.basicNack(tag, false, true);
        }
    }

    private void deadLetter(long tag, AMQP.BasicProperties properties, byte[] body, String reason) throws IOException {
        Map<String, Object> headers = new HashMap<>();
        if (properties.getHeaders() != null) {
            headers.putAll(properties.getHeaders());
        }
        headers.put(Headers.DEAD_LETTER_REASON, reason);
        try {
            publisher.publish("", deadLetterQueue(), properties.builder().headers(headers).build(), body);
        } catch (IOException | RuntimeException e) {
            LOG.error("dead-lettering {} to {} failed, requeueing it: {}",
                    properties.getMessageId(), deadLetterQueue(), e.getMessage());
            channel.basicNack(tag, false, true);
            return;
        }
        channel.basicAck(tag, false);
        observer.deadLettered(properties.getMessageId(), reason);
    }

    /** A reply names its request by message_id twice: correlation_id (RR-4) and responseMessageId (SG-3). */
    private AMQP.BasicProperties replyProperties(AMQP.BasicProperties request, String failure) {
        String requestId = request.getMessageId();
        Map<String, Object> headers = new HashMap<>();
        // no-response-message-id breaks SG-3: gathers cannot tell whose reply this is.
        if (requestId != null && !options.is(Mutant.NO_RESPONSE_MESSAGE_ID)) {
            headers.put(Headers.RESPONSE_MESSAGE_ID, requestId);
        }
        if (failure != null) {
            headers.put(Headers.ERROR, failure);
        }
        return new AMQP.BasicProperties.Builder()
                // correlation-from-correlation-id breaks RR-4: the requester correlates by message_id.
                .correlationId(options.is(Mutant.CORRELATION_FROM_CORRELATION_ID) ? request.getCorrelationId() : requestId)
                .contentType("application/json")
                .headers(headers)
                .build();
    }

    /** Cancels the consumer and closes the channels (and the connection when it owns it). */
    @Override
    public void close() {
        workers.shutdownNow();
        try {
            if (channel != null && channel.isOpen()) {
                if (consumerTag != null) {
                    channel.basicCancel(consumerTag);
                }
                channel.close();
            }
        } catch (IOException | TimeoutException | RuntimeException e) {
            LOG.debug("closing responder channel: {}", e.toString());
        }
        if (publisher != null) {
            publisher.close();
        }
        if (ownsConnection) {
            try {
                connection.close();
            } catch (IOException | RuntimeException e) {
                LOG.debug("closing responder connection: {}", e.toString());
            }
        }
    }

    private final class RequestConsumer extends DefaultConsumer {
        RequestConsumer(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            try {
                workers.execute(() -> {
                    try {
                        onRequest(envelope.getDeliveryTag(), properties, body);
                    } catch (IOException | RuntimeException e) {
                        LOG.error("request on {} could not be handled", queue, e);
                    }
                });
            } catch (RejectedExecutionException e) {
                // Stopping: the broker requeues what was not acknowledged.
                LOG.debug("request on {} arrived while stopping", queue);
            }
        }
    }

    /** Configures and starts a {@link Responder}. */
    public static final class Builder {
        private final String queue;
        private Handler handler;
        private Options options = Options.defaults();
        private ResponderObserver observer;
        private String bindExchange;
        private String bindRoutingKey;
        private int concurrency = DEFAULT_CONCURRENCY;

        private Builder(String queue) {
            if (queue == null || queue.isEmpty()) {
                throw new IllegalArgumentException("a responder needs a queue name");
            }
            this.queue = queue;
        }

        public Builder handler(Handler value) {
            handler = value;
            return this;
        }

        public Builder options(Options value) {
            options = Objects.requireNonNull(value);
            return this;
        }

        public Builder observer(ResponderObserver value) {
            observer = value;
            return this;
        }

        /** How many requests this responder handles at once (and its prefetch). */
        public Builder concurrency(int value) {
            if (value < 1) {
                throw new IllegalArgumentException("concurrency must be at least 1");
            }
            concurrency = value;
            return this;
        }

        /** Binds the request queue to an exchange the caller has declared. */
        public Builder bind(String exchange, String routingKey) {
            bindExchange = exchange;
            bindRoutingKey = routingKey;
            return this;
        }

        /** Declares the queues and subscribes, on a connection of its own. */
        public Responder start(ConnectionFactory factory) throws IOException, TimeoutException {
            Connection connection = factory.newConnection("acemq-java responder " + queue);
            Responder responder = new Responder(this);
            try {
                responder.start(connection, true, this);
            } catch (IOException | RuntimeException e) {
                responder.workers.shutdownNow();
                connection.abort();
                throw e;
            }
            return responder;
        }

        /** Declares the queues and subscribes, on channels of a connection the caller keeps. */
        public Responder start(Connection connection) throws IOException {
            Responder responder = new Responder(this);
            try {
                responder.start(connection, false, this);
            } catch (IOException | RuntimeException e) {
                responder.close();
                throw e;
            }
            return responder;
        }
    }
}
