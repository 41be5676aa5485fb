package io.acemq.peer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.rabbitmq.client.Address;
import io.acemq.ConnectionOptions;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Protocol 5 in the adapter: hello agrees on 5 and names RR-20's knobs; each role's
 * connection is named its connection_name and placed on its amqp_urls (absent: hello's).
 * Nothing here needs a broker.
 */
class ProtocolFiveTest {
    private static final String NO_BROKER = "amqp://guest:guest@127.0.0.1:1/none";

    private final ByteArrayOutputStream written = new ByteArrayOutputStream();
    private final PeerMain peer = new PeerMain(new PrintStream(written, true, StandardCharsets.UTF_8));

    @Test
    void helloAgreesOnFiveAndNamesTheRecoveryKnobs() {
        JsonObject answer = hello("\"amqp_urls\": [\"" + NO_BROKER + "\"]");
        assertEquals(5, answer.get("protocol").getAsInt());
        String requester = answer.getAsJsonObject("knobs").get("requester").toString();
        String responder = answer.getAsJsonObject("knobs").get("responder").toString();
        assertTrue(requester.contains("\"on_connection_lost\""), requester);
        assertTrue(requester.contains("\"recover_connection\""), requester);
        assertTrue(responder.contains("\"recover_connection\""), responder);
        assertTrue(responder.contains("\"ack_timing\""), responder);
    }

    @Test
    void aRolesConnectionIsNamedAndPlacedAsItsCommandSays() {
        hello("\"amqp_urls\": [\"amqp://guest:guest@node-a:5672/v\", \"amqp://guest:guest@node-b:5673/v\"]");
        ConnectionOptions given = peer.connectionOptions(command("{\"connection_name\": \"c0001.q\","
                + " \"amqp_urls\": [\"amqp://guest:guest@node-b:5673/v\", \"amqps://guest:guest@node-c/v\"]}"));
        assertEquals("c0001.q", given.connectionName());
        // The preferred node first; a URL without a port has its scheme's.
        assertEquals(List.of(new Address("node-b", 5673), new Address("node-c", 5671)), given.addresses());

        ConnectionOptions absent = peer.connectionOptions(command("{\"connection_name\": \"c0001.r\"}"));
        assertEquals(List.of(new Address("node-a", 5672), new Address("node-b", 5673)), absent.addresses());
    }

    @Test
    void aHelloWithoutAmqpUrlsHasItsOneUrl() {
        hello("");
        assertEquals(List.of(new Address("127.0.0.1", 1)),
                peer.connectionOptions(command("{\"connection_name\": \"n\"}")).addresses());
    }

    @Test
    void aRoleWithoutConnectionNameIsRefusedBeforeConnecting() {
        hello("\"amqp_urls\": [\"" + NO_BROKER + "\"]");
        peer.dispatch(command("{\"id\": 2, \"op\": \"requester.open\", \"name\": \"q\"}"));
        JsonObject answer = JsonParser.parseString(written.toString(StandardCharsets.UTF_8).trim()).getAsJsonObject();
        assertFalse(answer.get("ok").getAsBoolean(), answer.toString());
        assertTrue(answer.get("error").getAsString().contains("connection_name"), answer.toString());
    }

    private JsonObject hello(String extra) {
        peer.dispatch(command("{\"id\": 1, \"op\": \"hello\", \"protocols\": [1, 2, 3, 4, 5], \"amqp_url\": \""
                + NO_BROKER.replace("127.0.0.1:1", extra.contains("node-a") ? "node-a:5672" : "127.0.0.1:1") + "\""
                + (extra.isEmpty() ? "" : ", " + extra) + "}"));
        JsonObject answer = JsonParser.parseString(written.toString(StandardCharsets.UTF_8).trim()).getAsJsonObject();
        written.reset();
        assertTrue(answer.get("ok").getAsBoolean(), answer.toString());
        return answer;
    }

    private static JsonObject command(String json) {
        return JsonParser.parseString(json).getAsJsonObject();
    }
}
