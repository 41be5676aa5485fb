package io.acemq;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends requests and gathers over one private reply queue (RR-6, RR-7) and hands each reply
 * to the caller it belongs to: requests by {@code correlation_id} (RR-8), gathers by the
 * {@code responseMessageId} header (SG-4). Thread-safe: any number of calls may be pending.
 *
 * <p>A lost connection ends every pending call at once with {@link ConnectionLostException}
 * (its reply queue is gone, RR-20.1); amqp-client's automatic recovery then reconnects under
 * the same connection name and declares a new server-named reply queue, which later requests
 * name (RR-20.3).
 */
public final class Requester implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Requester.class);
    /** How long {@link #close()} waits for the broker's close-ok before dropping the socket. */
    private static final int CLOSE_TIMEOUT_MS = 5_000;

    private final Connection connection;
    private final boolean ownsConnection;
    /** The timeout of a call given none: the Options', else the binding's own (RR-9). */
    private final Duration defaultTimeout;
    private final RequesterPolicy policy;
    private final RequesterObserver observer;
    private final Channel replyChannel;
    private final ConfirmingPublisher publisher;
    /** The reply queue's name: server-named, so a recovery changes it. */
    private volatile String replyQueue;
    /** Connection losses so far: a call registered after a loss was swept is ended by it. */
    private long losses;
    private final AtomicLong timedOut = new AtomicLong();
    private final AtomicLong unmatched = new AtomicLong();
    /** Pending requests in the order they were sent; guarded by itself. */
    private final LinkedHashMap<String, Call> calls = new LinkedHashMap<>();
    /** Pending gathers in the order they were sent. */
    private final Map<String, Gather> gathers = Collections.synchronizedMap(new LinkedHashMap<>());
    private volatile boolean closed;

    private Requester(Connection connection, boolean ownsConnection, Options options, RequesterObserver observer,
            RequesterPolicy policy) throws IOException {
        this.connection = connection;
        this.ownsConnection = ownsConnection;
        this.policy = Objects.requireNonNull(policy, "policy");
        this.defaultTimeout = defaultTimeout(options, policy);
        this.observer = observer == null ? new RequesterObserver() { } : observer;
        this.replyChannel = connection.createChannel();
        this.publisher = new ConfirmingPublisher(connection);
        this.replyQueue = declareReplyQueue();
        connection.addShutdownListener(this::onShutdown);
        if (connection instanceof AutorecoveringConnection recovering) {
            // Recovery declares the server-named queue again under a new name (RR-20.3).
            recovering.addQueueRecoveryListener((before, after) -> {
                if (before.equals(replyQueue)) {
                    replyQueue = after;
                }
            });
        }
    }

    /** The timeout of a call given none: the caller's Options', else the binding's own (RR-9: 30 s). */
    static Duration defaultTimeout(Options options, RequesterPolicy policy) {
        return options == null ? Duration.ofMillis(policy.defaultTimeoutMs()) : options.defaultTimeout();
    }

    /**
     * Opens a requester on a connection of its own, closed with it. {@code options} and
     * {@code observer} may be {@code null}: the binding's defaults (30 s), no hooks.
     */
    public static Requester open(ConnectionFactory factory, Options options, RequesterObserver observer)
            throws IOException, TimeoutException {
        return open(factory, options, observer, RequesterPolicy.SPEC);
    }

    /** Opens a requester on channels of a connection the caller keeps. */
    public static Requester open(Connection connection, Options options, RequesterObserver observer) throws IOException {
        return new Requester(connection, false, options, observer, RequesterPolicy.SPEC);
    }

    /**
     * Opens a requester on a connection of its own, named and to the nodes {@code connection}
     * says; the connection recovers on its own after it was lost (RR-20.3).
     */
    public static Requester open(ConnectionFactory factory, ConnectionOptions connection, Options options,
            RequesterObserver observer) throws IOException, TimeoutException {
        return open(factory, connection, options, observer, RequesterPolicy.SPEC);
    }

    /** As {@link #open(ConnectionFactory, Options, RequesterObserver)} with a policy other than the spec's. */
    static Requester open(ConnectionFactory factory, Options options, RequesterObserver observer,
            RequesterPolicy policy) throws IOException, TimeoutException {
        return open(factory, ConnectionOptions.named("acemq-java requester"), options, observer, policy);
    }

    /** As {@link #open(ConnectionFactory, ConnectionOptions, Options, RequesterObserver)} with a policy other than the spec's. */
    static Requester open(ConnectionFactory factory, ConnectionOptions connectionOptions, Options options,
            RequesterObserver observer, RequesterPolicy policy) throws IOException, TimeoutException {
        Connection connection = Connections.open(factory, connectionOptions, policy.recoverConnection());
        try {
            return new Requester(connection, true, options, observer, policy);
        } catch (IOException | RuntimeException e) {
            connection.abort();
            throw e;
        }
    }

    /**
     * Tells {@code listener} when the broker or the network ends this requester's connection or
     * reply channel; not when {@link #close()} does. The text is the client's reason.
     */
    public void onConnectionLost(Consumer<String> listener) {
        ShutdownListener forward = cause -> {
            if (!cause.isInitiatedByApplication() && !closed) {
                listener.accept(ConnectionLoss.reason(cause));
            }
        };
        connection.addShutdownListener(forward);
        replyChannel.addShutdownListener(forward);
    }

    /**
     * Tells {@code listener} once the requester's connection is back after a loss and its new
     * reply queue is consumed (RR-20.3).
     */
    public void onRecovered(Runnable listener) {
        if (connection instanceof Recoverable recoverable) {
            recoverable.addRecoveryListener(new RecoveryListener() {
                @Override
                public void handleRecovery(Recoverable recovered) {
                    if (!closed) {
                        listener.run();
                    }
                }

                @Override
                public void handleRecoveryStarted(Recoverable recovering) {
                }
            });
        }
    }

    /** The reply address this requester names on its requests; a new one after a recovery. */
    public String replyQueue() {
        return replyQueue;
    }

    /** Requests that gave up before an answer arrived (RR-9). */
    public long getTimedOut() {
        return timedOut.get();
    }

    /** Replies with nobody left waiting for them (RR-8, SG-8). */
    public long getUnmatched() {
        return unmatched.get();
    }

    public JsonElement request(String exchange, String routingKey, JsonElement body) throws IOException, InterruptedException {
        return request(exchange, routingKey, body, null);
    }

    /**
     * Sends one request and waits for its reply; failures are {@link AcemqException}s.
     * A {@code null} timeout is the requester's default.
     */
    public JsonElement request(String exchange, String routingKey, JsonElement body, Duration timeout)
            throws IOException, InterruptedException {
        return request(exchange, routingKey, null, body, timeout);
    }

    /** As {@link #request(String, String, JsonElement, Duration)}, the message's {@code type} given ({@code null}: none). */
    public JsonElement request(String exchange, String routingKey, String type, JsonElement body, Duration timeout)
            throws IOException, InterruptedException {
        return await(send(exchange, routingKey, type, body, timeout, null, Map.of()).result());
    }

    /** As {@link #request(String, String, JsonElement, Duration)}, with objects mapped by Gson. */
    public <T> T request(String exchange, String routingKey, Object body, Class<T> replyType, Duration timeout)
            throws IOException, InterruptedException {
        return Json.GSON.fromJson(request(exchange, routingKey, Json.GSON.toJsonTree(body), timeout), replyType);
    }

    /**
     * Publishes a request and returns at once with its id and the reply to come.
     *
     * @param timeout how long to wait for the reply; {@code null} is the requester's default
     * @param correlationId the request's {@code correlation_id}; {@code null} uses its message id
     * @param headers extra application headers (strings, numbers, booleans)
     * @throws PublishRefusedException when the broker returned or nacked the request
     * @throws IllegalArgumentException when a short-string property is over 255 bytes (RR-18)
     */
    public PendingRequest send(String exchange, String routingKey, JsonElement body, Duration timeout,
            String correlationId, Map<String, Object> headers) throws IOException {
        return send(exchange, routingKey, null, body, timeout, correlationId, headers);
    }

    /**
     * As {@link #send(String, String, JsonElement, Duration, String, Map)}, with the message's
     * {@code type} (an AMQP short string, RR-18; {@code null}: the request has none).
     */
    public PendingRequest send(String exchange, String routingKey, String type, JsonElement body, Duration timeout,
            String correlationId, Map<String, Object> headers) throws IOException {
        // The timeout runs from the call, not from the end of its preparations (a loaded
        // process can spend a tenth of a second before the timer is set).
        long calledAt = System.nanoTime();
        ensureOpen();
        ensureConnected();
        String messageId = newMessageId();
        correlationId = shortString("correlation_id", correlationId);
        type = shortString("type", type);
        Duration budget = timeout == null ? defaultTimeout : timeout;
        // RR-8.4: correlation_id = message_id, so a responder that echoes correlation_id (the
        // tutorial's, the Java RpcServer) answers this call.
        if (correlationId == null
                && policy.requestCorrelationId() == RequesterPolicy.RequestCorrelationId.MESSAGE_ID) {
            correlationId = messageId;
        }
        Call call = new Call(messageId, budget);
        long lossesBefore;
        synchronized (calls) {
            lossesBefore = losses;
        }
        AMQP.BasicProperties properties = requestProperties(messageId, correlationId, replyQueueForCall(), type, headers);
        synchronized (calls) {
            // Checked under the lock close() and a connection loss take, so a call registered
            // now is one they will end.
            ensureOpen();
            if (losses != lossesBefore) {
                throw new ConnectionLostException(lostReason());
            }
            calls.put(messageId, call);
        }
        Duration spent = Duration.ofNanos(System.nanoTime() - calledAt);
        call.timer = Timers.after(deadline(policy, budget).minus(spent), () -> expire(call));
        try {
            publisher.publish(exchange, routingKey, properties, Json.encode(body), policy.honourReturns());
        } catch (IOException | RuntimeException e) {
            boolean lost;
            synchronized (calls) {
                calls.remove(messageId, call);
                lost = losses != lossesBefore;
            }
            call.cancelTimer();
            ensureOpen();
            if (lost) {
                // Not confirmed when the connection went: never reported as sent (RR-20.1).
                throw new ConnectionLostException(lostReason());
            }
            throw e;
        }
        return new PendingRequest(messageId, call.future);
    }

    /**
     * When a request given {@code timeout} gives up: at its timeout (RR-9.6), or half of it later
     * under a policy that breaks that (still the timeout outcome).
     */
    static Duration deadline(RequesterPolicy policy, Duration timeout) {
        return policy.requestDeadline() == RequesterPolicy.RequestDeadline.LATE
                ? timeout.plus(timeout.dividedBy(2))
                : timeout;
    }

    /** Blocking {@link #sendRequestMultiAsync}: the replies, or {@link RequestTimeoutException}. */
    public List<JsonElement> sendRequestMulti(String type, JsonElement message, String endpoint, GatherOptions gather)
            throws IOException, InterruptedException {
        return await(sendRequestMultiAsync(type, message, endpoint, gather).result());
    }

    /**
     * Scatter-gather over one endpoint queue (SG-2): a queue gives each message to one of its
     * competing consumers, so {@code expectedReplyCount} copies are published (one without a
     * count), all sharing {@code message_id} and {@code correlation_id}; {@code type} (may be
     * {@code null}) is every copy's AMQP {@code type}.
     */
    public PendingGather sendRequestMultiAsync(String type, JsonElement message, String endpoint, GatherOptions gather)
            throws IOException {
        // No count is one copy (SG-2); a loop up to an absent count (zero copies) breaks SG-2.1.
        int copies = gather.expectedReplyCount() == null ? policy.multiCopiesWithoutCount() : gather.expectedReplyCount();
        if (policy.multiCopies() == RequesterPolicy.MultiCopies.ONE) {
            // Breaks SG-2: one copy reaches only one of the endpoint's competing consumers.
            copies = 1;
        }
        if (gather.expectedReplyCount() == null
                && policy.gatherMissingCount() == RequesterPolicy.GatherMissingCount.COPIES) {
            // Breaks SG-7.1: the copies published taken as the count, so the gather resolves once
            // each was answered instead of spending its budget.
            gather = new GatherOptions(Math.max(copies, 1), gather.timeout(), gather.correlationId());
        }
        return scatter(type, message, "", endpoint, copies, null, gather);
    }

    /** Blocking {@link #publishRequestAsync}. */
    public List<JsonElement> publishRequest(String type, JsonElement message, String exchange,
            Consumer<JsonElement> onReply, GatherOptions gather) throws IOException, InterruptedException {
        return await(publishRequestAsync(type, message, exchange, onReply, gather).result());
    }

    /**
     * Broadcast-then-gather (SG-2): one message to a fanout exchange; {@code onReply} sees each
     * reply in arrival order.
     */
    public PendingGather publishRequestAsync(String type, JsonElement message, String exchange,
            Consumer<JsonElement> onReply, GatherOptions gather) throws IOException {
        // One message (SG-2): the broker gives each bound queue its copy; publishing more breaks SG-2.2.
        return scatter(type, message, exchange, "", policy.publishCopies(), onReply, gather);
    }

    private PendingGather scatter(String type, JsonElement message, String exchange, String routingKey, int copies,
            Consumer<JsonElement> onReply, GatherOptions options) throws IOException {
        ensureOpen();
        ensureConnected();
        long lossesBefore;
        synchronized (calls) {
            lossesBefore = losses;
        }
        String requestMessageId = newMessageId();
        String correlationId = shortString("correlation_id",
                gatherCorrelationId(policy, options.correlationId(), requestMessageId));
        type = shortString("type", type);
        AMQP.BasicProperties properties = requestProperties(
                requestMessageId, correlationId, replyQueueForCall(), type, null);
        Gather gather = new Gather(requestMessageId, options.expectedReplyCount(), policy, onReply);
        synchronized (calls) {
            // As in send: close() and a loss either see this gather or the gather sees them.
            ensureOpen();
            if (losses != lossesBefore) {
                throw new ConnectionLostException(lostReason());
            }
            gathers.put(requestMessageId, gather);
        }
        Duration budget = options.timeout() == null ? defaultTimeout : options.timeout();
        gather.startTimer(budget, Timers::after, () -> {
            // TimedOut counts requests only (RR-9): a gather ending at its timeout is not one.
            if (policy.countGatherTimeouts()) {
                timedOut.incrementAndGet();
            }
        });
        gather.result().whenComplete((replies, error) -> gathers.remove(requestMessageId, gather));
        try {
            byte[] body = Json.encode(message);
            for (int i = 0; i < copies; i++) {
                // Distinct ids break SG-1: the copies after the first carry ids nobody waits on.
                AMQP.BasicProperties copy = i > 0 && policy.gatherCopyIds() == RequesterPolicy.GatherCopyIds.DISTINCT
                        ? properties.builder().messageId(newMessageId()).build()
                        : properties;
                publisher.publish(exchange, routingKey, copy, body, policy.honourGatherReturns());
            }
        } catch (IOException | RuntimeException e) {
            boolean lost;
            synchronized (calls) {
                lost = losses != lossesBefore;
            }
            RuntimeException ended = lost ? new ConnectionLostException(lostReason())
                    : e instanceof AcemqException acemq ? acemq : new AcemqException(e.getMessage(), e);
            gather.fail(ended);
            ensureOpen();
            if (lost) {
                throw ended;
            }
            throw e;
        }
        return new PendingGather(requestMessageId, gather.result());
    }

    /**
     * The correlation_id of every copy of a gather (SG-1): the caller's business correlationId,
     * else the requestMessageId (never a field of the body: the caller gives it, or there is
     * none); {@code null}, no correlation_id at all, under a policy that breaks SG-1.
     */
    static String gatherCorrelationId(RequesterPolicy policy, String given, String requestMessageId) {
        String correlationId = Headers.nonEmpty(given);
        if (correlationId == null
                && policy.gatherDefaultCorrelation() == RequesterPolicy.GatherDefaultCorrelation.REQUEST_MESSAGE_ID) {
            correlationId = requestMessageId;
        }
        return correlationId;
    }

    /**
     * A short-string property's value, refused when over 255 bytes (RR-18), or cut down to
     * 255 bytes by a policy that breaks that rule.
     */
    private String shortString(String property, String value) {
        return policy.longShortString() == RequesterPolicy.LongShortString.TRUNCATE
                ? ShortStrings.truncate(value)
                : ShortStrings.check(property, value);
    }

    private AMQP.BasicProperties requestProperties(String messageId, String correlationId, String replyTo,
            String type, Map<String, Object> extraHeaders) {
        return requestProperties(policy, messageId, correlationId, replyTo, type, extraHeaders);
    }

    /** A request's or gather copy's properties: the reply address (RR-1, RR-2) and the type (SG-2). */
    static AMQP.BasicProperties requestProperties(RequesterPolicy policy, String messageId, String correlationId,
            String replyTo, String type, Map<String, Object> extraHeaders) {
        Map<String, Object> headers = new HashMap<>();
        if (extraHeaders != null) {
            headers.putAll(extraHeaders);
        }
        boolean typeInHeader = type != null && policy.typeCarrier() == RequesterPolicy.TypeCarrier.HEADER;
        if (typeInHeader) {
            // Breaks SG-2.3: a header named type is not the AMQP type property other clients read.
            headers.put("type", type);
        }
        // RR-1: the address in both places; RR-2: the header as a long string.
        if (policy.writeHeaderAddress()) {
            headers.put(Headers.REPLY_TO, policy.headerAddressAsBytes()
                    ? replyTo.getBytes(StandardCharsets.UTF_8)
                    : replyTo);
        }
        // A reply_to other than the header's breaks RR-1.3: readers disagree on where to answer;
        // an empty one (present, zero length) breaks RR-3.3.
        String nativeReplyTo = switch (policy.nativeAddress()) {
            case REPLY_QUEUE -> replyTo;
            case STALE -> replyTo + ".stale";
            case EMPTY -> "";
        };
        return new AMQP.BasicProperties.Builder()
                .messageId(messageId)
                .correlationId(correlationId)
                .replyTo(policy.writeNativeAddress() ? nativeReplyTo : null)
                .type(typeInHeader ? null : type)
                .contentType("application/json")
                .headers(headers)
                .build();
    }

    /**
     * The reply address a new request or gather names: the requester's one queue (RR-6), or
     * with a queue per request a fresh queue that stays consumed until close, so a late reply
     * to it is still received and counted.
     */
    private String replyQueueForCall() throws IOException {
        return policy.replyQueuePerRequest() ? declareReplyQueue() : replyQueue;
    }

    private String declareReplyQueue() throws IOException {
        synchronized (replyChannel) {
            // RR-7: without the type the server's default (perhaps quorum) would apply.
            Map<String, Object> arguments = policy.explicitReplyQueueType()
                    ? Map.of("x-queue-type", "classic")
                    : Map.of();
            // Non-exclusive breaks RR-7.2: another connection could consume this requester's replies.
            String queue = replyChannel.queueDeclare("", false, policy.exclusiveReplyQueue(), true, arguments).getQueue();
            replyChannel.basicConsume(queue, true, new ReplyConsumer(replyChannel));
            return queue;
        }
    }

    private void expire(Call call) {
        boolean removed;
        synchronized (calls) {
            removed = calls.remove(call.id, call);
        }
        if (removed) {
            if (policy.countTimeouts()) {
                timedOut.incrementAndGet();
            }
            if (policy.timeoutOutcome() == RequesterPolicy.TimeoutOutcome.NULL_REPLY) {
                // Breaks RR-9.1: the caller cannot tell a timeout from a reply of null.
                call.future.complete(JsonNull.INSTANCE);
                return;
            }
            call.future.completeExceptionally(new RequestTimedOutException(call.id, call.timeout));
        }
    }

    private void onReply(AMQP.BasicProperties properties, byte[] body) {
        Map<String, Object> headers = properties.getHeaders();
        String correlationId = properties.getCorrelationId();
        String gatherKey = gatherKey(policy, properties);
        Gather gather = gatherKey == null ? null : gathers.get(gatherKey);
        if (gather != null) {
            onGatherReply(gather, properties, body);
            return;
        }
        String failure = policy.readErrorHeader() ? Headers.text(headers, Headers.ERROR) : null;
        if (failure == null && policy.undecodableReply() == RequesterPolicy.UndecodableReply.DROP
                && !Json.isJson(body)) {
            // Breaks RR-19: the caller is left to wait out its timeout.
            unmatched(properties, policy.countUnmatched());
            return;
        }
        Call call = takeCall(correlationId);
        if (call == null && policy.unmatchedReply() == RequesterPolicy.UnmatchedReply.OLDEST_WAITER) {
            // Breaks RR-8.3: a reply nobody waits for answers whoever asked next.
            call = takeOldestCall();
        }
        if (call == null) {
            // Gathers are pending and none has this reply's key: a stray or late gather reply (SG-8).
            Gather oldest = gatherKey != null ? oldestGather() : null;
            if (oldest != null && policy.gatherStrayReply() == RequesterPolicy.GatherStrayReply.OLDEST_GATHER) {
                // Breaks SG-8: a reply for no pending gather lands in another one.
                onGatherReply(oldest, properties, body);
            } else {
                unmatched(properties, oldest != null ? policy.countGatherUnmatched() : policy.countUnmatched());
            }
            return;
        }
        call.cancelTimer();
        if (failure != null) {
            call.future.completeExceptionally(new ResponderFailedException(failure));
            return;
        }
        String unknown = policy.unknownReplyHeaders() == RequesterPolicy.UnknownReplyHeaders.FAIL
                ? unknownReplyHeader(headers)
                : null;
        if (unknown != null) {
            // Breaks RR-5.3: a header the binding does not know fails the call.
            call.future.completeExceptionally(new ReplyDecodeException("reply carries unknown header " + unknown, null));
            return;
        }
        try {
            call.future.complete(Json.decode(body));
        } catch (JsonParseException e) {
            call.future.completeExceptionally(new ReplyDecodeException(e.getMessage(), e));
        }
    }

    /**
     * What a reply's pending gather (kept by its requestMessageId) is looked up with: the
     * {@code responseMessageId} header (SG-4), or the {@code correlation_id} where the policy
     * says so (breaking SG-4).
     */
    static String gatherKey(RequesterPolicy policy, AMQP.BasicProperties reply) {
        return policy.gatherDemuxBy() == RequesterPolicy.GatherDemuxBy.CORRELATION_ID
                ? reply.getCorrelationId()
                : Headers.text(reply.getHeaders(), Headers.RESPONSE_MESSAGE_ID);
    }

    private Gather oldestGather() {
        synchronized (gathers) {
            return gathers.isEmpty() ? null : gathers.values().iterator().next();
        }
    }

    private Call takeCall(String correlationId) {
        synchronized (calls) {
            if (policy.matchRepliesBy() == RequesterPolicy.MatchRepliesBy.OLDEST_WAITER) {
                return takeOldestCall();
            }
            return correlationId == null ? null : calls.remove(correlationId);
        }
    }

    /** The call pending longest, taken off the pending calls; {@code null} when none is. */
    private Call takeOldestCall() {
        synchronized (calls) {
            Iterator<Call> oldest = calls.values().iterator();
            if (!oldest.hasNext()) {
                return null;
            }
            Call call = oldest.next();
            oldest.remove();
            return call;
        }
    }

    /** The first header, by name, that is neither acemq-error nor responseMessageId; {@code null} for none. */
    static String unknownReplyHeader(Map<String, Object> headers) {
        if (headers == null) {
            return null;
        }
        return new TreeSet<>(headers.keySet()).stream()
                .filter(name -> !name.equals(Headers.ERROR) && !name.equals(Headers.RESPONSE_MESSAGE_ID)
                        && !name.startsWith("x-"))
                .findFirst()
                .orElse(null);
    }

    /**
     * A reply for a pending gather. A failure reply is no answer (SG-10): dropped and counted
     * Unmatched under its own knob, apart from SG-8's. An undecodable body is kept out too. The
     * gather decides under its lock whether it is still open as it adds, so a reply arriving
     * after its count or timeout, before it left the table, is Unmatched as SG-8 says.
     */
    private void onGatherReply(Gather gather, AMQP.BasicProperties properties, byte[] body) {
        if (Headers.text(properties.getHeaders(), Headers.ERROR) != null) {
            Gather.FailureReply fate = gather.offerFailure();
            if (fate != Gather.FailureReply.KEPT) {
                unmatched(properties, countsInUnmatched(policy, fate));
            }
            return;
        }
        JsonElement reply;
        try {
            reply = Json.decode(body);
        } catch (JsonParseException e) {
            LOG.warn("gather {}: reply body is not JSON: {}", gather.requestMessageId(), e.getMessage());
            unmatched(properties, policy.countGatherUnmatched());
            return;
        }
        if (!gather.offer(reply)) {
            unmatched(properties, policy.countGatherUnmatched());
        }
    }

    /**
     * Whether a failure reply a gather did not keep counts in Unmatched: under SG-10's knob when
     * the gather was pending, SG-8's when it had ended, so neither knob changes the other's case.
     */
    static boolean countsInUnmatched(RequesterPolicy policy, Gather.FailureReply fate) {
        return fate == Gather.FailureReply.DROPPED ? policy.countGatherFailures() : policy.countGatherUnmatched();
    }

    /**
     * A reply nobody takes: dropped, counted when {@code counted} (the knob of RR-8, SG-8 or
     * SG-10 that applies; false breaks that clause), and named to the observer by both of its
     * ids all the same.
     */
    private void unmatched(AMQP.BasicProperties reply, boolean counted) {
        if (counted) {
            unmatched.incrementAndGet();
        }
        observer.unmatched(reply.getCorrelationId(), Headers.text(reply.getHeaders(), Headers.RESPONSE_MESSAGE_ID));
    }

    private void ensureOpen() {
        if (closed) {
            throw new RequesterClosedException();
        }
    }

    /**
     * A call made while the connection is down (recovering, or lost for good) ends at once:
     * it has no reply queue to be answered on.
     */
    private void ensureConnected() {
        if (!connection.isOpen()) {
            throw new ConnectionLostException(lostReason());
        }
    }

    private String lostReason() {
        ShutdownSignalException cause = connection.getCloseReason();
        return cause == null ? "connection lost" : ConnectionLoss.reason(cause);
    }

    /**
     * The connection went (not by {@link #close()}): the reply queue went with it, so every
     * pending call and gather ends now with {@link ConnectionLostException} (RR-20.1), none
     * counted in TimedOut; or, under a policy that breaks it, each waits out its timeout.
     */
    private void onShutdown(ShutdownSignalException cause) {
        if (cause.isInitiatedByApplication()) {
            return;
        }
        List<Call> pending = List.of();
        List<Gather> gathering = List.of();
        synchronized (calls) {
            if (closed) {
                return;
            }
            losses++;
            if (policy.onConnectionLost() == RequesterPolicy.OnConnectionLost.END_LOST) {
                pending = new ArrayList<>(calls.values());
                calls.clear();
                gathering = new ArrayList<>(gathers.values());
            }
        }
        String reason = ConnectionLoss.reason(cause);
        pending.forEach(call -> {
            call.cancelTimer();
            call.future.completeExceptionally(new ConnectionLostException(reason));
        });
        gathering.forEach(gather -> gather.fail(new ConnectionLostException(reason)));
    }

    /**
     * Ends pending calls and gathers with {@link RequesterClosedException} (before it returns,
     * so none of them is left waiting for a reply that can no longer come, RR-9) and closes the
     * connection; the reply queues go with it. Never waits for a pending call or for a publish
     * waiting on its confirm (that publish fails as the channel goes), and waits for the broker
     * at most {@value #CLOSE_TIMEOUT_MS} ms, so a slow or silent broker cannot hold it up.
     */
    @Override
    public void close() {
        List<Call> pending = List.of();
        List<Gather> gathering = List.of();
        synchronized (calls) {
            if (closed) {
                return;
            }
            closed = true;
            // Leaving them be breaks RR-9: each waits out its timeout for a reply queue that is gone.
            if (policy.pendingAtClose() == RequesterPolicy.PendingAtClose.END_CLOSED) {
                pending = new ArrayList<>(calls.values());
                calls.clear();
                gathering = new ArrayList<>(gathers.values());
            }
        }
        pending.forEach(call -> {
            call.cancelTimer();
            call.future.completeExceptionally(new RequesterClosedException());
        });
        gathering.forEach(gather -> gather.fail(new RequesterClosedException()));
        if (ownsConnection) {
            // abort, not close: close() waits for close-ok without limit and throws on a timeout
            // without dropping the socket; abort bounds the wait and then closes the socket.
            connection.abort(CLOSE_TIMEOUT_MS);
            publisher.abort();
        } else {
            publisher.abort();
            try {
                replyChannel.abort();
            } catch (IOException | RuntimeException e) {
                LOG.debug("closing requester: {}", e.toString());
            }
        }
    }

    static String newMessageId() {
        return UUID.randomUUID().toString();
    }

    static <T> T await(CompletableFuture<T> future) throws InterruptedException {
        try {
            return future.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new AcemqException(e.getCause().getMessage(), e.getCause());
        }
    }

    private static final class Call {
        final String id;
        final Duration timeout;
        final CompletableFuture<JsonElement> future = new CompletableFuture<>();
        volatile ScheduledFuture<?> timer;

        Call(String id, Duration timeout) {
            this.id = id;
            this.timeout = timeout;
        }

        /** The timer is set just after the call is registered, so a reply or close may come first. */
        void cancelTimer() {
            ScheduledFuture<?> pending = timer;
            if (pending != null) {
                pending.cancel(false);
            }
        }
    }

    private final class ReplyConsumer extends DefaultConsumer {
        ReplyConsumer(Channel channel) {
            super(channel);
        }

        @Override
        public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            try {
                onReply(properties, body);
            } catch (RuntimeException e) {
                LOG.error("reply on {} could not be handled", envelope.getRoutingKey(), e);
            }
        }
    }
}
