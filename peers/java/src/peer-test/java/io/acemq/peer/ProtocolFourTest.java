package io.acemq.peer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.acemq.PeerPolicies;
import io.acemq.ResponderObserver;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Protocol 4 in the adapter: hello names the binding's policy knobs (no catalogue names), the
 * policy of requester.open, responder.start and load is refused on a knob the binding has
 * not, and events: false writes no event. Nothing here needs a broker: a policy is resolved
 * before any connection is made.
 */
class ProtocolFourTest {
    /** Nothing listens there: a command that got as far as connecting would fail otherwise. */
    private static final String NO_BROKER = "amqp://guest:guest@127.0.0.1:1/none";

    private final ByteArrayOutputStream written = new ByteArrayOutputStream();
    private final PeerMain peer = new PeerMain(new PrintStream(written, true, StandardCharsets.UTF_8));

    @Test
    void helloOffersTheBindingsKnobsAndNoNames() {
        JsonObject answer = hello("[1, 2, 3, 4]");
        assertEquals(4, answer.get("protocol").getAsInt());
        JsonObject knobs = answer.getAsJsonObject("knobs");
        assertEquals(List.copyOf(PeerPolicies.requesterKnobs()), strings(knobs.getAsJsonArray("requester")));
        assertEquals(List.copyOf(PeerPolicies.responderKnobs()), strings(knobs.getAsJsonArray("responder")));
        assertFalse(answer.has("profiles"));
        assertFalse(answer.has("mutants"));
        // A client fact: amqp-client 5.0.0 writes no unsigned header types.
        assertEquals("{\"narrow_int_header\":[true]}", answer.get("unreachable").toString());
    }

    @Test
    void anOlderHelloGetsTheBindingAsItShips() {
        JsonObject answer = hello("[1, 2, 3]");
        assertEquals(3, answer.get("protocol").getAsInt());
        assertEquals("[\"current\"]", answer.get("profiles").toString());
        assertEquals("[]", answer.get("mutants").toString());
        assertFalse(answer.has("knobs"));
    }

    @Test
    void aKnobTheBindingHasNotIsRefusedNamingIt() {
        hello("[1, 2, 3, 4]");
        JsonObject open = command("{\"id\": 2, \"op\": \"requester.open\", \"name\": \"q\", \"profile\": \"current\","
                + " \"mutant\": null, \"policy\": {\"write_header_address\": false, \"no_such_knob\": 1}}");
        assertRefusedNaming(open, "no_such_knob");
        JsonObject start = command("{\"id\": 3, \"op\": \"responder.start\", \"name\": \"r\", \"queue\": \"q\","
                + " \"behavior\": {\"reply\": \"echo\"}, \"policy\": {\"strip_engine_headers\": \"sometimes\"}}");
        assertRefusedNaming(start, "strip_engine_headers");
        JsonObject load = command("{\"id\": 4, \"op\": \"load\", \"client\": \"binding\", \"routing_key\": \"q\","
                + " \"requests\": 1, \"in_flight\": 1, \"timeout_ms\": 1000, \"policy\": {\"match_replies_by\": \"luck\"}}");
        assertRefusedNaming(load, "match_replies_by");
    }

    @Test
    void eventsFalseWritesNoEvent() {
        ResponderObserver silent = peer.responderObserver("r", command("{\"events\": false}"));
        assertSame(PeerMain.SILENT, silent);
        silent.handled(null);
        silent.replied("m", null);
        silent.replyFailed("m", 1, "returned");
        silent.deadLettered("m", "UndeliverableReply: returned");
        silent.unanswerable("m");
        assertEquals("", written.toString(StandardCharsets.UTF_8));

        // Absent or true: events as always.
        for (String events : List.of("{}", "{\"events\": true}")) {
            ResponderObserver observer = peer.responderObserver("r", command(events));
            assertNotSame(PeerMain.SILENT, observer);
            observer.unanswerable("m");
        }
        assertEquals(List.of("unanswerable", "unanswerable"),
                lines().stream().map(line -> line.get("event").getAsString()).toList());
    }

    private JsonObject hello(String protocols) {
        peer.dispatch(command("{\"id\": 1, \"op\": \"hello\", \"protocol\": 4, \"protocols\": " + protocols
                + ", \"amqp_url\": \"" + NO_BROKER + "\"}"));
        JsonObject answer = lines().get(0);
        written.reset();
        assertTrue(answer.get("ok").getAsBoolean(), answer.toString());
        return answer;
    }

    private void assertRefusedNaming(JsonObject command, String knob) {
        peer.dispatch(command);
        JsonObject answer = lines().get(0);
        written.reset();
        assertEquals(command.get("id"), answer.get("id"));
        assertFalse(answer.get("ok").getAsBoolean(), answer.toString());
        String error = answer.get("error").getAsString();
        assertTrue(error.contains(knob), error);
        assertFalse(error.contains("Connect"), "refused before connecting: " + error);
    }

    private List<JsonObject> lines() {
        List<JsonObject> lines = new ArrayList<>();
        for (String line : written.toString(StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                lines.add(JsonParser.parseString(line).getAsJsonObject());
            }
        }
        return lines;
    }

    private static JsonObject command(String json) {
        return JsonParser.parseString(json).getAsJsonObject();
    }

    private static List<String> strings(JsonArray array) {
        List<String> values = new ArrayList<>();
        for (JsonElement value : array) {
            values.add(value.getAsString());
        }
        return values;
    }
}
