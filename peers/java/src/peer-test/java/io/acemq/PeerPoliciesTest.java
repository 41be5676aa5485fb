package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.acemq.peer.PeerMain;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Protocol 4's policy values reach the binding's policy records field by field: every field
 * is a knob, and every knob given as JSON (as requester.open, responder.start and load carry
 * it) sets exactly its field.
 */
class PeerPoliciesTest {
    @Test
    void theKnobsAreExactlyThePolicyRecordsFields() {
        assertEquals(fieldKnobs(RequesterPolicy.class), PeerPolicies.requesterKnobs());
        assertEquals(fieldKnobs(ResponderPolicy.class), PeerPolicies.responderKnobs());
    }

    @Test
    void everyKnobGivenAsJsonSetsItsFieldAndNoOther() throws Exception {
        appliedFieldByField(RequesterPolicy.SPEC, PeerPolicies::requesterPolicy);
        appliedFieldByField(ResponderPolicy.SPEC, PeerPolicies::responderPolicy);
    }

    @Test
    void anEmptyOrAbsentPolicyIsTheBindingAsItShips() {
        assertEquals(RequesterPolicy.SPEC, PeerPolicies.requesterPolicy(PeerMain.policy(new JsonObject())));  // absent
        assertEquals(ResponderPolicy.SPEC, PeerPolicies.responderPolicy(PeerMain.policy(command("{}"))));
    }

    @Test
    void anUnknownKnobOrAValueTheFieldCannotTakeIsRefusedNamingIt() {
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> PeerPolicies.requesterPolicy(PeerMain.policy(command("{\"write_header_adress\": false}"))));
        assertTrue(unknown.getMessage().contains("write_header_adress"), unknown.getMessage());
        // A responder knob is no requester knob.
        assertThrows(IllegalArgumentException.class,
                () -> PeerPolicies.requesterPolicy(PeerMain.policy(command("{\"strip_engine_headers\": false}"))));
        IllegalArgumentException value = assertThrows(IllegalArgumentException.class,
                () -> PeerPolicies.responderPolicy(PeerMain.policy(command("{\"read_order\": [\"nowhere\"]}"))));
        assertTrue(value.getMessage().contains("read_order"), value.getMessage());
        IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
                () -> PeerPolicies.requesterPolicy(PeerMain.policy(command("{\"count_timeouts\": \"no\"}"))));
        assertTrue(type.getMessage().contains("count_timeouts"), type.getMessage());
    }

    /**
     * Sets every field of {@code spec} to a value other than its own, in one policy given as
     * JSON, and checks each field took exactly the value its knob named.
     */
    private static <T extends Record> void appliedFieldByField(T spec, Function<Map<String, Object>, T> resolve)
            throws ReflectiveOperationException {
        Map<String, Object> json = new LinkedHashMap<>();
        Map<RecordComponent, Object> expected = new LinkedHashMap<>();
        for (RecordComponent field : spec.getClass().getRecordComponents()) {
            Object value = field.getAccessor().invoke(spec);
            Object other;
            Object spelt;
            if (value instanceof Boolean flag) {
                other = !flag;
                spelt = other;
            } else if (value instanceof Integer number) {
                other = number + 1;
                spelt = other;
            } else if (value instanceof Long number) {
                other = number + 1;
                spelt = other;
            } else if (value instanceof Enum<?> constant) {
                Object[] constants = constant.getDeclaringClass().getEnumConstants();
                other = constants[(constant.ordinal() + 1) % constants.length];
                spelt = ((Enum<?>) other).name().toLowerCase(Locale.ROOT);
            } else if (value instanceof String) {
                other = "x-other-";
                spelt = other;
            } else if (value instanceof List<?> sources) {
                // read_order: the spec's sources reversed.
                List<Object> reversed = new ArrayList<>(sources);
                Collections.reverse(reversed);
                other = reversed;
                spelt = reversed.stream().map(s -> ((Enum<?>) s).name().toLowerCase(Locale.ROOT)).toList();
            } else {
                throw new AssertionError("no other value for " + field.getName() + " = " + value);
            }
            assertNotEquals(value, other, field.getName());
            json.put(snake(field.getName()), spelt);
            expected.put(field, other);
        }
        T applied = resolve.apply(PeerMain.policy(command(new Gson().toJson(json))));
        for (Map.Entry<RecordComponent, Object> field : expected.entrySet()) {
            assertEquals(field.getValue(), field.getKey().getAccessor().invoke(applied), field.getKey().getName());
        }
    }

    /** A command whose {@code policy} is {@code json}. */
    private static JsonObject command(String json) {
        return JsonParser.parseString("{\"policy\": " + json + "}").getAsJsonObject();
    }

    private static Set<String> fieldKnobs(Class<? extends Record> type) {
        Set<String> names = new TreeSet<>();
        for (RecordComponent field : type.getRecordComponents()) {
            names.add(snake(field.getName()));
        }
        return names;
    }

    private static String snake(String camel) {
        StringBuilder text = new StringBuilder();
        for (char c : camel.toCharArray()) {
            if (Character.isUpperCase(c)) {
                text.append('_');
            }
            text.append(Character.toLowerCase(c));
        }
        return text.toString();
    }
}
