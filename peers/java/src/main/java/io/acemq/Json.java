package io.acemq;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonParseException;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;

/** Bodies are UTF-8 JSON (RR-19), decoded strictly: an empty body is not a JSON value. */
public final class Json {
    static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private Json() {
    }

    public static byte[] encode(JsonElement value) {
        return GSON.toJson(value).getBytes(StandardCharsets.UTF_8);
    }

    /** Whether {@link #decode} accepts the body. */
    static boolean isJson(byte[] body) {
        try {
            decode(body);
            return true;
        } catch (JsonParseException e) {
            return false;
        }
    }

    /** Decodes one JSON value, refusing empty input, lenient syntax and trailing data. */
    public static JsonElement decode(byte[] body) {
        String text = body == null ? "" : new String(body, StandardCharsets.UTF_8);
        if (text.isBlank()) {
            throw new JsonParseException("empty body is not JSON");
        }
        try (JsonReader reader = new JsonReader(new StringReader(text))) {
            reader.setLenient(false);
            JsonElement value = GSON.getAdapter(JsonElement.class).read(reader);
            if (reader.peek() != JsonToken.END_DOCUMENT) {
                throw new JsonParseException("trailing data after the JSON value");
            }
            return value;
        } catch (IOException | IllegalStateException | StackOverflowError e) {
            throw new JsonParseException(e.getMessage(), e);
        }
    }
}
