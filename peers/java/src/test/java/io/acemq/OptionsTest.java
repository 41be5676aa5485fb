package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class OptionsTest {
    @Test
    void defaultsFollowTheSpec() {
        Options options = Options.defaults();
        assertEquals(Profile.CURRENT, options.profile());
        assertNull(options.mutant());
        assertEquals(Duration.ofSeconds(30), options.defaultTimeout());
        assertEquals(3, options.maxAttempts());
    }

    @Test
    void profilesAndMutantsGoByTheirCatalogueNames() {
        for (Profile profile : Profile.values()) {
            assertEquals(profile, Profile.fromWireName(profile.wireName()));
        }
        for (Mutant mutant : Mutant.values()) {
            assertEquals(mutant, Mutant.fromWireName(mutant.wireName()));
        }
        assertEquals(Profile.CURRENT, Profile.fromWireName(null));
        assertNull(Mutant.fromWireName(null));
        assertEquals(30, Mutant.values().length);
        assertThrows(IllegalArgumentException.class, () -> Profile.fromWireName("0.7.12"));
        assertThrows(IllegalArgumentException.class, () -> Mutant.fromWireName("nope"));
    }

    @Test
    void nonsenseIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Options.defaults().withMaxAttempts(0));
        assertThrows(IllegalArgumentException.class, () -> Options.defaults().withDefaultTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> GatherOptions.within(Duration.ofSeconds(1)).expecting(0));
    }
}
