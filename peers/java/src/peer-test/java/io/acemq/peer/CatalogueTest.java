package io.acemq.peer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.acemq.PeerPolicies;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The adapter's table against catalogue/catalogue.yaml itself: every mutant's side and policy,
 * java's profiles, and the binding's knobs. The file's catalogue lines are one flow mapping
 * each, so a few patterns read them without a YAML library.
 */
class CatalogueTest {
    private static final List<String> LINES = read();

    @Test
    void mutantsAreTheCatalogues() {
        Map<String, Catalogue.Mutant> expected = catalogueMutants();
        assertTrue(expected.size() >= 40, "the catalogue's mutant lines were not read: " + expected.keySet());
        Set<String> onlyWhere = onlyWhereMutants();
        for (String unofferable : Catalogue.UNOFFERABLE.keySet()) {
            // Only a mutant the catalogue says some clients cannot have may be missing here.
            assertTrue(onlyWhere.contains(unofferable),
                    unofferable + " is in Catalogue.UNOFFERABLE but the catalogue has no only_where mutant of that name");
            assertFalse(Catalogue.MUTANTS.containsKey(unofferable), unofferable + " is both unofferable and in the table");
            expected.remove(unofferable);
        }
        for (String pending : Catalogue.PENDING) {
            assertFalse(expected.containsKey(pending),
                    "the catalogue lists " + pending + " now: drop it from Catalogue.PENDING so hello offers it");
        }
        Map<String, Catalogue.Mutant> listed = new LinkedHashMap<>(Catalogue.MUTANTS);
        listed.keySet().removeAll(Catalogue.PENDING);
        assertEquals(expected, listed);
    }

    @Test
    void unofferableMutantsAreRefusedAndNotOffered() {
        for (String unofferable : Catalogue.UNOFFERABLE.keySet()) {
            assertFalse(Catalogue.mutantNames().contains(unofferable), unofferable);
            assertThrows(IllegalArgumentException.class, () -> Catalogue.mutant(unofferable));
        }
        assertTrue(Catalogue.UNOFFERABLE.containsKey("narrow-int-header"));
    }

    @Test
    void pendingMutantsAreTakenButNotOffered() {
        for (String pending : Catalogue.PENDING) {
            assertEquals(pending, Catalogue.mutant(pending).name());
            assertFalse(Catalogue.mutantNames().contains(pending), pending);
        }
        List<String> offered = new ArrayList<>(Catalogue.MUTANTS.keySet());
        offered.removeAll(Catalogue.PENDING);
        assertEquals(offered, Catalogue.mutantNames());
        // Numeric knobs as the catalogue writes them.
        assertEquals(Map.of("default_timeout_ms", 10000), Catalogue.requesterKnobs(null, "default-timeout-10s"));
        assertEquals(Map.of(), Catalogue.requesterKnobs(null, "default-attempts-5"));
        assertEquals(Map.of("attempt_base", 0), Catalogue.responderKnobs(null, "attempt-from-zero"));
    }

    @Test
    void profilesAreJavasInTheCatalogue() {
        Map<String, Map<String, Map<String, Object>>> expected = new LinkedHashMap<>();
        expected.put("current", Map.of("requester", Map.of(), "responder", Map.of()));
        String profile = null;
        boolean java = false;
        for (String text : section("profiles:")) {
            Matcher name = Pattern.compile("^  ([0-9.]+|current):\\s*$").matcher(text);
            if (name.find()) {
                profile = name.group(1);
                java = false;
            } else if (text.matches("^      java: *\\{\\} *$")) {
                expected.put(profile, Map.of("requester", Map.of(), "responder", Map.of()));
            } else if (text.matches("^      java: *$")) {
                java = true;
                expected.put(profile, new LinkedHashMap<>(Map.of("requester", Map.of(), "responder", Map.of())));
            } else if (text.matches("^      \\S.*")) {
                java = false;
            } else if (java) {
                Matcher side = Pattern.compile("^        (requester|responder): *(\\{.*\\})").matcher(text);
                if (side.find()) {
                    expected.get(profile).put(side.group(1), flow(side.group(2)));
                }
            }
        }
        Map<String, Map<String, Map<String, Object>>> actual = new LinkedHashMap<>();
        Catalogue.PROFILES.forEach((n, p) -> actual.put(n, Map.of("requester", p.requester(), "responder", p.responder())));
        assertEquals(new TreeSet<>(expected.keySet()), new TreeSet<>(actual.keySet()));
        expected.forEach((n, sides) -> assertEquals(sides, actual.get(n), n));
    }

    @Test
    void theBindingHasExactlyTheCataloguesKnobs() {
        // With the knobs of the mutants the catalogue does not list yet.
        TreeSet<String> requester = knobs("requester");
        TreeSet<String> responder = knobs("responder");
        // Without the knobs only an unofferable mutant sets: the binding cannot have them.
        Map<String, Catalogue.Mutant> catalogue = catalogueMutants();
        for (String unofferable : Catalogue.UNOFFERABLE.keySet()) {
            for (String knob : catalogue.get(unofferable).knobs().keySet()) {
                boolean offeredSetsIt = Catalogue.MUTANTS.values().stream().anyMatch(m -> m.knobs().containsKey(knob));
                if (!offeredSetsIt) {
                    requester.remove(knob);
                    responder.remove(knob);
                }
            }
        }
        for (String pending : Catalogue.PENDING) {
            Catalogue.Mutant mutant = Catalogue.mutant(pending);
            (mutant.actsOnRequester() ? requester : responder).addAll(mutant.knobs().keySet());
        }
        assertEquals(requester, PeerPolicies.requesterKnobs());
        assertEquals(responder, PeerPolicies.responderKnobs());
    }

    @Test
    void unknownNamesAreRefusedNamingTheValidOnes() {
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> Catalogue.mutant("nope"));
        assertEquals(true, error.getMessage().contains("native-only"));
        assertThrows(IllegalArgumentException.class, () -> Catalogue.profile("0.7.12"));
        // A mutant of the other side has no effect.
        assertEquals(Map.of(), Catalogue.requesterKnobs(null, "no-strip"));
        assertEquals(Map.of("write_header_address", false), Catalogue.requesterKnobs("0.3.0", "no-strip"));
    }

    private static final Pattern MUTANT_LINE =
            Pattern.compile("^  ([a-z0-9-]+): *\\{side: (\\w+), clause: [^,]+, policy: (\\{[^}]*\\}),( only_where: )?");

    /** Every mutant line of the catalogue, as the table would have it. */
    private static Map<String, Catalogue.Mutant> catalogueMutants() {
        Map<String, Catalogue.Mutant> mutants = new LinkedHashMap<>();
        for (String text : section("mutants:")) {
            Matcher m = MUTANT_LINE.matcher(text);
            if (m.find()) {
                mutants.put(m.group(1), new Catalogue.Mutant(m.group(1),
                        Catalogue.Side.valueOf(m.group(2).toUpperCase()), flow(m.group(3))));
            }
        }
        return mutants;
    }

    /** The catalogue's mutants that only some clients can have ({@code only_where:}). */
    private static Set<String> onlyWhereMutants() {
        Set<String> names = new TreeSet<>();
        for (String text : section("mutants:")) {
            Matcher m = MUTANT_LINE.matcher(text);
            if (m.find() && m.group(4) != null) {
                names.add(m.group(1));
            }
        }
        return names;
    }

    private static TreeSet<String> knobs(String side) {
        TreeSet<String> names = new TreeSet<>();
        boolean in = false;
        for (String text : section("policies:")) {
            if (text.matches("^  \\w+:\\s*$")) {
                in = text.trim().equals(side + ":");
            } else if (in && text.matches("^    \\w+: .*")) {
                names.add(text.trim().split(":")[0]);
            }
        }
        return names;
    }

    /** {@code {a: true, b: word, c: [x, y], d: 5, e: "x-"}} as a map of Boolean, String, List and Integer values. */
    private static Map<String, Object> flow(String text) {
        Map<String, Object> map = new LinkedHashMap<>();
        Matcher entry = Pattern.compile("(\\w+): *(\\[[^\\]]*\\]|[^,}]+)").matcher(text.substring(1, text.length() - 1));
        while (entry.find()) {
            String value = entry.group(2).trim();
            Object parsed;
            if (value.startsWith("[")) {
                List<Object> items = new ArrayList<>();
                for (String item : value.substring(1, value.length() - 1).split(",")) {
                    items.add(item.trim());
                }
                parsed = items;
            } else if (value.equals("true") || value.equals("false")) {
                parsed = Boolean.valueOf(value);
            } else if (value.matches("\"[^\"]*\"")) {
                parsed = value.substring(1, value.length() - 1); // strip_prefix: "x-"
            } else if (value.matches("-?\\d+")) {
                parsed = Integer.valueOf(value);
            } else {
                parsed = value;
            }
            map.put(entry.group(1), parsed);
        }
        return map;
    }

    /** The lines of a top-level section, up to the next one. */
    private static List<String> section(String header) {
        int start = LINES.indexOf(header);
        List<String> lines = new ArrayList<>();
        for (int i = start + 1; i < LINES.size() && !LINES.get(i).matches("^[a-z].*"); i++) {
            lines.add(LINES.get(i));
        }
        return lines;
    }

    private static List<String> read() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path file = dir.resolve("catalogue").resolve("catalogue.yaml");
            if (Files.isRegularFile(file)) {
                try {
                    return Files.readAllLines(file);
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        throw new IllegalStateException("catalogue/catalogue.yaml not found above " + Path.of("").toAbsolutePath());
    }
}
