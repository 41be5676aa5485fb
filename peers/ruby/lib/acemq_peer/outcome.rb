# frozen_string_literal: true

require "acemq"

module AcemqPeer
  # The outcome (docs/peer-protocol.md) a binding call's error stands for, or nil when the
  # error is a refusal (`ok: false`). A binding error counts as itself, as a subclass, or as
  # the #cause of another error (what Ruby keeps when code raises while rescuing one): a
  # timeout is always the timeout outcome, never a refused call. ConnectionLost is the
  # connection_lost outcome from version 5 on (before it, a refusal, as it always was).
  module CallOutcome
    CONNECTION_LOST_PROTOCOL = 5

    module_function

    def of_request(error, protocol: CONNECTION_LOST_PROTOCOL)
      found(error, protocol) do |e|
        case e
        when Acemq::RequestTimedOut, Acemq::RequestTimeoutError then { outcome: "timeout" }
        when Acemq::ResponderFailed then { outcome: "responder_failed", failure: e.failure }
        when Acemq::DecodeError then { outcome: "decode_error", error: e.message }
        when Acemq::RequesterClosed then { outcome: "closed" }
        when Acemq::ConnectionLost then { outcome: "connection_lost", reason: e.reason }
        end
      end
    end

    # A shortfall keeps its partial replies; a bare timeout has none.
    def of_gather(error, protocol: CONNECTION_LOST_PROTOCOL)
      found(error, protocol) do |e|
        case e
        when Acemq::RequestTimeoutError then { outcome: "timeout_with_partial", replies: e.partial_replies }
        when Acemq::RequestTimedOut then { outcome: "timeout_with_partial", replies: [] }
        when Acemq::RequesterClosed then { outcome: "closed" }
        when Acemq::ConnectionLost then { outcome: "connection_lost", reason: e.reason }
        end
      end
    end

    # The first error along the cause chain that the block maps to an outcome.
    def found(error, protocol)
      seen = {}.compare_by_identity
      until error.nil? || seen.key?(error)
        outcome = yield(error) unless error.is_a?(Acemq::ConnectionLost) && protocol < CONNECTION_LOST_PROTOCOL
        return outcome if outcome

        seen[error] = true
        error = error.cause
      end
      nil
    end
  end
end
