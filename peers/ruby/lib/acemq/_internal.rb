# frozen_string_literal: true

require_relative "../acemq"

module Acemq
  # PRIVATE: the conformance adapter's way in. `require "acemq"` never loads this file;
  # only the acemq-interop peer (and the binding's own tests) require "acemq/_internal".
  #
  # A service has no reason to run a binding with anything but the wire spec's behaviour,
  # so the public Requester and Responder always use the default policies. The suite
  # replays defects and old releases by opening these subclasses with another policy:
  # the same code, reading the fields it is given.
  module Internal
    RequesterPolicy = Acemq.const_get(:RequesterPolicy)
    ResponderPolicy = Acemq.const_get(:ResponderPolicy)

    # A Requester resolved with `policy` (a RequesterPolicy) instead of the default.
    class Requester < Acemq::Requester
      def self.open(connection, policy, **options)
        new(connection, policy, **options).open
      end

      def initialize(connection, policy, **options)
        raise ArgumentError, "not a RequesterPolicy: #{policy.inspect}" unless policy.is_a?(RequesterPolicy)

        super(connection, **options)
        @policy = policy
      end
    end

    # A Responder resolved with `policy` (a ResponderPolicy) instead of the default.
    class Responder < Acemq::Responder
      def initialize(connection, policy, **options, &handler)
        raise ArgumentError, "not a ResponderPolicy: #{policy.inspect}" unless policy.is_a?(ResponderPolicy)

        super(connection, **options, &handler)
        @policy = policy
      end
    end
  end
end
