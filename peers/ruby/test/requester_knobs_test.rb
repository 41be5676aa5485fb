# frozen_string_literal: true

require_relative "test_helper"

# Requester and gatherer policy fields of the catalogue's mutants: each default is the
# spec's behaviour, the other value the mutant's.
class RequesterKnobsTest < Minitest::Test
  include RequesterHelpers

  def echoing_requester(**options)
    r = nil
    publisher = FakePublisher.new { |m| Thread.new { reply_to(r, m, m.payload) } }
    r = requester(publisher, **options)
    [r, publisher]
  end

  def stray(r, id, headers: {})
    r.send(:on_reply, FakeProps.new(headers: headers, correlation_id: id.b), "1")
  end

  def test_native_address_is_the_reply_queue_or_a_stale_name
    r, publisher = echoing_requester
    r.request(1, routing_key: "k")
    assert_equal "rq", publisher.published.first.properties[:reply_to]

    r, publisher = echoing_requester(native_address: :stale)
    r.request(1, routing_key: "k")
    assert_equal ["rq.stale", "rq"], [publisher.published.first.properties[:reply_to],
                                      publisher.published.first.properties[:headers]["acemq-reply-to"]]

    r, publisher = echoing_requester(native_address: :empty)
    r.request(1, routing_key: "k")
    assert_equal ["", "rq"], [publisher.published.first.properties[:reply_to],
                              publisher.published.first.properties[:headers]["acemq-reply-to"]]
  end

  # Bunny leaves out only a nil property: an empty reply_to goes on the wire, present and empty.
  def test_an_empty_reply_to_is_encoded_as_a_present_zero_length_short_string
    frame = AMQ::Protocol::Basic.encode_properties(0, reply_to: "")
    flags = frame.byteslice(12, 2).unpack1("n")
    assert_equal 0x0200, flags & 0x0200
    assert_equal "\x00".b, frame.byteslice(14, 1)
  end

  def test_count_unmatched_false_emits_the_event_without_counting
    r = requester(FakePublisher.new, count_unmatched: false)
    events = []
    r.on(:unmatched) { |e| events << e }
    stray(r, "nobody")
    assert_equal [0, 1], [r.unmatched, events.size]
  end

  def test_unmatched_reply_oldest_waiter_hands_a_stray_to_the_oldest_call
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, unmatched_reply: :oldest_waiter)
    call = Thread.new { r.request("a", routing_key: "k", message_id: "a", timeout: 2) }
    sent.pop
    r.send(:on_reply, FakeProps.new(headers: {}, correlation_id: "other".b), '"stray"')
    assert_equal "stray", call.value
    assert_equal 0, r.unmatched
    stray(r, "nobody") # none waiting: dropped and counted as usual
    assert_equal 1, r.unmatched
  end

  def test_timeout_outcome_null_reply_ends_as_a_nil_reply_still_counted
    r = requester(FakePublisher.new, timeout_outcome: :null_reply)
    assert_nil r.request(1, routing_key: "k", timeout: 0.05)
    assert_equal 1, r.timed_out
    r = requester(FakePublisher.new)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.05) }
  end

  def test_unknown_reply_headers_are_ignored_or_a_decode_error
    sent = Queue.new
    [[:ignore, nil], [:fail, Acemq::DecodeError]].each do |value, error|
      r = requester(FakePublisher.new { |m| sent << m }, unknown_reply_headers: value)
      call = Thread.new do
        Thread.current.report_on_exception = false
        r.request(1, routing_key: "k", timeout: 2)
      end
      reply_to(r, sent.pop, "5", headers: { "traceparent".b => "t".b })
      if error
        assert_raises(error) { call.value }
      else
        assert_equal 5, call.value
      end
    end
  end

  # A strict reader still lets the broker's and clients' own x- headers by.
  def test_x_headers_pass_a_strict_reader
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, unknown_reply_headers: :fail)
    call = Thread.new { r.request(1, routing_key: "k", timeout: 2) }
    reply_to(r, sent.pop, "5", headers: { "x-dotnet-pub-seq-no".b => 7 })
    assert_equal 5, call.value
  end

  def test_gather_unmatched_is_counted_by_its_own_field
    r = requester(FakePublisher.new, count_gather_unmatched: false)
    r.send_request_multi(1, endpoint: "e", expected_reply_count: 1, request_id: "g1", timeout: 0.05) rescue nil
    stray(r, "g1", headers: { "responseMessageId".b => "g1".b }) # a late reply of an ended gather
    stray(r, "req") # no gather involved: a request's, counted
    assert_equal 1, r.unmatched
  end

  def test_publish_copies_and_copies_without_a_count
    r = requester(FakePublisher.new)
    r.publish_request(1, exchange: "fan", timeout: 0.05)
    r.send_request_multi(1, endpoint: "e", timeout: 0.05)
    assert_equal 2, r.instance_variable_get(:@publisher).published.size

    publisher = FakePublisher.new
    r = requester(publisher, publish_copies: 2, multi_copies_without_count: 0)
    r.publish_request(1, exchange: "fan", request_id: "g", timeout: 0.05)
    assert_equal [%w[fan g], %w[fan g]], publisher.published.map { [_1.exchange, _1.properties[:message_id]] }
    assert_equal [], r.send_request_multi(1, endpoint: "e", timeout: 0.05)
    assert_equal 2, publisher.published.size
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # RR-9.6: a request ends at its timeout; :late gives up half a timeout later, still a
  # timeout and still counted. Gathers keep their own deadline.
  def test_request_deadline_late_gives_up_at_one_and_a_half_timeouts
    [[:timeout, 0.2, 0.3], [:late, 0.3, 5]].each do |deadline, at_least, under|
      r = requester(FakePublisher.new, request_deadline: deadline)
      started = now
      assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.2) }
      assert_operator now - started, :>=, at_least, deadline
      assert_operator now - started, :<, under, deadline
      assert_equal 1, r.timed_out
    end
    r = requester(FakePublisher.new, request_deadline: :late)
    started = now
    assert_equal [], r.publish_request(1, exchange: "fan", timeout: 0.2)
    assert_operator now - started, :<, 0.3
  end

  # The default timeout too: the timer is armed at 1.5 x whatever timeout the call has.
  def test_request_deadline_late_applies_to_the_default_timeout
    r = requester(FakePublisher.new, request_deadline: :late, default_timeout_ms: 200)
    started = now
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k") }
    assert_operator now - started, :>=, 0.3
  end

  # RR-8.2: a second reply for a request that already ended is Unmatched.
  def test_a_reply_for_a_request_already_answered_is_unmatched
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m })
    call = Thread.new { r.request(1, routing_key: "k", message_id: "a", timeout: 2) }
    message = sent.pop
    reply_to(r, message, "5")
    assert_equal 5, call.value
    reply_to(r, message, "6")
    assert_equal 1, r.unmatched
  end
end
