package io.acemq.peer;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.reflect.TypeToken;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Address;
import io.acemq.Acemq;
import io.acemq.ConnectionOptions;
import io.acemq.GatherOptions;
import io.acemq.Handler;
import io.acemq.Options;
import io.acemq.IncomingRequest;
import io.acemq.PeerPolicies;
import io.acemq.PendingGather;
import io.acemq.PendingRequest;
import io.acemq.Requester;
import io.acemq.RequesterObserver;
import io.acemq.Responder;
import io.acemq.ResponderObserver;
import io.acemq.Tls;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The acemq-interop peer: reads JSON-lines commands on stdin, runs each on a thread of its
 * own, and writes answers and events on stdout, one line each. Logs go to stderr.
 */
public final class PeerMain {
    /**
     * The newest protocol spoken; a hello gets the highest version both speak: 1 (no load, no
     * connection_lost), 2, 3 (type, the closed outcome, the fixed unmatched and echo shapes), or
     * 4 (knobs in hello, policy values on requester.open, responder.start and load, events: false),
     * or 5 (amqp_urls, a connection of each role's own named connection_name, the connection_lost
     * outcome, the recovered event).
     */
    private static final int PROTOCOL = 5;
    /** From this version on, each role connects under its connection_name to its amqp_urls. */
    private static final int RECOVERY = 5;
    /** From this version on, hello names the binding's policy knobs instead of catalogue names. */
    private static final int KNOBS = 4;
    /** The responder observer of {@code events: false}: it hears everything and writes nothing. */
    static final ResponderObserver SILENT = new ResponderObserver() { };
    /** How long requester.close waits for the answers of the calls it ended. */
    private static final Duration CLOSE_ANSWERS_BOUND = Duration.ofSeconds(10);
    private static final String PEER = "java";
    private static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private final PrintStream out;
    private final ExecutorService workers = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "peer-command");
        thread.setDaemon(true);
        return thread;
    });
    private final Map<String, Requester> requesters = new ConcurrentHashMap<>();
    private final Map<String, Responder> responders = new ConcurrentHashMap<>();
    /** Raw echo responders (responder.start with client: raw): no counters, no events. */
    private final Map<String, AutoCloseable> rawResponders = new ConcurrentHashMap<>();
    private final InFlightCalls inFlight = new InFlightCalls();
    private volatile ConnectionFactory factory;
    /** hello's amqp_urls (protocol 5): every broker node; absent, the amqp_url alone. */
    private volatile List<String> amqpUrls = List.of();
    private volatile int protocol = 1;

    PeerMain(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws IOException {
        PrintStream protocolOut = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        // Nothing but protocol lines may reach stdout: anything printed by accident goes to the log.
        System.setOut(System.err);
        new PeerMain(protocolOut).run(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
    }

    private void run(BufferedReader in) throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonObject command;
            try {
                command = JsonParser.parseString(line).getAsJsonObject();
            } catch (RuntimeException e) {
                System.err.println("peer: ignoring a line that is not a JSON object: " + line);
                continue;
            }
            workers.execute(() -> dispatch(command));
        }
        // End of input: what is still pending ends (requesters fail their calls on close),
        // and its answers are written before the process goes.
        workers.shutdown();
        closeAll();
        try {
            workers.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        System.exit(0);
    }

    void dispatch(JsonObject command) {
        JsonElement id = command.get("id");
        String op = text(command, "op");
        JsonObject answer = new JsonObject();
        answer.add("id", id);
        answer.addProperty("ok", true);
        // Completes once this command's answer is written (requester.close waits on its calls').
        CompletableFuture<Void> written = new CompletableFuture<>();
        try {
            switch (op == null ? "" : op) {
                case "hello" -> hello(command, answer);
                case "requester.open" -> openRequester(command, answer);
                case "requester.close" -> closeRequester(command);
                case "request" -> request(command, answer, written);
                case "gather" -> gather(command, answer, written);
                case "responder.start" -> startResponder(command);
                case "responder.stop" -> stopResponder(command);
                case "counters" -> counters(command, answer);
                case "load" -> {
                    if (protocol < 2) {
                        throw new IllegalArgumentException("load needs protocol 2");
                    }
                    load(command, answer);
                }
                case "shutdown" -> {
                    write(answer);
                    closeAll();
                    System.exit(0);
                }
                default -> throw new IllegalArgumentException("unknown op '" + op + "'");
            }
        } catch (Exception | Error e) {
            // An Error too (a class that no longer loads after a rebuild under a running peer,
            // say) gets its answer: a command left unanswered stalls the harness until its bound.
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            System.err.println("peer: command " + id + " (" + op + ") failed: " + e);
            answer = new JsonObject();
            answer.add("id", id);
            answer.addProperty("ok", false);
            answer.addProperty("error", describe(e));
        }
        try {
            write(answer);
        } finally {
            written.complete(null);
        }
    }

    void hello(JsonObject command, JsonObject answer) {
        int chosen = negotiate(command);
        String url = text(command, "amqp_url");
        if (url != null) {
            factory = connectionFactory(url, tlsCaFile(command));
            List<String> urls = strings(command, "amqp_urls");
            amqpUrls = urls == null ? List.of(url) : urls;
        }
        protocol = chosen;
        answer.addProperty("protocol", chosen);
        answer.addProperty("peer", PEER);
        answer.addProperty("language", "Java");
        answer.addProperty("binding", "acemq-java " + Acemq.VERSION);
        answer.addProperty("client", "amqp-client " + Acemq.clientVersion());
        if (chosen >= KNOBS) {
            // The knobs are the binding's policy fields themselves; the harness makes its
            // profiles and mutants of them.
            JsonObject knobs = new JsonObject();
            knobs.add("requester", strings(List.copyOf(PeerPolicies.requesterKnobs())));
            knobs.add("responder", strings(List.copyOf(PeerPolicies.responderKnobs())));
            answer.add("knobs", knobs);
            // amqp-client 5.0.0 cannot write an unsigned header (B, u, i): its ValueWriter
            // writes Byte as b, Short as s, Integer as I.
            JsonObject unreachable = new JsonObject();
            unreachable.add("narrow_int_header", GSON.toJsonTree(List.of(true)));
            answer.add("unreachable", unreachable);
        } else {
            // An older harness names profiles and mutants; this peer knows none but the binding as it ships.
            answer.add("profiles", strings(List.of("current")));
            answer.add("mutants", new JsonArray());
        }
        answer.add("capabilities", strings(chosen >= 2
                ? List.of("request", "respond", "gather", "load", "tls")
                : List.of("request", "respond", "gather")));
    }

    /**
     * The factory every connection of this peer comes from: binding requesters and responders,
     * the raw client and raw responder alike. An amqps URL verifies the broker's chain against
     * {@code caFile} (the JVM's trust store without one) and the URL's host name, never "trust
     * any certificate" as amqp-client's setUri alone would.
     */
    private static ConnectionFactory connectionFactory(String url, Path caFile) {
        ConnectionFactory fresh = new ConnectionFactory();
        try {
            fresh.setUri(url);
        } catch (Exception e) {
            throw new IllegalArgumentException("bad amqp_url: " + e.getMessage(), e);
        }
        if (caFile != null && !fresh.isSSL()) {
            throw new IllegalArgumentException("hello has tls but amqp_url is not amqps://: give both or neither");
        }
        if (fresh.isSSL()) {
            try {
                Tls.verify(fresh, caFile);
            } catch (IOException | GeneralSecurityException e) {
                throw new IllegalArgumentException("tls.ca_file " + caFile + " unusable: " + describe(e), e);
            }
        }
        fresh.setAutomaticRecoveryEnabled(false);
        fresh.setConnectionTimeout(10_000);
        // The AMQP handshake of a connection opened on a machine loaded to the hilt (the stress
        // run: two CPU hogs, 52 cells at once on 2 cores) outlasted the client's 10 s default once.
        fresh.setHandshakeTimeout(30_000);
        return fresh;
    }

    /** {@code tls.ca_file} of a hello, or null on a plain run. */
    private static Path tlsCaFile(JsonObject command) {
        JsonElement tls = command.get("tls");
        if (tls == null || tls.isJsonNull()) {
            return null;
        }
        if (!tls.isJsonObject()) {
            throw new IllegalArgumentException("'tls' must be an object with 'ca_file'");
        }
        return Path.of(required(tls.getAsJsonObject(), "ca_file"));
    }

    /**
     * The highest version both speak: the highest of {@code protocols} this peer speaks (1 to
     * {@value #PROTOCOL}), else the one asked for in {@code protocol}, else 1.
     */
    static int negotiate(JsonObject command) {
        JsonElement offered = command.get("protocols");
        int best = 0;
        if (offered != null && offered.isJsonArray()) {
            for (JsonElement version : offered.getAsJsonArray()) {
                int each = version.getAsInt();
                if (each >= 1 && each <= PROTOCOL && each > best) {
                    best = each;
                }
            }
        }
        if (best > 0) {
            return best;
        }
        JsonElement asked = command.get("protocol");
        int version = asked == null || asked.isJsonNull() ? 1 : asked.getAsInt();
        if (version < 1 || version > PROTOCOL) {
            throw new IllegalArgumentException("this peer speaks protocols 1 to " + PROTOCOL + ", not " + version);
        }
        return version;
    }

    private void openRequester(JsonObject command, JsonObject answer) throws Exception {
        String name = required(command, "name");
        Map<String, Object> knobs = policy(command);
        if (requesters.containsKey(name)) {
            throw new IllegalArgumentException("a requester named '" + name + "' is already open");
        }
        RequesterObserver observer = new RequesterObserver() {
            @Override
            public void unmatched(String correlationId, String responseMessageId) {
                JsonObject event = event("unmatched");
                event.addProperty("requester", name);
                event.addProperty("correlation_id", correlationId);
                if (protocol >= 3) {
                    // Both ids, null when absent: the requester cannot tell which kind of reply it was.
                    event.addProperty("response_message_id", responseMessageId);
                }
                write(event);
            }
        };
        Requester requester = protocol >= RECOVERY
                ? PeerPolicies.openRequester(connectionFactory(), connectionOptions(command), observer, knobs)
                : PeerPolicies.openRequester(connectionFactory(), observer, knobs);
        if (requesters.putIfAbsent(name, requester) != null) {
            requester.close();
            throw new IllegalArgumentException("a requester named '" + name + "' is already open");
        }
        if (protocol >= 2) {
            requester.onConnectionLost(reason -> connectionLost("requester", name, reason));
        }
        if (protocol >= RECOVERY) {
            requester.onRecovered(() -> recovered("requester", name));
        }
        answer.addProperty("reply_queue", requester.replyQueue());
    }

    /** Closes the requester, then answers once the calls the close ended have their answers. */
    private void closeRequester(JsonObject command) throws InterruptedException {
        String name = required(command, "name");
        Requester requester = requesters.remove(name);
        if (requester == null) {
            throw new IllegalArgumentException("no requester named '" + name + "'");
        }
        requester.close();
        inFlight.awaitEnded(name, CLOSE_ANSWERS_BOUND);
    }

    private void request(JsonObject command, JsonObject answer, CompletableFuture<Void> written) throws Exception {
        Requester requester = requester(command);
        InFlightCalls.Call call = inFlight.begin(required(command, "requester"), written);
        Duration timeout = duration(command, "timeout_ms");
        // The call's arguments are made from the command first: elapsed_ms is the binding's
        // time, from its call. A cold JVM once spent 690 ms converting the first request's
        // body and headers, which counted against the binding's 30 s default (RR-9.3).
        String exchange = textOr(command, "exchange", "");
        String routingKey = textOr(command, "routing_key", "");
        String type = text(command, "type"); // absent: the request has no type
        JsonElement body = bodyOf(command);
        String correlationId = text(command, "correlation_id");
        Map<String, Object> headers = headers(command);
        long started = System.nanoTime();
        PendingRequest pending;
        try {
            pending = requester.send(exchange, routingKey, type, body,
                    timeout, // absent: the binding's default applies
                    correlationId, headers);
        } catch (Exception | Error e) {
            call.refused(e);
            if (CallOutcome.endedByClose(e, protocol)) {
                answer.addProperty("outcome", "closed");
                answer.addProperty("elapsed_ms", elapsedMs(started));
                return;
            }
            if (CallOutcome.endedByLoss(answer, e, protocol)) {
                answer.addProperty("elapsed_ms", elapsedMs(started));
                return;
            }
            throw e;
        }
        call.sent(pending.result());
        JsonElement reply = null;
        Throwable error = null;
        try {
            reply = pending.result().get();
        } catch (ExecutionException e) {
            error = e;
        }
        CallOutcome.ofRequest(answer, reply, error, protocol);
        answer.addProperty("request_id", pending.requestId());
        answer.addProperty("elapsed_ms", elapsedMs(started));
    }

    private void gather(JsonObject command, JsonObject answer, CompletableFuture<Void> written) throws Exception {
        Requester requester = requester(command);
        InFlightCalls.Call call = inFlight.begin(required(command, "requester"), written);
        Duration timeout = duration(command, "timeout_ms");
        JsonElement count = command.get("expected_reply_count");
        // Whatever is absent stays null, so the binding's own defaults apply.
        GatherOptions options = new GatherOptions(
                count == null || count.isJsonNull() ? null : count.getAsInt(),
                timeout,
                text(command, "correlation_id"));
        String mode = required(command, "mode");
        String type = text(command, "type"); // absent: the copies have no type
        JsonElement body = bodyOf(command);
        String target = required(command, switch (mode) {
            case "multi" -> "endpoint";
            case "publish" -> "exchange";
            default -> throw new IllegalArgumentException("gather mode is 'multi' or 'publish', not '" + mode + "'");
        });
        long started = System.nanoTime(); // after the arguments, as for a request
        PendingGather pending;
        try {
            pending = mode.equals("multi")
                    ? requester.sendRequestMultiAsync(type, body, target, options)
                    : requester.publishRequestAsync(type, body, target, reply -> { }, options);
        } catch (Exception | Error e) {
            // A returned copy lands here at once (RR-13 for gathers): ok false with the binding's text.
            call.refused(e);
            if (CallOutcome.endedByClose(e, protocol)) {
                answer.addProperty("outcome", "closed");
                answer.addProperty("elapsed_ms", elapsedMs(started));
                return;
            }
            if (CallOutcome.endedByLoss(answer, e, protocol)) {
                answer.addProperty("elapsed_ms", elapsedMs(started));
                return;
            }
            throw e;
        }
        call.sent(pending.result());
        List<JsonElement> replies = null;
        Throwable error = null;
        try {
            replies = pending.result().get();
        } catch (ExecutionException e) {
            error = e;
        }
        CallOutcome.ofGather(answer, replies, error, protocol);
        answer.addProperty("request_id", pending.requestMessageId());
        answer.addProperty("elapsed_ms", elapsedMs(started));
    }

    private void startResponder(JsonObject command) throws Exception {
        String name = required(command, "name");
        String queue = required(command, "queue");
        if (responders.containsKey(name) || rawResponders.containsKey(name)) {
            throw new IllegalArgumentException("a responder named '" + name + "' is already started");
        }
        String client = textOr(command, "client", "binding");
        if (client.equals("raw")) {
            AutoCloseable raw = RawClient.startEchoResponder(connectionFactory(), queue);
            if (rawResponders.putIfAbsent(name, raw) != null) {
                raw.close();
                throw new IllegalArgumentException("a responder named '" + name + "' is already started");
            }
            return;
        }
        if (!client.equals("binding")) {
            throw new IllegalArgumentException("client is 'binding' or 'raw', not '" + client + "'");
        }
        Map<String, Object> knobs = policy(command);
        JsonElement maxAttempts = command.get("max_attempts");
        JsonObject behavior = command.has("behavior") && command.get("behavior").isJsonObject()
                ? command.getAsJsonObject("behavior")
                : new JsonObject();
        Responder.Builder builder = PeerPolicies.withPolicy(Responder.builder(queue), knobs)
                .handler(behaviorHandler(name, behavior))
                .observer(responderObserver(name, command));
        // Only a given max_attempts replaces the binding's own default (3, RR-14): no Options otherwise.
        if (maxAttempts != null && !maxAttempts.isJsonNull()) {
            builder.options(Options.defaults().withMaxAttempts(maxAttempts.getAsInt()));
        }
        if (command.has("bind") && command.get("bind").isJsonObject()) {
            JsonObject bind = command.getAsJsonObject("bind");
            builder.bind(required(bind, "exchange"), textOr(bind, "routing_key", ""));
        }
        if (protocol >= RECOVERY) {
            builder.connection(connectionOptions(command));
        }
        Responder responder = builder.start(connectionFactory());
        if (responders.putIfAbsent(name, responder) != null) {
            responder.close();
            throw new IllegalArgumentException("a responder named '" + name + "' is already started");
        }
        if (protocol >= 2) {
            responder.onConnectionLost(reason -> connectionLost("responder", name, reason));
        }
        if (protocol >= RECOVERY) {
            responder.onRecovered(() -> recovered("responder", name));
        }
    }

    /** The {@code recovered} event (protocol 5): the role's connection is back and consuming. */
    private void recovered(String side, String name) {
        JsonObject event = event("recovered");
        event.addProperty(side, name);
        write(event);
    }

    /**
     * A role's connection (protocol 5): named {@code connection_name}, to the nodes of its
     * {@code amqp_urls} (absent: hello's), the preferred first. Credentials, virtual host and
     * TLS are hello's.
     */
    ConnectionOptions connectionOptions(JsonObject command) {
        List<String> urls = strings(command, "amqp_urls");
        return new ConnectionOptions(required(command, "connection_name"),
                addresses(urls == null ? amqpUrls : urls));
    }

    /** The host and port of each URL, the scheme's default port where it names none. */
    static List<Address> addresses(List<String> urls) {
        return urls.stream().map(url -> {
            ConnectionFactory parsed = new ConnectionFactory();
            try {
                parsed.setUri(url);
            } catch (Exception e) {
                throw new IllegalArgumentException("bad amqp_urls entry: " + e.getMessage(), e);
            }
            return new Address(parsed.getHost(), parsed.getPort());
        }).toList();
    }

    /** A list of strings of a command; {@code null} when absent. */
    private static List<String> strings(JsonObject command, String field) {
        JsonElement value = command.get(field);
        if (value == null || value.isJsonNull()) {
            return null;
        }
        if (!value.isJsonArray() || value.getAsJsonArray().isEmpty()) {
            throw new IllegalArgumentException("'" + field + "' must be a non-empty list of strings");
        }
        return value.getAsJsonArray().asList().stream().map(JsonElement::getAsString).toList();
    }

    private void connectionLost(String side, String name, String reason) {
        JsonObject event = event("connection_lost");
        event.addProperty(side, name);
        event.addProperty("reason", reason == null ? "connection lost" : reason);
        write(event);
    }

    /** {@code load}: the binding's requester or the bare client, measured here (protocol 2). */
    private void load(JsonObject command, JsonObject answer) throws Exception {
        String client = required(command, "client");
        String exchange = textOr(command, "exchange", "");
        String routingKey = required(command, "routing_key");
        int requests = positive(command, "requests");
        int inFlight = positive(command, "in_flight");
        int bodyBytes = command.has("body_bytes") ? command.get("body_bytes").getAsInt() : 0;
        Duration timeout = duration(command, "timeout_ms");
        if (timeout == null) {
            throw new IllegalArgumentException("missing 'timeout_ms'");
        }
        int warmup = command.has("warmup") && !command.get("warmup").isJsonNull() ? command.get("warmup").getAsInt() : 0;
        JsonObject figures = switch (client) {
            case "binding" -> bindingLoad(command, exchange, routingKey, requests, inFlight, bodyBytes, timeout, warmup);
            case "raw" -> RawClient.load(connectionFactory(), exchange, routingKey, requests, inFlight, bodyBytes,
                    timeout.toMillis(), warmup);
            default -> throw new IllegalArgumentException("client is 'binding' or 'raw', not '" + client + "'");
        };
        answer.add("load", figures);
    }

    private JsonObject bindingLoad(JsonObject command, String exchange, String routingKey, int requests, int inFlight,
            int bodyBytes, Duration timeout, int warmup) throws Exception {
        Map<String, Object> knobs = policy(command);
        JsonElement body = JsonParser.parseString(new String(Load.body(bodyBytes), StandardCharsets.UTF_8));
        // send returns once its request is confirmed (a returned request throws there), so the
        // requests are sent from in_flight threads, the way a threaded service calls the binding;
        // Load's slots keep at most in_flight outstanding.
        ExecutorService callers = Executors.newFixedThreadPool(inFlight, runnable -> {
            Thread thread = new Thread(runnable, "acemq-load-caller");
            thread.setDaemon(true);
            return thread;
        });
        try (Requester requester = PeerPolicies.openRequester(connectionFactory(), null, knobs)) {
            return Load.run("binding", requests, inFlight, bodyBytes, warmup, (index, startedNanos, load) ->
                    callers.execute(() -> {
                        try {
                            requester.send(exchange, routingKey, body, timeout, null, Map.of()).result()
                                    .whenComplete((reply, error) -> {
                                        if (error == null) {
                                            load.done(index, startedNanos);
                                        } else if (CallOutcome.isRequestTimeout(error)) {
                                            load.timedOut();
                                        } else {
                                            load.failed(error);
                                        }
                                    });
                        } catch (Exception e) {
                            load.failed(e);
                        }
                    }));
        } finally {
            callers.shutdownNow();
        }
    }

    /**
     * The {@code policy} of a requester.open, responder.start or load (protocol 4): knob name to
     * value as JSON has it, which {@link PeerPolicies} sets on the binding's policy field by
     * field (an unknown knob or value is refused there). Absent, as before protocol 4: {@code {}},
     * the binding as it ships. {@code profile} and {@code mutant} are never read.
     */
    public static Map<String, Object> policy(JsonObject command) {
        JsonElement given = command.get("policy");
        if (given == null || given.isJsonNull()) {
            return Map.of();
        }
        if (!given.isJsonObject()) {
            throw new IllegalArgumentException("'policy' must be an object of knob values");
        }
        return GSON.fromJson(given, new TypeToken<Map<String, Object>>() { }.getType());
    }

    /** The responder's event writer, or {@link #SILENT} for {@code events: false} (protocol 4: a load, not a cell). */
    ResponderObserver responderObserver(String name, JsonObject command) {
        JsonElement events = command.get("events");
        boolean silent = events != null && events.isJsonPrimitive() && events.getAsJsonPrimitive().isBoolean()
                && !events.getAsBoolean();
        return silent ? SILENT : new EventObserver(name);
    }

    private Handler behaviorHandler(String name, JsonObject behavior) {
        String reply = textOr(behavior, "reply", "echo");
        if (!reply.equals("echo") && !reply.equals("fail")) {
            throw new IllegalArgumentException("behavior.reply is 'echo' or 'fail', not '" + reply + "'");
        }
        long delayMs = behavior.has("delay_ms") && !behavior.get("delay_ms").isJsonNull()
                ? behavior.get("delay_ms").getAsLong()
                : 0;
        String errorMessage = text(behavior, "error_message");
        if (reply.equals("fail") && errorMessage == null) {
            throw new IllegalArgumentException("behavior.error_message is required when reply is 'fail'");
        }
        return request -> {
            if (delayMs > 0) {
                Thread.sleep(delayMs);
            }
            if (reply.equals("fail")) {
                throw new ScenarioFailure(errorMessage);
            }
            JsonElement body = request.body();
            JsonObject echo = new JsonObject();
            echo.add("echo", body);
            echo.addProperty("responder", name);
            echo.addProperty("peer", PEER);
            if (body.isJsonObject() && body.getAsJsonObject().has("correlationId")) {
                echo.add("correlationId", body.getAsJsonObject().get("correlationId"));
            } else if (protocol >= 3) {
                // Protocol 3: always present, null when the body has none.
                echo.add("correlationId", JsonNull.INSTANCE);
            }
            echo.add("seen", seen(request));
            return echo;
        };
    }

    private void stopResponder(JsonObject command) {
        String name = required(command, "name");
        Responder responder = responders.remove(name);
        if (responder != null) {
            responder.close();
            return;
        }
        AutoCloseable raw = rawResponders.remove(name);
        if (raw == null) {
            throw new IllegalArgumentException("no responder named '" + name + "'");
        }
        try {
            raw.close();
        } catch (Exception e) {
            System.err.println("peer: closing raw responder " + name + ": " + e);
        }
    }

    private void counters(JsonObject command, JsonObject answer) {
        String name = required(command, "of");
        JsonObject counters = new JsonObject();
        Requester requester = requesters.get(name);
        Responder responder = responders.get(name);
        if (requester != null) {
            counters.addProperty("timed_out", requester.getTimedOut());
            counters.addProperty("unmatched", requester.getUnmatched());
        } else if (responder != null) {
            counters.addProperty("answered", responder.getAnswered());
            counters.addProperty("unanswerable", responder.getUnanswerable());
        } else if (!rawResponders.containsKey(name)) {
            throw new IllegalArgumentException("no requester or responder named '" + name + "'");
        }
        answer.add("counters", counters);
    }

    private void closeAll() {
        requesters.values().forEach(Requester::close);
        requesters.clear();
        responders.values().forEach(Responder::close);
        responders.clear();
        rawResponders.values().forEach(raw -> {
            try {
                raw.close();
            } catch (Exception e) {
                System.err.println("peer: closing raw responder: " + e);
            }
        });
        rawResponders.clear();
    }

    /** Turns the binding's hooks into event lines. */
    private final class EventObserver implements ResponderObserver {
        private final String responder;

        EventObserver(String responder) {
            this.responder = responder;
        }

        @Override
        public void handled(IncomingRequest request) {
            JsonObject event = responderEvent("handled", request.messageId());
            event.addProperty("attempt", request.attempt());
            event.add("seen", seen(request));
            write(event);
        }

        @Override
        public void replied(String messageId, String failure) {
            JsonObject event = responderEvent("replied", messageId);
            event.addProperty("failure", failure);
            write(event);
        }

        @Override
        public void replyFailed(String messageId, int attempt, String error) {
            JsonObject event = responderEvent("reply_failed", messageId);
            event.addProperty("attempt", attempt);
            event.addProperty("error", error);
            write(event);
        }

        @Override
        public void deadLettered(String messageId, String reason) {
            JsonObject event = responderEvent("dead_lettered", messageId);
            event.addProperty("reason", reason);
            write(event);
        }

        @Override
        public void unanswerable(String messageId) {
            write(responderEvent("unanswerable", messageId));
        }

        private JsonObject responderEvent(String name, String messageId) {
            JsonObject event = event(name);
            event.addProperty("responder", responder);
            event.addProperty("message_id", messageId);
            return event;
        }
    }

    private static JsonObject seen(IncomingRequest request) {
        JsonObject seen = new JsonObject();
        seen.addProperty("message_id", request.messageId());
        seen.addProperty("correlation_id", request.correlationId());
        seen.addProperty("reply_to", request.replyAddress().queue());
        seen.addProperty("reply_to_source", request.replyAddress().source().wireName());
        // The binding keeps headers sorted by name.
        seen.add("headers", strings(List.copyOf(request.headers().keySet())));
        seen.addProperty("attempt", request.attempt());
        return seen;
    }

    private void write(JsonObject message) {
        String line = GSON.toJson(message);
        synchronized (out) {
            out.print(line);
            out.print('\n');
            out.flush();
        }
    }

    private ConnectionFactory connectionFactory() {
        ConnectionFactory current = factory;
        if (current == null) {
            throw new IllegalStateException("no broker yet: send hello with amqp_url first");
        }
        return current;
    }

    private Requester requester(JsonObject command) {
        String name = required(command, "requester");
        Requester requester = requesters.get(name);
        if (requester == null) {
            throw new IllegalArgumentException("no requester named '" + name + "'");
        }
        return requester;
    }

    private static int positive(JsonObject command, String field) {
        JsonElement value = command.get(field);
        if (value == null || value.isJsonNull() || value.getAsInt() < 1) {
            throw new IllegalArgumentException("'" + field + "' must be a positive integer");
        }
        return value.getAsInt();
    }

    private static JsonElement bodyOf(JsonObject command) {
        JsonElement body = command.get("body");
        return body == null ? JsonNull.INSTANCE : body;
    }

    /** Extra request headers: strings as long strings, whole numbers as longs, booleans. */
    private static Map<String, Object> headers(JsonObject command) {
        Map<String, Object> headers = new HashMap<>();
        JsonElement given = command.get("headers");
        if (given == null || !given.isJsonObject()) {
            return headers;
        }
        given.getAsJsonObject().entrySet().forEach(entry -> {
            JsonElement value = entry.getValue();
            if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isBoolean()) {
                headers.put(entry.getKey(), value.getAsBoolean());
            } else if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isNumber()) {
                headers.put(entry.getKey(), value.getAsLong());
            } else if (value.isJsonPrimitive()) {
                headers.put(entry.getKey(), value.getAsString());
            } else {
                throw new IllegalArgumentException("header '" + entry.getKey() + "' must be a string, number or boolean");
            }
        });
        return headers;
    }

    private static Duration duration(JsonObject command, String field) {
        JsonElement value = command.get(field);
        if (value == null || value.isJsonNull()) {
            return null;
        }
        long ms = value.getAsLong();
        if (ms <= 0) {
            throw new IllegalArgumentException(field + " must be positive");
        }
        return Duration.ofMillis(ms);
    }

    private static JsonObject event(String name) {
        JsonObject event = new JsonObject();
        event.addProperty("event", name);
        return event;
    }

    private static JsonArray strings(List<String> values) {
        JsonArray array = new JsonArray();
        values.forEach(array::add);
        return array;
    }

    private static double elapsedMs(long startedNanos) {
        return Math.round((System.nanoTime() - startedNanos) / 10_000.0) / 100.0;
    }

    private static String text(JsonObject object, String field) {
        JsonElement value = object.get(field);
        return value == null || value.isJsonNull() ? null : value.getAsString();
    }

    private static String textOr(JsonObject object, String field, String fallback) {
        String value = text(object, field);
        return value == null ? fallback : value;
    }

    private static String required(JsonObject object, String field) {
        String value = text(object, field);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("missing '" + field + "'");
        }
        return value;
    }

    private static String describe(Throwable error) {
        String message = error.getMessage();
        return error.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }
}
