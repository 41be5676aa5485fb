# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "stringio"
require "acemq_peer/session"

# The adapter's echo body and the order of a close's answer (no broker).
class SessionEchoTest < Minitest::Test
  def setup
    @session = AcemqPeer::Session.new(StringIO.new, StringIO.new, Logger.new(File::NULL))
  end

  def echo(body)
    request = Acemq::Request.new(body: body, message_id: "m1", correlation_id: nil, reply_to: "rq",
                                 reply_to_source: :header, headers: {}, attempt: 1)
    @session.send(:behave, "r1", { "reply" => "echo" }, request)
  end

  def test_the_echo_always_carries_correlation_id
    assert_equal "c-1", echo({ "correlationId" => "c-1", "sku" => "A" })[:correlationId]
    [{ "sku" => "A" }, [1, 2], "text", nil].each do |body|
      reply = echo(body)
      assert reply.key?(:correlationId), body.inspect
      assert_nil reply[:correlationId]
    end
    assert_equal "null", JSON.generate(echo(3))[/"correlationId":(\w+)/, 1]
  end

  def test_a_close_waits_for_the_answers_owed_to_its_requester_only
    answers = AcemqPeer::OwedAnswers.new
    answers.owe("q1")
    answers.owe("q2")
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    answers.await("q1", 0.1)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.1, "an owed answer was not waited for"
    payer = Thread.new { answers.paid("q1") }
    answers.await("q1", 5)
    payer.join
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    answers.await("q3", 5)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 1
  end
end
