package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonPrimitive;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

class GatherTest {
    private static final JsonElement A = new JsonPrimitive("a");
    private static final JsonElement B = new JsonPrimitive("b");

    @Test
    void resolvesAsSoonAsTheCountIsReached() throws Exception {
        Gather gather = new Gather("m", 2, RequesterPolicy.SPEC, null);
        assertTrue(gather.offer(A));
        assertFalse(gather.isDone());
        assertTrue(gather.offer(B));
        assertEquals(List.of(A, B), gather.result().getNow(null));
    }

    @Test
    void aShortfallRejectsWithThePartialReplies() {
        Gather gather = new Gather("m", 3, RequesterPolicy.SPEC, null);
        gather.offer(A);
        gather.offer(B);
        gather.expire();
        ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> gather.result().get());
        RequestTimeoutException shortfall = assertInstanceOf(RequestTimeoutException.class, error.getCause());
        assertEquals(List.of(A, B), shortfall.getPartialReplies());
    }

    @Test
    void withoutACountItResolvesAtTheTimeoutWithWhateverArrived() throws Exception {
        Gather gather = new Gather("m", null, RequesterPolicy.SPEC, null);
        gather.offer(A);
        gather.offer(B);
        assertFalse(gather.isDone());
        gather.expire();
        assertEquals(List.of(A, B), gather.result().get());

        Gather empty = new Gather("e", null, RequesterPolicy.SPEC, null);
        empty.expire();
        assertEquals(List.of(), empty.result().get());
    }

    @Test
    void repliesAfterTheEndAreRefused() {
        Gather gather = new Gather("m", 1, RequesterPolicy.SPEC, null);
        assertTrue(gather.offer(A));
        assertFalse(gather.offer(B));
        gather.expire();
        assertEquals(List.of(A), gather.result().getNow(null));
    }

    @Test
    void onReplySeesEachReplyInArrivalOrder() {
        List<JsonElement> seen = new ArrayList<>();
        Gather gather = new Gather("m", 2, RequesterPolicy.SPEC, seen::add);
        gather.offer(B);
        gather.offer(A);
        assertEquals(List.of(B, A), seen);
    }

    @Test
    void shortfallResolvesMutantResolvesWithThePartialReplies() throws Exception {
        Gather gather = new Gather("m", 3, policy("gather_shortfall", "resolve"), null);
        gather.offer(A);
        gather.expire();
        assertEquals(List.of(A), gather.result().get());
    }

    @Test
    void noEarlyResolveMutantWaitsForTheTimeoutThenResolves() throws Exception {
        Gather gather = new Gather("m", 2, policy("gather_resolves_early", false), null);
        assertTrue(gather.offer(A));
        assertTrue(gather.offer(B));
        assertFalse(gather.isDone());
        // The gather is full: a third reply is as Unmatched as it would be after resolving.
        assertFalse(gather.offer(A));
        gather.expire();
        assertEquals(List.of(A, B), gather.result().get());
    }

    @Test
    void noEarlyResolveMutantStillRejectsAShortfall() {
        Gather gather = new Gather("m", 2, policy("gather_resolves_early", false), null);
        gather.offer(A);
        gather.expire();
        ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> gather.result().get());
        assertInstanceOf(RequestTimeoutException.class, error.getCause());
    }

    @Test
    void noCountMeansOneMutantResolvesAtTheFirstReplyAndRejectsWithNone() {
        Gather gather = new Gather("m", null, policy("gather_missing_count", "one"), null);
        assertTrue(gather.offer(A));
        assertEquals(List.of(A), gather.result().getNow(null));

        Gather empty = new Gather("e", null, policy("gather_missing_count", "one"), null);
        empty.expire();
        ExecutionException error = org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> empty.result().get());
        RequestTimeoutException shortfall = assertInstanceOf(RequestTimeoutException.class, error.getCause());
        assertEquals(List.of(), shortfall.getPartialReplies());
    }

    @Test
    void noEarlyResolveMutantLeavesAGatherWithoutACountAlone() throws Exception {
        Gather gather = new Gather("m", null, policy("gather_resolves_early", false), null);
        gather.offer(A);
        assertFalse(gather.isDone());
        gather.expire();
        assertEquals(List.of(A), gather.result().get());
    }

    private static RequesterPolicy policy(String knob, Object value) {
        return PolicyKnobs.resolve(RequesterPolicy.SPEC, java.util.Map.of(knob, value), null);
    }
}
