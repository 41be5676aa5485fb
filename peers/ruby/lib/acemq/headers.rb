# frozen_string_literal: true

module Acemq
  # Wire names and the pure rules for reading and writing them.
  module Headers
    REPLY_TO = "acemq-reply-to"
    ERROR = "acemq-error"
    DEAD_LETTER_REASON = "acemq-dead-letter-reason"
    RESPONSE_MESSAGE_ID = "responseMessageId"
    # RabbitMQ's direct reply-to: the broker gives a responder reply_to amq.rabbitmq.reply-to.<token>.
    DIRECT_REPLY_TO_PREFIX = "amq.rabbitmq.reply-to."
    DELIVERY_COUNT = "x-delivery-count"
    PRIVATE_PREFIX = "x-acemq-"
    SPEC_PREFIX = "acemq-"
    CONTENT_TYPE = "application/json"
    SHORT_STRING_LIMIT = 255
    DEFAULT_MAX_ATTEMPTS = 3
    UNDELIVERABLE_REPLY = "UndeliverableReply: "
    SHORT_STRING_PROPERTIES = %i[message_id correlation_id reply_to type].freeze
    STRICT_REJECTS = [TrueClass, FalseClass, Float, Hash, Array].freeze

    module_function

    # Bunny hands back every string (keys, long strings, byte arrays, properties) as
    # ASCII-8BIT; the spec's strings are UTF-8 whichever of S or x carried them (RR-2).
    def text(value)
      return nil unless value.is_a?(String)

      value.dup.force_encoding(Encoding::UTF_8).scrub
    end

    # Empty and absent mean the same (RR-3).
    def present_text(value)
      s = text(value)
      s.nil? || s.empty? ? nil : s
    end

    # Headers with UTF-8 keys; values untouched, since unknown ones are never compared (WF-1).
    def normalize(headers)
      (headers || {}).each_with_object({}) { |(k, v), out| out[text(k.to_s)] = v }
    end

    # What a handler may see: everything outside the x-acemq- namespace (RR-5). Another
    # prefix is only ever a non-default policy's.
    def strip_private(headers, prefix = PRIVATE_PREFIX)
      headers.reject { |name, _| name.start_with?(prefix) }
    end

    # RR-14.3: the quorum queue counts deliveries; amq-protocol decodes every AMQP integer
    # type (b, s, I, l) to an Integer. Anything else, or a negative count, is none (0 or
    # absent: the first delivery, by broker version). The attempt is the count plus base
    # (1: the spec's numbering).
    def attempt(headers, base = 1)
      count = headers[DELIVERY_COUNT]
      (count.is_a?(Integer) && !count.negative? ? count : 0) + base
    end

    # RR-14.2: after a reply publish failed on attempt N, :requeue or :dead_letter.
    # RR-4.2, SG-3.1: a request's id is its message_id, or its correlation_id when it has none
    # (the tutorial's callers, the Java RpcClient).
    def request_id(message_id, correlation_id)
      message_id.nil? || message_id.empty? ? correlation_id : message_id
    end

    def retry_decision(attempt, max_attempts = DEFAULT_MAX_ATTEMPTS)
      attempt < max_attempts ? :requeue : :dead_letter
    end

    # The reply address and where it came from (:header or :native), in the order given.
    def reply_address(headers, native, order)
      order.each do |source|
        value = source == :header ? present_text(headers[REPLY_TO]) : present_text(native)
        return [value, source] if value
      end
      [nil, nil]
    end

    # RR-10: "{ExceptionType}: {message}" with the unqualified type name. qualified: the
    # Ruby name with its modules (Module::Class), what RR-10.2 forbids (only a non-default
    # policy asks for it).
    def failure_text(error, qualified: false)
      return "#{error.class.name || 'Error'}: #{error.message}" if qualified

      failure_text_from(error.class.name || "Error", error.message)
    end

    # RR-10.2 from a type name as any language spells it: the part after the last ".",
    # "::", "/" or "$", without a leading "*" or "&" (Go's pointer marks).
    def failure_text_from(type_name, message)
      type = type_name.to_s.split(%r{::|[./$]}).last.to_s.sub(/\A[*&]+/, "")
      "#{type.empty? ? 'Error' : type}: #{message}"
    end

    # RR-18: amq-protocol would raise a RangeError mid-frame or (other clients) truncate.
    def check_short_strings!(properties)
      SHORT_STRING_PROPERTIES.each do |name|
        value = properties[name]
        next if value.nil? || value.to_s.bytesize <= SHORT_STRING_LIMIT

        raise ShortStringTooLong,
              "#{name} is #{value.to_s.bytesize} bytes; AMQP short strings hold at most #{SHORT_STRING_LIMIT}"
      end
      properties
    end

    # What RR-18 forbids, the way amqp091-go before 1.13 does it: cut at 255 bytes (back
    # to a UTF-8 boundary) instead of refusing.
    def truncate_short_strings(properties)
      SHORT_STRING_PROPERTIES.each_with_object(properties.dup) do |name, out|
        value = out[name]
        next if value.nil? || value.to_s.bytesize <= SHORT_STRING_LIMIT

        out[name] = value.to_s.byteslice(0, SHORT_STRING_LIMIT).force_encoding(Encoding::UTF_8).scrub("")
      end
    end

    # The first header of a type WF-1 says a reader must survive (boolean, float, table,
    # array) but a strict reader rejects; nil when none.
    def strict_type_violation(headers)
      headers.find { |_, value| STRICT_REJECTS.any? { |type| value.is_a?(type) } }&.first
    end
  end
end
