# frozen_string_literal: true

require "acemq/_internal"

module AcemqPeer
  # The catalogue's names (catalogue/catalogue.yaml) as this binding's policies: every
  # mutant's side and policy values, and the profiles the catalogue lists for `ruby`.
  # Kept as code so the peer needs no file at run time; test/catalogue_test.rb checks it
  # against the catalogue, name by name and value by value.
  module Catalogue
    RequesterPolicy = Acemq::Internal::RequesterPolicy
    ResponderPolicy = Acemq::Internal::ResponderPolicy

    # name => [side, policy fields]. Gatherer mutants act on a requester's gathers.
    # Not offered: narrow-int-header (only where the client can write B, u or i: Bunny's
    # table encoder writes every Integer as a signed 64-bit `l`).
    MUTANTS = {
      "native-only" => [:requester, { write_header_address: false }],
      "header-bytes" => [:requester, { header_address_as_bytes: true }],
      "queue-per-request" => [:requester, { reply_queue_per_request: true }],
      "late-reply-to-next" => [:requester, { match_replies_by: :oldest_waiter }],
      "ignores-error-header" => [:requester, { read_error_header: false }],
      "native-first" => [:responder, { read_order: %i[native header] }],
      "no-strip" => [:responder, { strip_engine_headers: false }],
      "no-dlq-on-failure" => [:responder, { dead_letter_failures: false }],
      "counts-failures" => [:responder, { count_failures_answered: true }],
      "dead-letter-unanswerable" => [:responder, { unanswerable: :dead_letter }],
      "no-rollback" => [:responder, { rollback_answered: false }],
      "answered-after-publish" => [:responder, { answered_timing: :after_confirm }],
      "counters-after-subscribe" => [:responder, { counters_created: :after_first_delivery }],
      "gather-by-correlation-id" => [:gatherer, { gather_demux_by: :correlation_id }],
      "shortfall-resolves" => [:gatherer, { gather_shortfall: :resolve }],
      "implicit-queue-type" => [:requester, { explicit_reply_queue_type: false }],
      "timeouts-not-counted" => [:requester, { count_timeouts: false }],
      "ignores-returns" => [:requester, { honour_returns: false }],
      "truncates-short-strings" => [:requester, { long_short_string: :truncate }],
      "drops-undecodable" => [:requester, { undecodable_reply: :drop }],
      "correlation-from-correlation-id" => [:responder, { reply_correlation_from: :correlation_id }],
      "acks-undeliverable" => [:responder, { undeliverable_reply: :ack }],
      "classic-dlq" => [:responder, { dlq_queue_type: :classic }],
      "no-response-message-id" => [:responder, { response_message_id: false }],
      "strict-header-types" => [:responder, { header_types: :strict }],
      "copies-distinct-ids" => [:gatherer, { gather_copy_ids: :distinct }],
      "multi-one-copy" => [:gatherer, { multi_copies: :one }],
      "no-early-resolve" => [:gatherer, { gather_resolves_early: false }],
      "no-count-means-one" => [:gatherer, { gather_missing_count: :one }],
      "stray-reply-to-oldest-gather" => [:gatherer, { gather_stray_reply: :oldest_gather }],
      "default-timeout-10s" => [:requester, { default_timeout_ms: 10_000 }],
      "default-attempts-5" => [:responder, { default_max_attempts: 5 }],
      "attempt-from-zero" => [:responder, { attempt_base: 0 }],
      "gather-no-default-correlation" => [:gatherer, { gather_default_correlation: :none }],
      "gather-timeouts-counted" => [:gatherer, { count_gather_timeouts: true }],
      "close-abandons-pending" => [:requester, { pending_at_close: :wait }],
      "gather-ignores-returns" => [:gatherer, { honour_gather_returns: false }],
      "type-in-header" => [:requester, { type_carrier: :header }],
      "failure-reply-unchecked" => [:responder, { failure_reply_delivery: :unchecked }],
      "malformed-request-dropped" => [:responder, { malformed_request: :drop }],
      "header-only-address" => [:requester, { write_native_address: false }],
      "mismatched-addresses" => [:requester, { native_address: :stale }],
      "empty-native-address" => [:requester, { native_address: :empty }],
      "unmatched-not-counted" => [:requester, { count_unmatched: false }],
      "unmatched-to-waiter" => [:requester, { unmatched_reply: :oldest_waiter }],
      "timeout-as-null-reply" => [:requester, { timeout_outcome: :null_reply }],
      "fails-on-unknown-headers" => [:requester, { unknown_reply_headers: :fail }],
      "shared-reply-queue" => [:requester, { exclusive_reply_queue: false }],
      "gather-unmatched-not-counted" => [:gatherer, { count_gather_unmatched: false }],
      "publish-twice" => [:gatherer, { publish_copies: 2 }],
      "no-count-no-copy" => [:gatherer, { multi_copies_without_count: 0 }],
      "header-only-reader" => [:responder, { read_order: %i[header] }],
      "ignores-bytes-address" => [:responder, { bytes_address: :ignore }],
      "no-content-type" => [:responder, { reply_content_type: :none }],
      "strips-x-headers" => [:responder, { strip_prefix: :"x-" }],
      "failure-with-body" => [:responder, { failure_body: :json }],
      "qualified-error-type" => [:responder, { error_type_name: :qualified }],
      "retries-failures" => [:responder, { retry_failures: true }],
      "unanswerable-not-counted" => [:responder, { count_unanswerable: false }],
      "last-attempt-acked" => [:responder, { last_attempt: :ack }],
      "classic-request-queue" => [:responder, { request_queue: :classic_if_missing }],
      "late-timeout" => [:requester, { request_deadline: :late }],
      "budget-restarts-per-reply" => [:gatherer, { gather_deadline: :restart_per_reply }],
      "gather-keeps-failures" => [:gatherer, { gather_failure_reply: :keep }],
      "gather-failures-not-counted" => [:gatherer, { count_gather_failures: false }],
      "hides-acemq-headers" => [:responder, { pass_spec_headers: false }]
    }.freeze

    # profile => { requester: fields, responder: fields }; "current" is every default.
    # Ruby's history: up to 0.3.0 only the header; since 0.5.0 both, header first.
    PROFILES = {
      "current" => {},
      "0.7.12" => {},
      "0.5.0" => {},
      "0.3.0" => { requester: { write_native_address: false }, responder: { read_order: %i[header] } }
    }.freeze

    # The catalogue's sides for each end a peer opens.
    SIDES = { requester: %i[requester gatherer], responder: %i[responder] }.freeze

    module_function

    def mutants = MUTANTS.keys
    def profiles = PROFILES.keys

    def requester_policy(profile, mutant, log: nil)
      RequesterPolicy.build(**fields(:requester, profile, mutant, log))
    end

    def responder_policy(profile, mutant, log: nil)
      ResponderPolicy.build(**fields(:responder, profile, mutant, log))
    end

    # The profile's fields for that end, then the mutant's when it acts on that end. An
    # unknown name is an ArgumentError naming the valid ones (a typo is never "current").
    def fields(end_name, profile, mutant, log)
      profile ||= "current"
      settings = PROFILES.fetch(profile) do
        raise ArgumentError, "unknown profile #{profile.inspect}; this peer has #{profiles.join(', ')}"
      end
      out = settings.fetch(end_name, {}).dup
      return out if mutant.nil?

      side, policy = MUTANTS.fetch(mutant) do
        raise ArgumentError, "unknown mutant #{mutant.inspect}; the catalogue's mutants are #{mutants.join(', ')}"
      end
      if SIDES.fetch(end_name).include?(side)
        out.merge(policy)
      else
        # A peer spec such as ruby+no-strip may fill both roles of a cell.
        log&.info("mutant #{mutant} acts on a #{side}: a #{end_name} runs as current")
        out
      end
    end
  end
end
