package io.acemq;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Policies from knobs as the conformance catalogue spells them: {@code snake_case} name to a
 * boolean, a whole number ({@code default_timeout_ms: 10000}), a value name
 * ({@code "oldest_waiter"}), a string ({@code strip_prefix: "x-acemq-"}), or a list of value
 * names. Each policy field is the camelCase of its knob and each enum constant the upper case
 * of its value, every character that cannot be in a Java name as {@code _}
 * ({@code application/json}: {@code APPLICATION_JSON}), so the mapping is mechanical and a
 * knob the binding lacks is refused. Package-private: only the
 * conformance peer's class in this package and the unit tests use it.
 */
final class PolicyKnobs {
    private PolicyKnobs() {
    }

    static Set<String> names(Class<? extends Record> type) {
        Set<String> names = new TreeSet<>();
        for (RecordComponent component : type.getRecordComponents()) {
            names.add(snake(component.getName()));
        }
        return names;
    }

    /** The policy {@code spec} with every knob given replaced. */
    static <T extends Record> T resolve(T spec, Map<String, Object> knobs) {
        RecordComponent[] components = spec.getClass().getRecordComponents();
        Set<String> unknown = new TreeSet<>(knobs.keySet());
        Object[] values = new Object[components.length];
        try {
            for (int i = 0; i < components.length; i++) {
                RecordComponent component = components[i];
                String knob = snake(component.getName());
                unknown.remove(knob);
                values[i] = knobs.containsKey(knob)
                        ? convert(knob, component, knobs.get(knob))
                        : component.getAccessor().invoke(spec);
            }
            if (!unknown.isEmpty()) {
                throw new IllegalArgumentException("no such " + spec.getClass().getSimpleName() + " knob: " + unknown);
            }
            Class<?>[] types = Arrays.stream(components).map(RecordComponent::getType).toArray(Class<?>[]::new);
            Constructor<?> constructor = spec.getClass().getDeclaredConstructor(types);
            @SuppressWarnings("unchecked")
            T policy = (T) constructor.newInstance(values);
            return policy;
        } catch (ReflectiveOperationException e) {
            Throwable cause = e instanceof InvocationTargetException target ? target.getCause() : e;
            throw new IllegalStateException("cannot build " + spec.getClass().getSimpleName() + ": " + cause, cause);
        }
    }

    private static Object convert(String knob, RecordComponent component, Object value) {
        Class<?> type = component.getType();
        if (type == boolean.class && value instanceof Boolean flag) {
            return flag;
        }
        if ((type == int.class || type == long.class) && value instanceof Number number
                && number.doubleValue() == Math.rint(number.doubleValue())) {
            // The catalogue's numbers are whole; YAML and JSON readers give them as any Number.
            return type == int.class ? (Object) Math.toIntExact(number.longValue()) : (Object) number.longValue();
        }
        if (type.isEnum() && value instanceof String name) {
            return enumValue(type, knob, name);
        }
        if (type == String.class && value instanceof String text) {
            return text;
        }
        if (type == List.class && value instanceof List<?> names) {
            // The one list knob is read_order, a list of reply address sources.
            List<Object> sources = new ArrayList<>();
            for (Object name : names) {
                sources.add(enumValue(ReplyAddress.Source.class, knob, String.valueOf(name)));
            }
            return sources;
        }
        throw new IllegalArgumentException(knob + " cannot be " + value);
    }

    private static Object enumValue(Class<?> type, String knob, String name) {
        for (Object constant : type.getEnumConstants()) {
            if (((Enum<?>) constant).name().equals(name.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_]", "_"))) {
                return constant;
            }
        }
        throw new IllegalArgumentException(knob + " has no value '" + name + "'");
    }

    /** {@code writeHeaderAddress} -> {@code write_header_address}. */
    private static String snake(String camel) {
        return camel.replaceAll("([A-Z])", "_$1").toLowerCase(Locale.ROOT);
    }
}
