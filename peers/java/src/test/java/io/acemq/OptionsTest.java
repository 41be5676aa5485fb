package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OptionsTest {
    @Test
    void defaultsFollowTheSpec() {
        Options options = Options.defaults();
        assertEquals(Duration.ofSeconds(30), options.defaultTimeout());
        assertEquals(3, options.maxAttempts());
    }

    @Test
    void nonsenseIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Options.defaults().withMaxAttempts(0));
        assertThrows(IllegalArgumentException.class, () -> Options.defaults().withDefaultTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> GatherOptions.within(Duration.ofSeconds(1)).expecting(0));
    }

    @Test
    void knobsMapMechanicallyOntoPolicyFields() {
        RequesterPolicy requester = PolicyKnobs.resolve(RequesterPolicy.SPEC,
                Map.of("match_replies_by", "oldest_waiter", "write_header_address", false));
        assertEquals(RequesterPolicy.MatchRepliesBy.OLDEST_WAITER, requester.matchRepliesBy());
        assertEquals(false, requester.writeHeaderAddress());
        assertEquals(RequesterPolicy.SPEC, PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of()));

        ResponderPolicy responder = PolicyKnobs.resolve(ResponderPolicy.SPEC,
                Map.of("read_order", List.of("native"), "answered_timing", "after_confirm"));
        assertEquals(List.of(ReplyAddress.Source.NATIVE), responder.readOrder());
        assertEquals(ResponderPolicy.AnsweredTiming.AFTER_CONFIRM, responder.answeredTiming());

        assertThrows(IllegalArgumentException.class,
                () -> PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("no_such_knob", true)));
        assertThrows(IllegalArgumentException.class,
                () -> PolicyKnobs.resolve(RequesterPolicy.SPEC, Map.of("match_replies_by", "nobody")));
    }
}
