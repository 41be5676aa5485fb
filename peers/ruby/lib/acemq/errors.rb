# frozen_string_literal: true

module Acemq
  # Base class of every error this library raises on purpose.
  class Error < StandardError; end

  # A request got no reply within its timeout (RR-9).
  class RequestTimedOut < Error
    attr_reader :request_id

    def initialize(request_id, timeout)
      @request_id = request_id
      super("no reply to #{request_id} within #{timeout}s")
    end
  end

  # The responder's handler failed; #failure is the acemq-error text (RR-10).
  class ResponderFailed < Error
    attr_reader :request_id, :failure

    def initialize(request_id, failure)
      @request_id = request_id
      @failure = failure
      super(failure)
    end
  end

  # A reply without acemq-error whose body is not JSON (RR-19).
  class DecodeError < Error
    attr_reader :request_id

    def initialize(request_id, message)
      @request_id = request_id
      super(message)
    end
  end

  # A gather with an expected reply count that ran out of time (SG-6).
  class RequestTimeoutError < Error
    attr_reader :request_id, :partial_replies

    def initialize(request_id, partial_replies, expected)
      @request_id = request_id
      @partial_replies = partial_replies
      super("#{partial_replies.size} of #{expected} replies to #{request_id} before the timeout")
    end
  end

  # The call's requester was closed while the call was pending, or before it was made: the
  # call ended unanswered, at once (not at its timeout, and not counted in timed_out).
  class RequesterClosed < Error
    def initialize(message = "the requester was closed; the call ended unanswered")
      super
    end
  end

  # The connection a call depended on was lost while the call was pending (its reply queue
  # went with it), or is down when the call is made: the call ended unanswered, at once, and
  # was not counted in timed_out (RR-20). A request whose publish was not confirmed before
  # the loss ends so too: it was never sent as far as its caller knows. #reason is the
  # broker's code and text ("320 CONNECTION_FORCED - Closed via management plugin"), or the
  # network error.
  class ConnectionLost < Error
    attr_reader :reason

    def initialize(reason)
      @reason = reason
      super("connection lost: #{reason}")
    end
  end

  # A publish the broker did not take: returned, nacked, or the channel failed (RR-13).
  class PublishFailed < Error; end

  # The broker sent basic.return for a mandatory publish: nothing routed it.
  class PublishReturned < PublishFailed; end

  # A short-string property over 255 bytes; refused rather than truncated (RR-18).
  class ShortStringTooLong < Error; end

  # A header value of a type a strict reader refuses (header_types: :strict; WF-1 forbids this).
  class MalformedHeader < Error; end

  # A request whose body the responder could not decode as JSON; the handler never saw it.
  # Its failure text is "MalformedRequest: {decoder's message}" in every language.
  class MalformedRequest < Error; end

  # Connection settings that cannot work: an unreadable CA file, TLS asked for an amqp:// URL.
  class ConnectionSettingsError < Error; end

  # The broker was not reached over TLS: the handshake failed (an untrusted certificate,
  # one for another host, no TLS listener there).
  class ConnectionFailed < Error; end
end
