# frozen_string_literal: true

module Acemq
  # The knobs a requester or responder resolves once, when it is opened: one field per
  # wire rule a binding could get wrong, each defaulting to what docs/wire-spec.md says.
  # The main code paths read these fields and nothing else.
  #
  # Private: a service never builds a policy. Both types are private constants of Acemq;
  # only acemq/_internal (required by the conformance adapter, never by "acemq") hands
  # them out, with the requester and responder that accept one.
  module PolicyFields
    # Builds a frozen policy from keyword fields; an unknown field or a value outside a
    # field's choices is an ArgumentError, so a typo never passes as the default.
    def self.included(type)
      type.extend(ClassMethods)
    end

    module ClassMethods
      def choices = self::CHOICES

      def build(**fields)
        unknown = fields.keys - members
        raise ArgumentError, "#{name}: no field #{unknown.join(', ')} (fields: #{members.join(', ')})" if unknown.any?

        new(**self::DEFAULT.to_h, **fields).tap(&:validate!).freeze
      end
    end

    def validate!
      self.class.choices.each do |field, allowed|
        value = self[field]
        ok = allowed.is_a?(Proc) ? allowed.call(value) : allowed.include?(value)
        raise ArgumentError, "#{self.class.name}: #{field} cannot be #{value.inspect}" unless ok
      end
    end

    # The fields that differ from the default, for logs.
    def changes = to_h.reject { |field, value| self.class::DEFAULT[field] == value }
  end

  BOOLEAN = [true, false].freeze
  POSITIVE_INTEGER = ->(value) { value.is_a?(Integer) && value.positive? }

  RequesterPolicy = Struct.new(
    :write_header_address,      # RR-1: the reply address in acemq-reply-to
    :write_native_address,      # RR-1: the reply address in reply_to
    :header_address_as_bytes,   # RR-2: acemq-reply-to as a byte array instead of a long string
    :reply_queue_per_request,   # RR-6: a reply queue per request and gather
    :explicit_reply_queue_type, # RR-7: x-queue-type classic on the reply queue
    :match_replies_by,          # RR-8: :correlation_id or :oldest_waiter
    :count_timeouts,            # RR-9: a timed-out call counts in timed_out
    :read_error_header,         # RR-10: acemq-error is looked at before decoding
    :honour_returns,            # RR-13: basic.return of a request ends it as refused
    :long_short_string,         # RR-18: :refuse or :truncate
    :undecodable_reply,         # RR-19: :decode_error or :drop
    :gather_copy_ids,           # SG-1: :shared or :distinct message ids of the copies
    :multi_copies,              # SG-2: :expected_count or :one copy
    :gather_demux_by,           # SG-4: :response_message_id or :correlation_id
    :gather_resolves_early,     # SG-5: resolve as soon as the count is reached
    :gather_shortfall,          # SG-6: :reject or :resolve
    :gather_missing_count,      # SG-7: :budget (wait the timeout) or :one
    :gather_stray_reply,        # SG-8: :unmatched or :oldest_gather
    :default_timeout_ms,        # RR-9: the timeout of a call given none
    :gather_default_correlation, # SG-1: a gather's correlation_id when none is given: :request_message_id or :none
    :count_gather_timeouts,     # RR-9: a gather ending at its timeout counts in timed_out (only requests do)
    :pending_at_close,          # close: :end_closed (pending calls end at once) or :wait (they wait out their timeout)
    :honour_gather_returns,     # RR-13: basic.return of a gather's publish ends the gather as refused
    :type_carrier,              # the type argument travels as the AMQP :property or an application :header
    :native_address,            # RR-1, RR-3: reply_to holds the :reply_queue, its name plus ".stale", or an :empty string
    :count_unmatched,           # RR-8: a reply that finds no pending call counts in unmatched
    :unmatched_reply,           # RR-8: a reply that finds no pending call is :drop-ped or given to the :oldest_waiter
    :timeout_outcome,           # RR-9: a request not answered in time ends as a :timeout or a :null_reply
    :unknown_reply_headers,     # RR-5: a reply header other than acemq-error, responseMessageId and x-...: :ignore or :fail
    :exclusive_reply_queue,     # RR-7: the reply queue is declared exclusive
    :count_gather_unmatched,    # SG-8: a gather reply for no pending gather counts in unmatched
    :publish_copies,            # SG-2: messages publish_request publishes (1, or 2)
    :multi_copies_without_count, # SG-2: copies send_request_multi publishes given no expected count (1, or 0)
    :request_deadline,          # RR-9: a request not answered gives up at its :timeout, or half a timeout :late
    :gather_deadline,           # SG-9: a gather's timeout is :fixed, or starts again at every reply it keeps (:restart_per_reply)
    :gather_failure_reply,      # SG-10: a failure reply for a pending gather is :drop-ped (Unmatched), or kept as a nil reply (:keep)
    :count_gather_failures,     # SG-10: a failure reply a gather dropped counts in unmatched
    :request_correlation_id,    # RR-8: a request's correlation_id is its :message_id, or :none
    :on_connection_lost,        # RR-20: a call pending when the connection is lost ends at once (:end_lost), or waits out its timeout (:wait)
    :recover_connection,        # RR-20: the session recovers after a lost connection, and a new reply queue is consumed
    keyword_init: true
  ) do
    include PolicyFields
  end

  RequesterPolicy::DEFAULT = RequesterPolicy.new(
    write_header_address: true, write_native_address: true, header_address_as_bytes: false,
    reply_queue_per_request: false, explicit_reply_queue_type: true, match_replies_by: :correlation_id,
    count_timeouts: true, read_error_header: true, honour_returns: true, long_short_string: :refuse,
    undecodable_reply: :decode_error, gather_copy_ids: :shared, multi_copies: :expected_count,
    gather_demux_by: :response_message_id, gather_resolves_early: true, gather_shortfall: :reject,
    gather_missing_count: :budget, gather_stray_reply: :unmatched, default_timeout_ms: 30_000,
    gather_default_correlation: :request_message_id, count_gather_timeouts: false, pending_at_close: :end_closed,
    honour_gather_returns: true, type_carrier: :property, native_address: :reply_queue, count_unmatched: true,
    unmatched_reply: :drop, timeout_outcome: :timeout, unknown_reply_headers: :ignore, exclusive_reply_queue: true,
    count_gather_unmatched: true, publish_copies: 1, multi_copies_without_count: 1, request_deadline: :timeout,
    gather_deadline: :fixed, gather_failure_reply: :drop, count_gather_failures: true,
    request_correlation_id: :message_id, on_connection_lost: :end_lost, recover_connection: true
  ).freeze

  RequesterPolicy::CHOICES = {
    write_header_address: BOOLEAN, write_native_address: BOOLEAN, header_address_as_bytes: BOOLEAN,
    reply_queue_per_request: BOOLEAN, explicit_reply_queue_type: BOOLEAN,
    match_replies_by: %i[correlation_id oldest_waiter], count_timeouts: BOOLEAN, read_error_header: BOOLEAN,
    honour_returns: BOOLEAN, long_short_string: %i[refuse truncate], undecodable_reply: %i[decode_error drop],
    gather_copy_ids: %i[shared distinct], multi_copies: %i[expected_count one],
    gather_demux_by: %i[response_message_id correlation_id], gather_resolves_early: BOOLEAN,
    gather_shortfall: %i[reject resolve], gather_missing_count: %i[budget one copies],
    gather_stray_reply: %i[unmatched oldest_gather], default_timeout_ms: POSITIVE_INTEGER,
    gather_default_correlation: %i[request_message_id none], count_gather_timeouts: BOOLEAN,
    pending_at_close: %i[end_closed wait], honour_gather_returns: BOOLEAN, type_carrier: %i[property header],
    native_address: %i[reply_queue stale empty], count_unmatched: BOOLEAN, unmatched_reply: %i[drop oldest_waiter],
    timeout_outcome: %i[timeout null_reply], unknown_reply_headers: %i[ignore fail], exclusive_reply_queue: BOOLEAN,
    count_gather_unmatched: BOOLEAN, publish_copies: [1, 2], multi_copies_without_count: [1, 0],
    request_deadline: %i[timeout late], gather_deadline: %i[fixed restart_per_reply],
    gather_failure_reply: %i[drop keep], count_gather_failures: BOOLEAN,
    request_correlation_id: %i[message_id none], on_connection_lost: %i[end_lost wait], recover_connection: BOOLEAN
  }.freeze

  ResponderPolicy = Struct.new(
    :read_order,              # RR-3: where the reply address is read, in order (:header, :native)
    :reply_correlation_from,  # RR-4: :request_id (message_id, else correlation_id), :message_id or :correlation_id
    :strip_engine_headers,    # RR-5: x-acemq-* removed before the handler
    :handler_failure,         # RR-10: :error_reply, or :retry (no reply; requeue, then the DLQ)
    :dead_letter_failures,    # RR-11: a failed request goes to {queue}.dlq
    :count_failures_answered, # RR-11: a failure reply counts in answered
    :unanswerable,            # RR-12: :accept or :dead_letter
    :undeliverable_reply,     # RR-14: :requeue or :ack
    :answered_timing,         # RR-15: counted :before_publish, or only once the reply is confirmed (:after_confirm)
    :rollback_answered,       # RR-15: answered taken back when the reply publish fails
    :counters_created,        # RR-16: :before_subscribe or :after_first_delivery
    :dlq_queue_type,          # RR-17: :quorum or :classic
    :response_message_id,     # SG-3: responseMessageId on replies
    :header_types,            # WF-1: :lenient or :strict
    :default_max_attempts,    # RR-14: the attempts of a responder given no max_attempts
    :attempt_base,            # RR-14: the attempt number is x-delivery-count + this (absent: 0 + this)
    :failure_reply_delivery,  # RR-14: a failure reply's publish is :checked (returned: retry) or :unchecked
    :malformed_request,       # a body that is not JSON: :fail_reply (MalformedRequest, then the DLQ), :drop or :reply_only (no DLQ)
    :dead_letter_copy,        # RR-11: the dead-letter copy keeps the request's properties (:full) or :id_and_headers only
    :bytes_address,           # RR-2: an acemq-reply-to byte array is read as UTF-8 (:accept) or taken as absent (:ignore)
    :reply_content_type,      # RR-4: a reply's content_type, :"application/json" or :none
    :strip_prefix,            # RR-5: the header prefix removed before the handler, :"x-acemq-" or :"x-"
    :failure_body,            # RR-10: a failure reply's body, :empty or :json ({"error": the acemq-error text})
    :error_type_name,         # RR-10: the ExceptionType in acemq-error, :simple or :qualified
    :retry_failures,          # RR-11: after a failure reply, requeue until the last attempt, then dead-letter
    :count_unanswerable,      # RR-12: a request with no reply address counts in unanswerable
    :request_queue,           # RR-17: :quorum, or :classic_if_missing (passive first; classic when missing)
    :pass_spec_headers,       # RR-5: the handler sees acemq-* headers (acemq-reply-to among them)
    :last_attempt,            # RR-14: the last attempt at an undeliverable reply: :dead_letter or :ack
    :direct_reply_to,         # RR-14: a reply to amq.rabbitmq.reply-to.*: :at_most_once, or :checked like any reply
    :recover_connection,      # RR-20: the session recovers after a lost connection: queues declared and consumed again
    :ack_timing,              # RR-20: a request is acked :after_handling (as RR-14 settles it), or :on_delivery
    keyword_init: true
  ) do
    include PolicyFields
  end

  ResponderPolicy::DEFAULT = ResponderPolicy.new(
    read_order: %i[header native].freeze, reply_correlation_from: :request_id, strip_engine_headers: true,
    handler_failure: :error_reply, dead_letter_failures: true, count_failures_answered: false,
    unanswerable: :accept, undeliverable_reply: :requeue, answered_timing: :before_publish,
    rollback_answered: true, counters_created: :before_subscribe, dlq_queue_type: :quorum,
    response_message_id: true, header_types: :lenient, default_max_attempts: Headers::DEFAULT_MAX_ATTEMPTS,
    attempt_base: 1, failure_reply_delivery: :checked, malformed_request: :fail_reply, dead_letter_copy: :full,
    bytes_address: :accept,
    reply_content_type: :"application/json", strip_prefix: :"x-acemq-", failure_body: :empty,
    error_type_name: :simple, retry_failures: false, count_unanswerable: true, request_queue: :quorum,
    pass_spec_headers: true, last_attempt: :dead_letter, direct_reply_to: :at_most_once,
    recover_connection: true, ack_timing: :after_handling
  ).freeze

  ResponderPolicy::CHOICES = {
    read_order: ->(order) { order.is_a?(Array) && !order.empty? && (order - %i[header native]).empty? && order.uniq == order },
    reply_correlation_from: %i[request_id message_id correlation_id], strip_engine_headers: BOOLEAN,
    handler_failure: %i[error_reply retry], dead_letter_failures: BOOLEAN, count_failures_answered: BOOLEAN,
    unanswerable: %i[accept dead_letter], undeliverable_reply: %i[requeue ack],
    answered_timing: %i[before_publish after_confirm],
    rollback_answered: BOOLEAN, counters_created: %i[before_subscribe after_first_delivery],
    dlq_queue_type: %i[quorum classic], response_message_id: BOOLEAN, header_types: %i[lenient strict],
    default_max_attempts: POSITIVE_INTEGER, attempt_base: [1, 0], failure_reply_delivery: %i[checked unchecked],
    malformed_request: %i[fail_reply drop reply_only], dead_letter_copy: %i[full id_and_headers],
    bytes_address: %i[accept ignore],
    reply_content_type: %i[application/json none], strip_prefix: %i[x-acemq- x-], failure_body: %i[empty json],
    error_type_name: %i[simple qualified], retry_failures: BOOLEAN, count_unanswerable: BOOLEAN,
    request_queue: %i[quorum classic_if_missing], pass_spec_headers: BOOLEAN, last_attempt: %i[dead_letter ack],
    direct_reply_to: %i[at_most_once checked], recover_connection: BOOLEAN, ack_timing: %i[after_handling on_delivery]
  }.freeze

  private_constant :PolicyFields, :BOOLEAN, :POSITIVE_INTEGER, :RequesterPolicy, :ResponderPolicy
end
