# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "stringio"
require "acemq_peer/session"

# The adapter reports the binding's timeout, in every shape it may take, as the timeout
# outcome, never as a refused call (no broker: a fake requester raises).
class SessionOutcomeTest < Minitest::Test
  # A subclass of the binding's errors is still that error.
  class SlowTimeout < Acemq::RequestTimedOut; end
  class ShortTimeout < Acemq::RequestTimeoutError; end
  # What a layer in between may raise while rescuing the binding's error (Ruby keeps #cause).
  class Wrapper < StandardError; end

  # Raises the error its block makes, from request and both gathers.
  class RaisingRequester
    def initialize(&error) = @error = error
    def request(*, **) = raise(@error.call)
    def send_request_multi(*, **) = raise(@error.call)
    def publish_request(*, **) = raise(@error.call)
  end

  def setup
    @output = StringIO.new
    @session = AcemqPeer::Session.new(StringIO.new, @output, Logger.new(File::NULL))
  end

  def answer(command, &error)
    @session.instance_variable_get(:@requesters)["q"] = RaisingRequester.new(&error)
    @output.truncate(0)
    @output.rewind
    @session.send(:dispatch, { "id" => 1, "requester" => "q", "body" => 1, "timeout_ms" => 10 }.merge(command))
    JSON.parse(@output.string.lines.last)
  end

  def request(&error) = answer({ "op" => "request", "routing_key" => "k" }, &error)
  def gather(mode, &error) = answer({ "op" => "gather", "mode" => mode, "endpoint" => "e", "exchange" => "x" }, &error)

  def wrapped(error)
    raise error
  rescue StandardError
    begin
      raise Wrapper, "the call failed"
    rescue Wrapper => e
      e
    end
  end

  def test_a_request_timeout_is_the_timeout_outcome_plain_subclassed_or_wrapped
    [
      -> { Acemq::RequestTimedOut.new("m", 0.01) },
      -> { SlowTimeout.new("m", 0.01) },
      -> { wrapped(Acemq::RequestTimedOut.new("m", 0.01)) },
      -> { wrapped(wrapped(SlowTimeout.new("m", 0.01))) }
    ].each do |error|
      reply = request(&error)
      assert_equal [true, "timeout"], [reply["ok"], reply["outcome"]], reply.inspect
    end
  end

  def test_a_gather_shortfall_is_timeout_with_partial_plain_subclassed_or_wrapped
    %w[multi publish].each do |mode|
      [
        -> { Acemq::RequestTimeoutError.new("g", [1], 2) },
        -> { ShortTimeout.new("g", [1], 2) },
        -> { wrapped(Acemq::RequestTimeoutError.new("g", [1], 2)) }
      ].each do |error|
        reply = gather(mode, &error)
        assert_equal [true, "timeout_with_partial", [1]], reply.values_at("ok", "outcome", "replies"), reply.inspect
      end
      reply = gather(mode) { wrapped(Acemq::RequestTimedOut.new("g", 0.01)) }
      assert_equal [true, "timeout_with_partial", []], reply.values_at("ok", "outcome", "replies")
    end
  end

  def test_the_other_outcomes_and_a_refusal
    assert_equal "responder_failed", request { wrapped(Acemq::ResponderFailed.new("m", "E: x")) }["outcome"]
    assert_equal "closed", request { Acemq::RequesterClosed.new }["outcome"]
    refused = request { Acemq::PublishReturned.new("returned: 312 NO_ROUTE") }
    assert_equal [false, "PublishReturned: returned: 312 NO_ROUTE"], refused.values_at("ok", "error")
    refused = gather("multi") { Wrapper.new("boom") }
    assert_equal false, refused["ok"]
  end

  # Version 5: the binding's ConnectionLost is the connection_lost outcome with its reason;
  # an older session never sees that outcome (a refusal, as before).
  def test_connection_lost_is_an_outcome_from_version_5
    lost = -> { Acemq::ConnectionLost.new("320 CONNECTION_FORCED - Closed via management plugin") }
    @session.instance_variable_set(:@protocol, 5)
    [request(&lost), gather("multi", &lost), gather("publish") { wrapped(lost.call) }].each do |reply|
      assert_equal [true, "connection_lost", "320 CONNECTION_FORCED - Closed via management plugin"],
                   reply.values_at("ok", "outcome", "reason"), reply.inspect
    end
    @session.instance_variable_set(:@protocol, 4)
    refused = request(&lost)
    assert_equal [false, "ConnectionLost: connection lost: 320 CONNECTION_FORCED - Closed via management plugin"],
                 refused.values_at("ok", "error")
  end
end
