package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.rabbitmq.client.impl.LongStringHelper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every case of catalogue/wire-vectors.json, the pure wire rules every binding shares, run
 * through this binding's functions. The file is $ACEMQ_WIRE_VECTORS, else found by walking up
 * from the working directory (the peer folder or a Maven module) to the repository.
 */
class WireVectorsTest {
    private static final JsonObject VECTORS = load();

    @TestFactory
    Stream<DynamicTest> headerString() {
        return cases("header_string", c -> assertEquals(
                expectText(c), Headers.text(c.has("value") ? header(c.get("value")) : null)));
    }

    @TestFactory
    Stream<DynamicTest> replyAddress() {
        return cases("reply_address", c -> {
            List<ReplyAddress.Source> order = new ArrayList<>();
            if (c.has("read_order")) {
                c.getAsJsonArray("read_order").forEach(s -> order.add(ReplyAddress.Source.valueOf(s.getAsString().toUpperCase())));
            }
            String nativeReplyTo = c.has("reply_to") ? c.get("reply_to").getAsString() : null;
            Optional<ReplyAddress> resolved = c.has("read_order")
                    ? ReplyAddress.resolve(headers(c), nativeReplyTo, order)
                    : ReplyAddress.resolve(headers(c), nativeReplyTo);
            JsonElement expect = c.get("expect");
            if (expect.isJsonNull()) {
                assertEquals(Optional.empty(), resolved);
            } else {
                JsonObject want = expect.getAsJsonObject();
                assertEquals(new ReplyAddress(want.get("address").getAsString(),
                        ReplyAddress.Source.valueOf(want.get("source").getAsString().toUpperCase())), resolved.orElse(null));
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> stripEngineHeaders() {
        return cases("strip_engine_headers", c -> {
            List<String> kept = new ArrayList<>();
            c.getAsJsonArray("kept").forEach(name -> kept.add(name.getAsString()));
            Collections.sort(kept);
            assertEquals(kept, List.copyOf(Headers.visibleToHandler(headers(c)).keySet()));
        });
    }

    @TestFactory
    Stream<DynamicTest> failureText() {
        return cases("failure_text", c -> assertEquals(c.get("expect").getAsString(),
                Headers.failureText(c.get("type").getAsString(), c.get("message").getAsString())));
    }

    @TestFactory
    Stream<DynamicTest> deliveryAttempt() {
        return cases("delivery_attempt", c -> assertEquals(c.get("expect").getAsInt(), Headers.attempt(headers(c))));
    }

    @TestFactory
    Stream<DynamicTest> retryDecision() {
        return cases("retry_decision", c -> {
            int max = c.has("max_attempts") ? c.get("max_attempts").getAsInt() : Options.defaults().maxAttempts();
            assertEquals(RetryDecision.valueOf(c.get("expect").getAsString().toUpperCase()),
                    RetryDecision.after(c.get("attempt").getAsInt(), max));
        });
    }

    @TestFactory
    Stream<DynamicTest> shortString() {
        return cases("short_string", c -> {
            String value = text(c.get("value"));
            switch (c.get("expect").getAsString()) {
                case "accepted" -> assertEquals(value, ShortStrings.check("correlation_id", value));
                case "refused" -> assertThrows(IllegalArgumentException.class, () -> ShortStrings.check("correlation_id", value));
                default -> fail("unknown expectation " + c.get("expect"));
            }
        });
    }

    private static Stream<DynamicTest> cases(String group, Consumer<JsonObject> check) {
        JsonArray cases = VECTORS.getAsJsonObject(group).getAsJsonArray("cases");
        if (cases.isEmpty()) {
            fail(group + " has no cases");
        }
        return cases.asList().stream().map(JsonElement::getAsJsonObject)
                .map(c -> DynamicTest.dynamicTest(group + ": " + c.get("name").getAsString(), () -> check.accept(c)));
    }

    private static String expectText(JsonObject c) {
        JsonElement expect = c.get("expect");
        return expect == null || expect.isJsonNull() ? null : expect.getAsString();
    }

    /** A case's {@code headers} in the client's types; absent is an empty table. */
    private static Map<String, Object> headers(JsonObject c) {
        Map<String, Object> headers = new HashMap<>();
        if (c.has("headers")) {
            c.getAsJsonObject("headers").entrySet().forEach(e -> headers.put(e.getKey(), header(e.getValue())));
        }
        return headers;
    }

    /**
     * The probe's typed notation as amqp-client hands values to a consumer: a long string is a
     * {@code LongString}, {@code x} a {@code byte[]}, {@code l}/{@code I}/{@code b} a
     * Long/Integer/Byte, {@code t} a Boolean, {@code d} a Double, a table a Map, an array a List.
     */
    private static Object header(JsonElement value) {
        if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isString()) {
            return LongStringHelper.asLongString(value.getAsString());
        }
        if (value.isJsonArray() || value.isJsonNull() || !value.isJsonObject()) {
            throw new IllegalArgumentException("not the typed notation: " + value);
        }
        JsonObject typed = value.getAsJsonObject();
        if (typed.has("repeat")) {
            return LongStringHelper.asLongString(text(typed));
        }
        Map.Entry<String, JsonElement> only = typed.entrySet().iterator().next();
        JsonElement v = only.getValue();
        return switch (only.getKey()) {
            case "bytes" -> text(v).getBytes(StandardCharsets.UTF_8);
            case "long" -> v.getAsLong();
            case "int" -> v.getAsInt();
            case "byte" -> v.getAsByte();
            case "bool" -> v.getAsBoolean();
            case "double" -> v.getAsDouble();
            case "table" -> {
                Map<String, Object> table = new LinkedHashMap<>();
                v.getAsJsonObject().entrySet().forEach(e -> table.put(e.getKey(), header(e.getValue())));
                yield table;
            }
            case "array" -> {
                List<Object> array = new ArrayList<>();
                v.getAsJsonArray().forEach(item -> array.add(header(item)));
                yield array;
            }
            default -> throw new IllegalArgumentException("unknown type in " + value);
        };
    }

    /** A plain string, or {@code {"repeat": s, "times": n}}. */
    private static String text(JsonElement value) {
        if (value.isJsonObject() && value.getAsJsonObject().has("repeat")) {
            JsonObject repeat = value.getAsJsonObject();
            return repeat.get("repeat").getAsString().repeat(repeat.get("times").getAsInt());
        }
        return value.getAsString();
    }

    private static JsonObject load() {
        String given = System.getenv("ACEMQ_WIRE_VECTORS");
        Path file = given != null && !given.isEmpty() ? Path.of(given) : find();
        try {
            return JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8)).getAsJsonObject();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e, e);
        }
    }

    private static Path find() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("catalogue").resolve("wire-vectors.json");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("catalogue/wire-vectors.json not found above " + Path.of("").toAbsolutePath()
                + "; set ACEMQ_WIRE_VECTORS");
    }
}
