package io.acemq.peer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The adapter's table from catalogue names to policy knobs, exactly as
 * catalogue/catalogue.yaml gives them: each mutant's side and {@code policy}, and each
 * profile's {@code peers.java} settings. The binding never sees these names, only policies
 * (through {@link io.acemq.PeerPolicies}). CatalogueTest checks this table against the file.
 */
final class Catalogue {
    /** Where a mutant acts: requester and gatherer mutants on requester.open, responder ones on responder.start. */
    enum Side { REQUESTER, GATHERER, RESPONDER }

    record Mutant(String name, Side side, Map<String, Object> knobs) {
        boolean actsOnRequester() {
            return side != Side.RESPONDER;
        }
    }

    /** A release's settings: requester knobs and responder knobs. */
    record Profile(String name, Map<String, Object> requester, Map<String, Object> responder) {
    }

    static final Map<String, Mutant> MUTANTS = index(List.of(
            mutant("native-only", Side.REQUESTER, Map.of("write_header_address", false)),
            mutant("header-bytes", Side.REQUESTER, Map.of("header_address_as_bytes", true)),
            mutant("queue-per-request", Side.REQUESTER, Map.of("reply_queue_per_request", true)),
            mutant("late-reply-to-next", Side.REQUESTER, Map.of("match_replies_by", "oldest_waiter")),
            mutant("ignores-error-header", Side.REQUESTER, Map.of("read_error_header", false)),
            mutant("native-first", Side.RESPONDER, Map.of("read_order", List.of("native", "header"))),
            mutant("no-strip", Side.RESPONDER, Map.of("strip_engine_headers", false)),
            mutant("no-dlq-on-failure", Side.RESPONDER, Map.of("dead_letter_failures", false)),
            mutant("counts-failures", Side.RESPONDER, Map.of("count_failures_answered", true)),
            mutant("dead-letter-unanswerable", Side.RESPONDER, Map.of("unanswerable", "dead_letter")),
            mutant("no-rollback", Side.RESPONDER, Map.of("rollback_answered", false)),
            mutant("answered-after-publish", Side.RESPONDER, Map.of("answered_timing", "after_confirm")),
            mutant("counters-after-subscribe", Side.RESPONDER, Map.of("counters_created", "after_first_delivery")),
            mutant("gather-by-correlation-id", Side.GATHERER, Map.of("gather_demux_by", "correlation_id")),
            mutant("shortfall-resolves", Side.GATHERER, Map.of("gather_shortfall", "resolve")),
            mutant("implicit-queue-type", Side.REQUESTER, Map.of("explicit_reply_queue_type", false)),
            mutant("timeouts-not-counted", Side.REQUESTER, Map.of("count_timeouts", false)),
            mutant("ignores-returns", Side.REQUESTER, Map.of("honour_returns", false)),
            mutant("truncates-short-strings", Side.REQUESTER, Map.of("long_short_string", "truncate")),
            mutant("drops-undecodable", Side.REQUESTER, Map.of("undecodable_reply", "drop")),
            mutant("correlation-from-correlation-id", Side.RESPONDER, Map.of("reply_correlation_from", "correlation_id")),
            mutant("acks-undeliverable", Side.RESPONDER, Map.of("undeliverable_reply", "ack")),
            mutant("classic-dlq", Side.RESPONDER, Map.of("dlq_queue_type", "classic")),
            mutant("no-response-message-id", Side.RESPONDER, Map.of("response_message_id", false)),
            mutant("strict-header-types", Side.RESPONDER, Map.of("header_types", "strict")),
            mutant("copies-distinct-ids", Side.GATHERER, Map.of("gather_copy_ids", "distinct")),
            mutant("multi-one-copy", Side.GATHERER, Map.of("multi_copies", "one")),
            mutant("no-early-resolve", Side.GATHERER, Map.of("gather_resolves_early", false)),
            mutant("no-count-means-one", Side.GATHERER, Map.of("gather_missing_count", "one")),
            mutant("stray-reply-to-oldest-gather", Side.GATHERER, Map.of("gather_stray_reply", "oldest_gather")),
            // Issue 12: the spec's defaults and its new decisions.
            mutant("default-timeout-10s", Side.REQUESTER, Map.of("default_timeout_ms", 10000)),
            mutant("default-attempts-5", Side.RESPONDER, Map.of("default_max_attempts", 5)),
            mutant("attempt-from-zero", Side.RESPONDER, Map.of("attempt_base", 0)),
            mutant("gather-no-default-correlation", Side.GATHERER, Map.of("gather_default_correlation", "none")),
            mutant("gather-timeouts-counted", Side.GATHERER, Map.of("count_gather_timeouts", true)),
            mutant("close-abandons-pending", Side.REQUESTER, Map.of("pending_at_close", "wait")),
            mutant("gather-ignores-returns", Side.GATHERER, Map.of("honour_gather_returns", false)),
            mutant("type-in-header", Side.REQUESTER, Map.of("type_carrier", "header")),
            mutant("failure-reply-unchecked", Side.RESPONDER, Map.of("failure_reply_delivery", "unchecked")),
            mutant("malformed-request-dropped", Side.RESPONDER, Map.of("malformed_request", "drop")),
            // A mutant for each asserted clause the ones above left without one.
            mutant("header-only-address", Side.REQUESTER, Map.of("write_native_address", false)),
            mutant("mismatched-addresses", Side.REQUESTER, Map.of("native_address", "stale")),
            mutant("empty-native-address", Side.REQUESTER, Map.of("native_address", "empty")),
            mutant("unmatched-not-counted", Side.REQUESTER, Map.of("count_unmatched", false)),
            mutant("unmatched-to-waiter", Side.REQUESTER, Map.of("unmatched_reply", "oldest_waiter")),
            mutant("timeout-as-null-reply", Side.REQUESTER, Map.of("timeout_outcome", "null_reply")),
            mutant("fails-on-unknown-headers", Side.REQUESTER, Map.of("unknown_reply_headers", "fail")),
            mutant("shared-reply-queue", Side.REQUESTER, Map.of("exclusive_reply_queue", false)),
            mutant("gather-unmatched-not-counted", Side.GATHERER, Map.of("count_gather_unmatched", false)),
            mutant("publish-twice", Side.GATHERER, Map.of("publish_copies", 2)),
            mutant("no-count-no-copy", Side.GATHERER, Map.of("multi_copies_without_count", 0)),
            mutant("header-only-reader", Side.RESPONDER, Map.of("read_order", List.of("header"))),
            mutant("ignores-bytes-address", Side.RESPONDER, Map.of("bytes_address", "ignore")),
            mutant("no-content-type", Side.RESPONDER, Map.of("reply_content_type", "none")),
            mutant("strips-x-headers", Side.RESPONDER, Map.of("strip_prefix", "x-")),
            mutant("failure-with-body", Side.RESPONDER, Map.of("failure_body", "json")),
            mutant("qualified-error-type", Side.RESPONDER, Map.of("error_type_name", "qualified")),
            mutant("retries-failures", Side.RESPONDER, Map.of("retry_failures", true)),
            mutant("unanswerable-not-counted", Side.RESPONDER, Map.of("count_unanswerable", false)),
            mutant("last-attempt-acked", Side.RESPONDER, Map.of("last_attempt", "ack")),
            mutant("classic-request-queue", Side.RESPONDER, Map.of("request_queue", "classic_if_missing")),
            // Upper bounds of the timeouts, failure replies to a gather, the spec's own headers.
            mutant("late-timeout", Side.REQUESTER, Map.of("request_deadline", "late")),
            mutant("budget-restarts-per-reply", Side.GATHERER, Map.of("gather_deadline", "restart_per_reply")),
            mutant("gather-keeps-failures", Side.GATHERER, Map.of("gather_failure_reply", "keep")),
            mutant("gather-failures-not-counted", Side.GATHERER, Map.of("count_gather_failures", false)),
            mutant("hides-acemq-headers", Side.RESPONDER, Map.of("pass_spec_headers", false))),
            Mutant::name);

    /**
     * Mutants the table has before catalogue/catalogue.yaml lists them: taken on
     * requester.open and responder.start, but not offered in hello, because the harness refuses
     * a peer offering a name its catalogue does not know. Empty once the catalogue has them
     * (CatalogueTest fails while a name is both here and in the catalogue).
     */
    static final Set<String> PENDING = Set.of();

    /**
     * Catalogue mutants marked {@code only_where} that this peer cannot have, with why: they are
     * neither in the table nor offered in hello, and their knobs are not the binding's.
     * CatalogueTest accepts a missing catalogue mutant only if it is here and marked so.
     */
    static final Map<String, String> UNOFFERABLE = Map.of(
            "narrow-int-header", "amqp-client 5.0.0 writes no unsigned field types (B, u, i): its"
                    + " ValueWriter maps Byte to b, Short to s, Integer to I");

    /** "current" is the spec; the rest are the catalogue's profiles that list java. */
    static final Map<String, Profile> PROFILES = index(List.of(
            new Profile("current", Map.of(), Map.of()),
            new Profile("0.5.0", Map.of(), Map.of()),
            new Profile("0.3.0", Map.of("write_header_address", false), Map.of("read_order", List.of("native")))),
            Profile::name);

    private Catalogue() {
    }

    /** The mutant named, {@code null} for none; an unknown name is refused with the valid ones. */
    static Mutant mutant(String name) {
        if (name == null) {
            return null;
        }
        Mutant mutant = MUTANTS.get(name);
        if (mutant == null) {
            throw new IllegalArgumentException("unknown mutant '" + name + "'; this peer has " + MUTANTS.keySet());
        }
        return mutant;
    }

    /** The profile named, "current" when absent; an unknown name is refused with the valid ones. */
    static Profile profile(String name) {
        Profile profile = PROFILES.get(name == null ? "current" : name);
        if (profile == null) {
            throw new IllegalArgumentException("unknown profile '" + name + "'; this peer has " + PROFILES.keySet());
        }
        return profile;
    }

    /** A requester's knobs: the profile's, then the mutant's when it acts on a requester. */
    static Map<String, Object> requesterKnobs(String profile, String mutant) {
        Profile release = profile(profile);
        Mutant defect = mutant(mutant);
        Map<String, Object> knobs = new LinkedHashMap<>(release.requester());
        if (defect != null && defect.actsOnRequester()) {
            knobs.putAll(defect.knobs());
        }
        return knobs;
    }

    /** A responder's knobs: the profile's, then the mutant's when it acts on a responder. */
    static Map<String, Object> responderKnobs(String profile, String mutant) {
        Profile release = profile(profile);
        Mutant defect = mutant(mutant);
        Map<String, Object> knobs = new LinkedHashMap<>(release.responder());
        if (defect != null && !defect.actsOnRequester()) {
            knobs.putAll(defect.knobs());
        }
        return knobs;
    }

    /** The mutants hello offers: every one the table has, but those the catalogue does not list yet. */
    static List<String> mutantNames() {
        List<String> names = new ArrayList<>(MUTANTS.keySet());
        names.removeAll(PENDING);
        return names;
    }

    static List<String> profileNames() {
        return new ArrayList<>(PROFILES.keySet());
    }

    private static Mutant mutant(String name, Side side, Map<String, Object> knobs) {
        return new Mutant(name, side, knobs);
    }

    private static <T> Map<String, T> index(List<T> entries, java.util.function.Function<T, String> name) {
        Map<String, T> byName = new LinkedHashMap<>();
        entries.forEach(entry -> byName.put(name.apply(entry), entry));
        return java.util.Collections.unmodifiableMap(byName);
    }
}
