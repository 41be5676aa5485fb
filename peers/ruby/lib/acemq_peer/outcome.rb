# frozen_string_literal: true

require "acemq"

module AcemqPeer
  # The outcome (docs/peer-protocol.md) a binding call's error stands for, or nil when the
  # error is a refusal (`ok: false`). A binding error counts as itself, as a subclass, or as
  # the #cause of another error (what Ruby keeps when code raises while rescuing one): a
  # timeout is always the timeout outcome, never a refused call.
  module CallOutcome
    module_function

    def of_request(error)
      found(error) do |e|
        case e
        when Acemq::RequestTimedOut, Acemq::RequestTimeoutError then { outcome: "timeout" }
        when Acemq::ResponderFailed then { outcome: "responder_failed", failure: e.failure }
        when Acemq::DecodeError then { outcome: "decode_error", error: e.message }
        when Acemq::RequesterClosed then { outcome: "closed" }
        end
      end
    end

    # A shortfall keeps its partial replies; a bare timeout has none.
    def of_gather(error)
      found(error) do |e|
        case e
        when Acemq::RequestTimeoutError then { outcome: "timeout_with_partial", replies: e.partial_replies }
        when Acemq::RequestTimedOut then { outcome: "timeout_with_partial", replies: [] }
        when Acemq::RequesterClosed then { outcome: "closed" }
        end
      end
    end

    # The first error along the cause chain that the block maps to an outcome.
    def found(error)
      seen = {}.compare_by_identity
      until error.nil? || seen.key?(error)
        outcome = yield(error)
        return outcome if outcome

        seen[error] = true
        error = error.cause
      end
      nil
    end
  end
end
