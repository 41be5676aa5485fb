package io.acemq;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.ShutdownListener;
import com.rabbitmq.client.ShutdownSignalException;
import com.rabbitmq.client.impl.recovery.AutorecoveringConnection;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a durable quorum request queue and replies to whatever queue each request names.
 * Replies are mandatory and confirmed; one that cannot be delivered sends the request back to
 * the queue until the last attempt, which dead-letters it to {@code {queue}.dlq} (RR-14).
 *
 * <p>A request is acknowledged once it is settled, never before its handler ran. When the
 * connection is lost, the requests it carried are abandoned (no reply, no ack: the broker
 * gives them back, RR-20.4) and amqp-client's automatic recovery reconnects under the same
 * connection name, declares both queues again and consumes again (RR-20.2); the counters
 * carry on.
 */
public final class Responder implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Responder.class);
    /** Requests handled at once by one responder, unless the builder says otherwise. */
    public static final int DEFAULT_CONCURRENCY = 32;
    /** The failure type of a request whose body is not JSON, the same in every language. */
    static final String MALFORMED_REQUEST = "MalformedRequest";
    /** How long close waits for replies already published to be confirmed and their requests acked. */
    static final Duration SETTLE_BOUND = Duration.ofSeconds(5);

    private final String queue;
    private final Handler handler;
    /** Attempts at an undeliverable reply: the Options', else the binding's own (RR-14). */
    private final int maxAttempts;
    private final ResponderPolicy policy;
    private final ResponderObserver observer;
    private final int concurrency;
    private final ExecutorService workers;
    // RR-16: the counters exist, at zero, before the consumer is registered.
    private final AnsweredCounter answered;
    private volatile boolean closing;
    /** Requests past their handler whose reply or ack is not settled yet: close waits for them. */
    private final SettlingRequests settling = new SettlingRequests();
    private final AtomicLong unanswerable = new AtomicLong();
    private Connection connection;
    private boolean ownsConnection;
    private volatile Channel channel;
    private ConfirmingPublisher publisher;
    private volatile String consumerTag;
    private String bindExchange;
    private String bindRoutingKey;
    /** Connection losses so far: a request delivered before the last one is no longer ours to settle. */
    private final AtomicLong losses = new AtomicLong();
    /** Whether the last recovery brought the consumer back (amqp-client's topology recovery). */
    private volatile boolean consumerRecovered;

    private Responder(Builder builder) {
        this.queue = builder.queue;
        this.handler = Objects.requireNonNull(builder.handler, "handler");
        this.policy = builder.policy;
        this.maxAttempts = maxAttempts(builder.options, policy);
        this.answered = new AnsweredCounter(policy);
        this.observer = builder.observer == null ? new ResponderObserver() { } : builder.observer;
        this.concurrency = builder.concurrency;
        this.workers = Executors.newFixedThreadPool(concurrency, runnable -> {
            Thread thread = new Thread(runnable, "acemq-responder-" + queue);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Attempts at an undeliverable reply: the service's Options', else the binding's own (RR-14: 3). */
    static int maxAttempts(Options options, ResponderPolicy policy) {
        return options == null ? policy.defaultMaxAttempts() : options.maxAttempts();
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
        bindExchange = builder.bindExchange;
        bindRoutingKey = builder.bindRoutingKey == null ? "" : builder.bindRoutingKey;
        publisher = new ConfirmingPublisher(connection);
        subscribe(connection.createChannel());
        connection.addShutdownListener(cause -> {
            if (!cause.isInitiatedByApplication()) {
                losses.incrementAndGet();
            }
        });
        if (connection instanceof AutorecoveringConnection recovering) {
            recovering.addConsumerRecoveryListener((before, after) -> {
                if (before.equals(consumerTag)) {
                    consumerTag = after;
                    consumerRecovered = true;
                }
            });
            recovering.addRecoveryListener(new RecoveryListener() {
                @Override
                public void handleRecoveryStarted(Recoverable recoverable) {
                    consumerRecovered = false;
                }

                @Override
                public void handleRecovery(Recoverable recoverable) {
                    ensureConsuming();
                }
            });
        }
    }

    /** Declares both queues (and the binding) on {@code target} and consumes the request queue on it. */
    private void subscribe(Channel target) throws IOException {
        channel = target;
        declareRequestQueue();
        // RR-17: a classic dead-letter queue would lose the quorum queue's guarantees.
        channel.queueDeclare(deadLetterQueue(), true, false, false,
                Map.of("x-queue-type", policy.dlqQueueType().argument));
        if (bindExchange != null) {
            channel.queueBind(queue, bindExchange, bindRoutingKey);
        }
        // The prefetch matches the handler threads: a slow handler does not hold back the rest.
        channel.basicQos(concurrency);
        consumerTag = channel.basicConsume(queue, false, new RequestConsumer(channel));
    }

    /**
     * After a recovery: topology recovery declared the queues and consumed again on the same
     * channel. Where it could not (a queue's declare refused by a node still starting, which
     * closes the channel), the responder does it itself on a new channel (RR-20.2).
     */
    private void ensureConsuming() {
        if (closing || (consumerRecovered && channel.isOpen())) {
            return;
        }
        LOG.warn("responder on {}: topology recovery did not consume again; subscribing anew", queue);
        Channel stale = channel;
        Channel fresh = null;
        try {
            fresh = connection.createChannel();
            subscribe(fresh);
            consumerRecovered = true;
        } catch (IOException | RuntimeException e) {
            channel = stale;
            if (fresh != null) {
                abortQuietly(fresh);
            }
            LOG.error("responder on {}: could not consume again after a recovery: {}", queue, e.toString());
            if (connection.isOpen() && !closing) {
                Timers.after(Duration.ofMillis(Connections.RECOVERY_INTERVAL_MS), this::ensureConsuming);
            }
            return;
        }
        abortQuietly(stale);
    }

    private static void abortQuietly(Channel target) {
        try {
            if (target.isOpen()) {
                target.abort();
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("closing a responder channel: {}", e.toString());
        }
    }

    /** RR-17: a quorum request queue, whose requests carry x-delivery-count (RR-14 counts attempts from it). */
    private void declareRequestQueue() throws IOException {
        if (policy.requestQueue() == ResponderPolicy.RequestQueue.CLASSIC_IF_MISSING && requestQueueExists()) {
            return; // used as it is, whatever its type
        }
        channel.queueDeclare(queue, true, false, false, policy.requestQueue().arguments);
    }

    /** A passive declare on a throwaway channel: a missing queue's 404 closes the channel it is asked on. */
    private boolean requestQueueExists() throws IOException {
        Channel probe = connection.createChannel();
        try {
            probe.queueDeclarePassive(queue);
            return true;
        } catch (IOException e) {
            if (e.getCause() instanceof ShutdownSignalException signal
                    && signal.getReason() instanceof AMQP.Channel.Close close
                    && close.getReplyCode() == AMQP.NOT_FOUND) {
                return false;
            }
            throw e;
        } finally {
            if (probe.isOpen()) {
                try {
                    probe.close();
                } catch (TimeoutException | IOException e) {
                    LOG.debug("closing the passive-declare channel failed", e);
                }
            }
        }
    }

    private String deadLetterQueue() {
        return queue + ".dlq";
    }

    private void onRequest(Delivery delivery, AMQP.BasicProperties properties, byte[] body) throws IOException {
        if (closing) {
            return; // not acked: the broker requeues it when the channel closes
        }
        if (policy.ackTiming() == ResponderPolicy.AckTiming.ON_DELIVERY) {
            // Breaks RR-20.4: a request held when the connection is lost is gone with it.
            delivery.ack();
        }
        Map<String, Object> headers = properties.getHeaders();
        String messageId = properties.getMessageId();
        Optional<ReplyAddress> address = ReplyAddress.resolve(headers, properties.getReplyTo(), policy.readOrder(),
                policy.bytesAddress() == ResponderPolicy.BytesAddress.ACCEPT);
        if (address.isEmpty()) {
            if (!settling.enter()) {
                return; // stopping: left unacked, the broker requeues it
            }
            try {
                // Not counting it breaks RR-12.1; the observer hears of it all the same.
                if (policy.countUnanswerable()) {
                    unanswerable.incrementAndGet();
                }
                if (policy.unanswerable() == ResponderPolicy.Unanswerable.DEAD_LETTER) {
                    deadLetter(delivery, properties, body, "Unanswerable: the request names no reply address");
                } else {
                    delivery.ack();
                }
                observer.unanswerable(messageId);
            } finally {
                settling.leave();
            }
            return;
        }
        int attempt = Headers.attempt(headers, policy.attemptBase());
        Map<String, Object> visible = visibleToHandler(policy, headers);

        Admission admission = screen(policy, headers, body);
        if (admission.drop()) {
            // Breaks RR-19: the caller hears nothing, and nothing says where the request went.
            if (settling.enter()) {
                try {
                    delivery.ack();
                } finally {
                    settling.leave();
                }
            }
            return;
        }
        JsonElement reply = JsonNull.INSTANCE;
        String failure = admission.failure();
        if (failure == null) {
            IncomingRequest request = new IncomingRequest(body, admission.body(), messageId,
                    properties.getCorrelationId(), address.get(), visible, attempt);
            observer.handled(request);
            try {
                JsonElement result = handler.handle(request);
                reply = result == null ? JsonNull.INSTANCE : result;
            } catch (Exception e) {
                failure = failureText(policy, e);
            }
        }
        // A handler that returns once the stop has begun is abandoned with the rest: no reply (an
        // interrupted handler's failure would answer for a request the next responder answers
        // again), no ack; the broker requeues it when the channel closes.
        if (!settling.enter()) {
            return;
        }
        try {
            if (delivery.lostSince(losses.get())) {
                // RR-20.4: the connection that carried the request is gone, and with it the
                // delivery: the broker gives the request back, to be answered as its next attempt.
                LOG.info("request {} on {} abandoned: the connection was lost while its handler ran",
                        messageId, queue);
                return;
            }
            if (failure != null && policy.handlerFailure() == ResponderPolicy.HandlerFailure.RETRY) {
                // Breaks RR-10: the caller hears nothing and the request comes back until its last attempt.
                retryFailedHandler(delivery, properties, body, attempt, failure);
            } else {
                // Breaks RR-19.2 under REPLY_ONLY: a body no handler could read gets its failure
                // reply but no dead-letter.
                boolean deadLetter = !(policy.malformedRequest() == ResponderPolicy.MalformedRequest.REPLY_ONLY
                        && admission.failure() != null && admission.failure().startsWith(MALFORMED_REQUEST + ": "));
                reply(delivery, properties, body, attempt, reply, failure, address.get(), deadLetter);
            }
        } finally {
            settling.leave();
        }
    }

    /** Publishes the reply (or failure reply), then settles the request: ack, requeue or dead-letter. */
    private void reply(Delivery delivery, AMQP.BasicProperties properties, byte[] body, int attempt,
            JsonElement reply, String failure, ReplyAddress address, boolean deadLetter) throws IOException {
        String messageId = properties.getMessageId();
        boolean counts = failure == null || policy.countFailuresAnswered();
        boolean counted = counts && answered.beforePublish();
        boolean atMostOnce = Headers.isDirectReplyTo(address.queue())
                && policy.directReplyTo() == ResponderPolicy.DirectReplyTo.AT_MOST_ONCE;
        try {
            if (atMostOnce) {
                // RR-14.5: the broker cannot say whether a direct reply-to reply was delivered
                // (3.10 to 4.1 return every one, 4.2 none): sent once without mandatory, never retried.
                publisher.publishNotMandatory("", address.queue(), replyProperties(properties, failure),
                        replyBody(policy, reply, failure));
            } else {
                publisher.publish("", address.queue(), replyProperties(properties, failure), replyBody(policy, reply, failure));
            }
        } catch (IOException | RuntimeException e) {
            if (atMostOnce) {
                LOG.debug("direct reply-to reply to {} not confirmed: {}", messageId, e.getMessage());
            } else if (takenAsDelivered(policy, failure)) {
                // Breaks RR-14.1: a failure reply is a reply; taking it as delivered dead-letters
                // a request whose caller never heard of its failure.
                LOG.debug("failure reply to {} not delivered, taken as delivered: {}", messageId, e.getMessage());
            } else {
                answered.publishFailed(counted);
                onReplyFailed(delivery, properties, body, attempt, e.getMessage());
                return;
            }
        }
        if (counts) {
            answered.published();
        }
        observer.replied(messageId, failure);
        if (failure != null && policy.retryFailures()
                && RetryDecision.after(attempt, maxAttempts) != RetryDecision.DEAD_LETTER) {
            // Breaks RR-11.2: the caller has its answer, and the retry answers it again.
            delivery.requeue();
        } else if (failure != null && policy.deadLetterFailures() && deadLetter) {
            // RR-11: the caller has its answer; a retry would answer twice.
            deadLetter(delivery, properties, body, failure);
        } else {
            delivery.ack();
        }
    }

    /**
     * What a request that names a reply address gets before any handler runs: its decoded body
     * to handle, a failure to reply with (the handler not run), or nothing at all (dropped).
     */
    record Admission(JsonElement body, String failure, boolean drop) {
    }

    static Admission screen(ResponderPolicy policy, Map<String, Object> headers, byte[] body) {
        String refusedHeader = policy.headerTypes() == ResponderPolicy.HeaderTypes.STRICT
                ? Headers.firstOfStrictlyRefusedType(headers)
                : null;
        if (refusedHeader != null) {
            // Breaks WF-1: a header type other clients write fails the request, handler not run.
            return new Admission(null, "MalformedHeader: " + refusedHeader, false);
        }
        try {
            return new Admission(Json.decode(body), null, false);
        } catch (JsonParseException e) {
            // RR-19: a body that is not JSON fails the request without running the handler.
            return policy.malformedRequest() == ResponderPolicy.MalformedRequest.DROP
                    ? new Admission(null, null, true)
                    : new Admission(null, MALFORMED_REQUEST + ": " + e.getMessage(), false);
        }
    }

    /**
     * The headers the handler is shown (RR-5): all but {@code x-acemq-*}. The spec's own
     * {@code acemq-*} headers (acemq-reply-to among them) are application headers like any
     * other; hiding them breaks RR-5.2, as does stripping more than the engine's namespace.
     */
    static Map<String, Object> visibleToHandler(ResponderPolicy policy, Map<String, Object> headers) {
        Map<String, Object> visible = policy.stripEngineHeaders()
                ? Headers.visibleToHandler(headers, policy.stripPrefix())
                : new TreeMap<>(headers == null ? Map.of() : headers);
        if (!policy.passSpecHeaders()) {
            visible.keySet().removeIf(name -> name.startsWith(Headers.SPEC_PREFIX));
        }
        return visible;
    }

    /** {@code {ExceptionType}: {message}} (RR-10): the unqualified type name, or the qualified one under a policy breaking RR-10.2. */
    static String failureText(ResponderPolicy policy, Exception error) {
        return policy.errorTypeName() == ResponderPolicy.ErrorTypeName.QUALIFIED
                ? error.getClass().getName() + ": " + (error.getMessage() == null ? "" : error.getMessage())
                : Headers.failureText(error);
    }

    /**
     * A reply's body: the handler's result as JSON; a failure's is empty (RR-10.1), or JSON under a
     * policy breaking it: every failure reply, handler failure, MalformedRequest and MalformedHeader alike.
     */
    static byte[] replyBody(ResponderPolicy policy, JsonElement reply, String failure) {
        if (failure == null) {
            return Json.encode(reply);
        }
        if (policy.failureBody() == ResponderPolicy.FailureBody.JSON) {
            JsonObject body = new JsonObject();
            body.addProperty("error", failure);
            return Json.encode(body);
        }
        return new byte[0];
    }

    /**
     * Whether a reply whose publish failed is taken as delivered all the same: never under the
     * spec (a failure reply is a reply, RR-14); a failure reply under a policy that breaks it.
     */
    static boolean takenAsDelivered(ResponderPolicy policy, String failure) {
        return failure != null && policy.failureReplyDelivery() == ResponderPolicy.FailureReplyDelivery.UNCHECKED;
    }

    private void onReplyFailed(Delivery delivery, AMQP.BasicProperties properties, byte[] body, int attempt, String error)
            throws IOException {
        String messageId = properties.getMessageId();
        LOG.warn("reply to {} failed on attempt {}: {}", messageId, attempt, error);
        observer.replyFailed(messageId, attempt, error);
        if (policy.undeliverableReply() == ResponderPolicy.UndeliverableReply.ACK) {
            // Breaks RR-14: the request is gone, neither retried nor dead-lettered.
            delivery.ack();
        } else if (RetryDecision.after(attempt, maxAttempts) == RetryDecision.DEAD_LETTER) {
            if (policy.lastAttempt() == ResponderPolicy.LastAttempt.ACK) {
                // Breaks RR-14.2: the request is gone, with nothing in {queue}.dlq to say why.
                delivery.ack();
                return;
            }
            deadLetter(delivery, properties, body, "UndeliverableReply: " + error);
        } else {
            // requeue given explicitly: client libraries disagree on its default.
            delivery.requeue();
        }
    }

    /** A handler failure under the retry policy: requeued, and dead-lettered on the last attempt. */
    private void retryFailedHandler(Delivery delivery, AMQP.BasicProperties properties, byte[] body, int attempt, String failure)
            throws IOException {
        if (RetryDecision.after(attempt, maxAttempts) == RetryDecision.DEAD_LETTER) {
            deadLetter(delivery, properties, body, failure);
        } else {
            delivery.requeue();
        }
    }

    private void deadLetter(Delivery delivery, AMQP.BasicProperties properties, byte[] body, String reason) throws IOException {
        Map<String, Object> headers = new HashMap<>();
        if (properties.getHeaders() != null) {
            headers.putAll(properties.getHeaders());
        }
        headers.put(Headers.DEAD_LETTER_REASON, reason);
        try {
            AMQP.BasicProperties.Builder copy = properties.builder().headers(headers);
            if (policy.deadLetterCopy() == ResponderPolicy.DeadLetterCopy.ID_AND_HEADERS) {
                // Breaks RR-11.4: the copy is the request, to be answered later.
                copy.correlationId(null).replyTo(null);
            }
            publisher.publish("", deadLetterQueue(), copy.build(), body);
        } catch (IOException | RuntimeException e) {
            LOG.error("dead-lettering {} to {} failed, requeueing it: {}",
                    properties.getMessageId(), deadLetterQueue(), e.getMessage());
            delivery.requeue();
            return;
        }
        delivery.ack();
        observer.deadLettered(properties.getMessageId(), reason);
    }

    /**
     * A reply names its request by its id twice: correlation_id (RR-4) and responseMessageId (SG-3).
     * The id is the message_id, or the correlation_id of a request without one (a tutorial caller's).
     */
    private AMQP.BasicProperties replyProperties(AMQP.BasicProperties request, String failure) {
        String requestId = Headers.requestId(request.getMessageId(), request.getCorrelationId());
        Map<String, Object> headers = new HashMap<>();
        // Without it gathers cannot tell whose reply this is (SG-3).
        if (requestId != null && policy.responseMessageId()) {
            headers.put(Headers.RESPONSE_MESSAGE_ID, requestId);
        }
        if (failure != null) {
            headers.put(Headers.ERROR, failure);
        }
        return new AMQP.BasicProperties.Builder()
                // RR-4: the requester correlates by message_id, whatever the request's correlation_id.
                // (the message_id alone breaks it too: a tutorial caller sends none).
                .correlationId(switch (policy.replyCorrelationFrom()) {
                    case CORRELATION_ID -> request.getCorrelationId();
                    case MESSAGE_ID -> request.getMessageId();
                    case REQUEST_ID -> requestId;
                })
                // RR-4: every reply says it is JSON; none breaks RR-4.3.
                .contentType(policy.replyContentType() == ResponderPolicy.ReplyContentType.NONE ? null : "application/json")
                .headers(headers)
                .build();
    }

    /**
     * Tells {@code listener} once the responder's connection is back after a loss, its queues
     * declared and consumed again (RR-20.2).
     */
    public void onRecovered(Runnable listener) {
        if (connection instanceof Recoverable recoverable) {
            recoverable.addRecoveryListener(new RecoveryListener() {
                @Override
                public void handleRecovery(Recoverable recovered) {
                    if (!closing) {
                        listener.run();
                    }
                }

                @Override
                public void handleRecoveryStarted(Recoverable recovering) {
                }
            });
        }
    }

    /**
     * Tells {@code listener} when the broker or the network ends this responder's connection or
     * channel; not when {@link #close()} does. The text is the client's reason.
     */
    public void onConnectionLost(Consumer<String> listener) {
        ShutdownListener forward = cause -> {
            if (!cause.isInitiatedByApplication() && !closing) {
                listener.accept(ConnectionLoss.reason(cause));
            }
        };
        connection.addShutdownListener(forward);
        channel.addShutdownListener(forward);
    }

    /**
     * Stops taking requests and closes the channels (and the connection when it owns it). A
     * request whose handler has returned is settled first, within {@link #SETTLE_BOUND}: its
     * reply may already be with the caller, and closing before its ack would put it back on
     * the queue for the next responder to answer a second time. Handlers still running are
     * abandoned (interrupted, and neither answered nor acked when they return); the broker
     * requeues their requests.
     */
    @Override
    public void close() {
        closing = true;
        try {
            if (channel != null && channel.isOpen() && consumerTag != null) {
                channel.basicCancel(consumerTag);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("cancelling responder consumer: {}", e.toString());
        }
        workers.shutdown();
        // From here no request starts settling: what has (its handler returned) is waited for.
        if (!settling.closeAndAwaitNone(SETTLE_BOUND)) {
            LOG.warn("closing responder on {} with replies still unsettled after {}", queue, SETTLE_BOUND);
        }
        workers.shutdownNow();
        try {
            if (channel != null && channel.isOpen()) {
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

    /**
     * A count of requests being settled, and a bounded wait for it to come to zero. Once the
     * wait has begun no request enters: one whose handler returns later is abandoned.
     */
    static final class SettlingRequests {
        private int count;
        private boolean closed;

        /** False once the responder is stopping: the request must be left to the broker, not settled. */
        synchronized boolean enter() {
            if (closed) {
                return false;
            }
            count++;
            return true;
        }

        synchronized void leave() {
            count--;
            if (count == 0) {
                notifyAll();
            }
        }

        /** Shuts the gate, then waits up to {@code bound} for the requests inside; false when some still are. */
        synchronized boolean closeAndAwaitNone(Duration bound) {
            closed = true;
            long deadline = System.nanoTime() + bound.toNanos();
            try {
                while (count > 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            return true;
        }
    }

    /**
     * A request as delivered: the channel and tag it is settled with, and the connection losses
     * before it arrived. Under {@code ack_timing: on_delivery} it is acked at once and every
     * later settlement is a no-op.
     */
    static final class Delivery {
        private final Channel channel;
        private final long tag;
        private final long lossesAtDelivery;
        private volatile boolean acked;

        Delivery(Channel channel, long tag, long lossesAtDelivery) {
            this.channel = channel;
            this.tag = tag;
            this.lossesAtDelivery = lossesAtDelivery;
        }

        /** Whether a connection loss came after this delivery: it can no longer be settled. */
        boolean lostSince(long losses) {
            return losses != lossesAtDelivery;
        }

        void ack() throws IOException {
            if (!acked) {
                acked = true;
                channel.basicAck(tag, false);
            }
        }

        /** Back to the queue, {@code x-delivery-count} raised (requeue given explicitly: clients disagree on its default). */
        void requeue() throws IOException {
            if (!acked) {
                acked = true;
                channel.basicNack(tag, false, true);
            }
        }

        boolean settled() {
            return acked;
        }
    }

    private final class RequestConsumer extends DefaultConsumer {
        RequestConsumer(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            Delivery delivery = new Delivery(getChannel(), envelope.getDeliveryTag(), losses.get());
            try {
                workers.execute(() -> {
                    try {
                        onRequest(delivery, properties, body);
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
        /** {@code null}: the binding's defaults (3 attempts). */
        private Options options;
        private ResponderPolicy policy = ResponderPolicy.SPEC;
        private ResponderObserver observer;
        private String bindExchange;
        private String bindRoutingKey;
        private int concurrency = DEFAULT_CONCURRENCY;
        private ConnectionOptions connectionOptions;

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

        /** Package-private: a service's responder always follows the spec. */
        Builder policy(ResponderPolicy value) {
            policy = Objects.requireNonNull(value);
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

        /**
         * The name and broker nodes of the connection {@link #start(ConnectionFactory)} opens
         * (by default named {@code acemq-java responder {queue}}, to the factory's host).
         */
        public Builder connection(ConnectionOptions value) {
            connectionOptions = Objects.requireNonNull(value);
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
            ConnectionOptions named = connectionOptions != null ? connectionOptions
                    : ConnectionOptions.named("acemq-java responder " + queue);
            Connection connection = Connections.open(factory, named, policy.recoverConnection());
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
