# frozen_string_literal: true

require_relative "test_helper"
require "logger"

# RR-20 without a broker: what a requester, a responder and the publisher do when the
# connection watch reports a loss and a recovery, their policies' other values, and the
# watch on a Bunny session that is never started.
class RecoveryTest < Minitest::Test
  include RequesterHelpers

  REASON = "320 CONNECTION_FORCED - Closed via management plugin"
  ConnectionWatch = Acemq.const_get(:ConnectionWatch)

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # A requester with one call pending (published, unanswered) and one gather pending:
  # three publishes, the request's and the gather's two copies (one per expected reply).
  def pending_calls(requester, sent)
    calls = [
      Thread.new { outcome { requester.request(1, routing_key: "k", timeout: 0.5) } },
      Thread.new { outcome { requester.send_request_multi(1, endpoint: "e", expected_reply_count: 2, timeout: 0.5) } }
    ]
    3.times { sent.pop }
    calls
  end

  def outcome
    started = now
    [yield, now - started]
  rescue Acemq::Error => e
    [e, now - started]
  end

  def test_a_lost_connection_ends_pending_calls_and_gathers_at_once_uncounted
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m })
    events = []
    r.on(:connection_lost) { |e| events << e }
    calls = pending_calls(r, sent)
    r.send(:connection_lost, REASON, true)
    calls.map(&:value).each do |error, elapsed|
      assert_kind_of Acemq::ConnectionLost, error
      assert_equal REASON, error.reason
      assert_operator elapsed, :<, 0.4
    end
    assert_equal [0, [{ reason: REASON }]], [r.timed_out, events]
  end

  def test_on_connection_lost_wait_leaves_them_to_their_timeout
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, on_connection_lost: :wait)
    calls = pending_calls(r, sent)
    r.send(:connection_lost, REASON, true)
    (request, request_elapsed), (gather, gather_elapsed) = calls.map(&:value)
    assert_kind_of Acemq::RequestTimedOut, request
    assert_kind_of Acemq::RequestTimeoutError, gather
    assert_operator [request_elapsed, gather_elapsed].min, :>=, 0.5
    assert_equal 1, r.timed_out
  end

  # Bunny declared a new server-named queue in place of the one that went with the
  # connection: a call made while it recovers waits, and names the new queue.
  def test_a_call_during_recovery_waits_and_names_the_new_reply_queue
    reply = Struct.new(:name).new("amq.gen-old")
    r = nil
    r = requester(FakePublisher.new { |m| Thread.new { reply_to(r, m, m.payload) } })
    r.instance_variable_set(:@reply, reply)
    recovered = []
    r.on(:recovered) { |e| recovered << e }
    r.send(:connection_lost, REASON, true)
    call = Thread.new { r.request(7, routing_key: "k", timeout: 5) }
    Thread.pass until call.status == "sleep"
    reply.name = "amq.gen-new"
    r.send(:connection_recovered)
    assert_equal 7, call.value
    publisher = r.instance_variable_get(:@publisher)
    assert_equal ["amq.gen-new"] * 2, [publisher.published.last.properties[:reply_to], r.reply_queue]
    assert_equal [{ reply_queue: "amq.gen-new" }], recovered
  end

  def test_a_call_ends_as_connection_lost_when_the_connection_stays_down_or_recovery_outlasts_it
    r = requester(FakePublisher.new)
    r.send(:connection_lost, REASON, true)
    started = now
    error = assert_raises(Acemq::ConnectionLost) { r.request(1, routing_key: "k", timeout: 0.1) }
    assert_operator now - started, :>=, 0.1
    assert_equal REASON, error.reason

    publisher = FakePublisher.new
    r = requester(publisher, recover_connection: false)
    r.send(:connection_lost, REASON, false)
    started = now
    assert_raises(Acemq::ConnectionLost) { r.request(1, routing_key: "k", timeout: 5) }
    assert_raises(Acemq::ConnectionLost) { r.publish_request(1, exchange: "fan", timeout: 5) }
    assert_operator now - started, :<, 1
    assert_empty publisher.published
    assert_equal 0, r.timed_out
  end

  def test_close_ends_a_call_waiting_for_the_recovery
    r = requester(FakePublisher.new)
    r.send(:connection_lost, REASON, true)
    call = Thread.new { outcome { r.request(1, routing_key: "k", timeout: 5) } }
    Thread.pass until call.status == "sleep"
    r.close
    error, elapsed = call.value
    assert_kind_of Acemq::RequesterClosed, error
    assert_operator elapsed, :<, 1
  end

  # Bunny's session, never started; its own recovery replaced by a record of it.
  class QuietSession < Bunny::Session
    attr_reader :recoveries

    def handle_network_failure(exception) = (@recoveries ||= []) << exception
  end

  class ErrorHandler < Array
    def raise(error) = push(error)
  end

  def session(errors = ErrorHandler.new)
    QuietSession.new("amqp://guest:guest@127.0.0.1:1", logger: Logger.new(File::NULL), session_error_handler: errors)
  end

  def forced
    close = AMQ::Protocol::Connection::Close.new(320, "CONNECTION_FORCED - Closed via management plugin", 0, 0)
    Bunny::ConnectionForced.new("Connection-level error: #{close.reply_text}", nil, close)
  end

  def test_the_watch_tells_its_subscribers_once_then_lets_bunny_recover
    s = session
    heard = []
    ConnectionWatch.of(s).subscribe(lost: ->(reason, recovering) { heard << [reason, recovering] },
                                    recovered: -> { heard << :recovered })
    error = forced
    s.handle_network_failure(error)
    s.handle_network_failure(IOError.new("closed stream")) # another thread, while recovering
    assert_equal [[REASON, true]], heard
    assert_same error, s.recoveries.first
    assert_equal 2, s.recoveries.size # Bunny's own guard ignores the second
    s.notify_of_recovery_completion
    s.handle_network_failure(EOFError.new("end of file reached"))
    assert_equal [[REASON, true], :recovered, ["EOFError: end of file reached", true]], heard
    assert_same ConnectionWatch.of(s), ConnectionWatch.of(s)
  end

  def test_one_subscriber_that_does_not_recover_keeps_the_session_down
    errors = ErrorHandler.new
    s = session(errors)
    heard = []
    watch = ConnectionWatch.of(s)
    watch.subscribe(lost: ->(_reason, recovering) { heard << recovering })
    watch.subscribe(recover: false, lost: ->(_reason, recovering) { heard << recovering })
    error = forced
    s.handle_network_failure(error)
    s.handle_network_failure(IOError.new("closed stream"))
    assert_nil s.recoveries
    assert_equal [[false, false], [error]], [heard, errors]
    assert s.closed?
    refute s.open?
  end

  def test_a_cancelled_subscription_hears_nothing
    s = session
    heard = []
    subscription = ConnectionWatch.of(s).subscribe(recover: false, lost: ->(*) { heard << :lost })
    subscription.cancel
    s.handle_network_failure(forced)
    assert_empty heard
    assert_equal 1, s.recoveries.size
  end
end
