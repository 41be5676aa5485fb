# frozen_string_literal: true

module Acemq
  # A released behaviour the binding can reproduce (the wire spec's profile table).
  Profile = Struct.new(:name, :write_header, :write_native, :read_order, keyword_init: true) do
    def self.fetch(name)
      PROFILES.fetch(name || "current") { raise ConfigurationError, "unknown profile #{name.inspect}" }
    end
  end

  BOTH = { write_header: true, write_native: true, read_order: %i[header native].freeze }.freeze

  # Ruby's history: up to 0.3.0 only the header; since 0.5.0 both, header first.
  PROFILES = {
    "current" => Profile.new(name: "current", **BOTH),
    "0.7.12" => Profile.new(name: "0.7.12", **BOTH),
    "0.5.0" => Profile.new(name: "0.5.0", **BOTH),
    "0.3.0" => Profile.new(name: "0.3.0", write_header: true, write_native: false,
                           read_order: %i[header].freeze)
  }.freeze

  # Named deliberate defects (the wire spec's mutant catalogue), by the side they act on.
  module Mutants
    # Gatherer mutants act on a requester's gathers, so they are given to the requester.
    REQUESTER = %w[
      native-only header-bytes queue-per-request late-reply-to-next ignores-error-header
      gather-by-correlation-id shortfall-resolves
      implicit-queue-type timeouts-not-counted ignores-returns truncates-short-strings drops-undecodable
      copies-distinct-ids multi-one-copy no-early-resolve no-count-means-one stray-reply-to-oldest-gather
    ].freeze
    RESPONDER = %w[
      native-first no-strip no-dlq-on-failure counts-failures dead-letter-unanswerable
      no-rollback answered-after-publish counters-after-subscribe
      correlation-from-correlation-id acks-undeliverable classic-dlq no-response-message-id
      strict-header-types
    ].freeze
    ALL = (REQUESTER + RESPONDER).freeze

    module_function

    def check!(name, side)
      return nil if name.nil?

      allowed = side == :requester ? REQUESTER : RESPONDER
      return name if allowed.include?(name)

      raise ConfigurationError, ALL.include?(name) ? "mutant #{name} does not act on a #{side}" : "unknown mutant #{name.inspect}"
    end
  end
end
