# frozen_string_literal: true

require_relative "test_helper"

class RequesterTest < Minitest::Test
  include RequesterHelpers

  def echoing_requester(**options)
    r = nil
    publisher = FakePublisher.new { |m| Thread.new { reply_to(r, m, m.payload) } }
    r = requester(publisher, **options)
    [r, publisher]
  end

  def test_request_writes_the_reply_address_twice_and_gets_its_reply
    r, publisher = echoing_requester
    assert_equal({ "sku" => "A-1" }, r.request({ sku: "A-1" }, routing_key: "pricing", message_id: "m1"))
    props = publisher.published.first.properties
    assert_equal "rq", props[:reply_to]
    assert_equal({ "acemq-reply-to" => "rq" }, props[:headers])
    assert_equal %w[m1 m1 application/json], props.values_at(:message_id, :correlation_id, :content_type)
  end

  def test_profile_030_writes_only_the_header
    r, publisher = echoing_requester(write_native_address: false)
    r.request(1, routing_key: "k")
    props = publisher.published.first.properties
    refute props.key?(:reply_to)
    assert_equal "rq", props[:headers]["acemq-reply-to"]
  end

  def test_mutants_native_only_and_header_bytes
    r, publisher = echoing_requester(write_header_address: false)
    r.request(1, routing_key: "k")
    assert_equal "rq", publisher.published.first.properties[:reply_to]
    refute publisher.published.first.properties.key?(:headers)

    r, publisher = echoing_requester(header_address_as_bytes: true)
    r.request(1, routing_key: "k")
    assert_equal Acemq::ByteArray.new("rq"), publisher.published.first.properties[:headers]["acemq-reply-to"]
  end

  def test_timeout_counts_and_a_late_reply_is_unmatched
    r = requester(FakePublisher.new)
    events = []
    r.on(:unmatched) { |e| events << e }
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", message_id: "late", timeout: 0.05) }
    assert_equal 1, r.timed_out
    r.send(:on_reply, FakeProps.new(headers: {}, correlation_id: "late".b), "1")
    assert_equal 1, r.unmatched
    assert_equal [{ correlation_id: "late", response_message_id: nil }], events
  end

  def test_replies_go_to_the_caller_with_the_matching_correlation_id
    r = nil
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m })
    first = Thread.new { r.request("a", routing_key: "k", message_id: "a", timeout: 2) }
    a = sent.pop
    second = Thread.new { r.request("b", routing_key: "k", message_id: "b", timeout: 2) }
    b = sent.pop
    reply_to(r, b, '"for b"')
    reply_to(r, a, '"for a"')
    assert_equal "for a", first.value
    assert_equal "for b", second.value
  end

  def test_late_reply_to_next_mutant_hands_replies_to_the_oldest_caller
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, match_replies_by: :oldest_waiter)
    first = Thread.new { r.request("a", routing_key: "k", message_id: "a", timeout: 2) }
    sent.pop
    second = Thread.new { r.request("b", routing_key: "k", message_id: "b", timeout: 2) }
    b = sent.pop
    reply_to(r, b, '"for b"')
    assert_equal "for b", first.value
    second.kill
  end

  def test_error_header_fails_at_once_before_decoding
    r = nil
    publisher = FakePublisher.new do |m|
      Thread.new { reply_to(r, m, "", headers: { "acemq-error".b => "ScenarioFailure: no price".b }) }
    end
    r = requester(publisher)
    error = assert_raises(Acemq::ResponderFailed) { r.request(1, routing_key: "k", timeout: 5) }
    assert_equal "ScenarioFailure: no price", error.failure
  end

  def test_ignores_error_header_mutant_decodes_the_empty_body
    r = nil
    publisher = FakePublisher.new do |m|
      Thread.new { reply_to(r, m, "", headers: { "acemq-error".b => "X: y".b }) }
    end
    r = requester(publisher, read_error_header: false)
    assert_raises(Acemq::DecodeError) { r.request(1, routing_key: "k", timeout: 5) }
  end

  def test_a_body_that_is_not_json_is_a_decode_error
    r = nil
    r = requester(FakePublisher.new { |m| Thread.new { reply_to(r, m, "not json") } })
    assert_raises(Acemq::DecodeError) { r.request(1, routing_key: "k", timeout: 5) }
  end

  def test_a_failed_publish_leaves_nothing_pending
    publisher = FakePublisher.new { raise Acemq::PublishReturned, "returned: 312 NO_ROUTE" }
    r = requester(publisher)
    assert_raises(Acemq::PublishReturned) { r.request(1, routing_key: "k", message_id: "x") }
    r.send(:on_reply, FakeProps.new(headers: {}, correlation_id: "x".b), "1")
    assert_equal 1, r.unmatched
    assert_equal 0, r.timed_out
  end

  def test_long_short_strings_are_refused
    r = requester(FakePublisher.new)
    assert_raises(Acemq::ShortStringTooLong) { r.request(1, routing_key: "k", correlation_id: "c" * 256) }
  end

  def test_timeouts_not_counted_mutant_still_times_out
    r = requester(FakePublisher.new, count_timeouts: false)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.05) }
    assert_equal 0, r.timed_out
  end

  def test_drops_undecodable_mutant_counts_the_reply_unmatched_and_waits
    r = nil
    r = requester(FakePublisher.new { |m| reply_to(r, m, "not json") }, undecodable_reply: :drop)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.1) }
    assert_equal [1, 1], [r.unmatched, r.timed_out]
    r = nil
    r = requester(FakePublisher.new { |m| reply_to(r, m, "", headers: { "acemq-error".b => "X: y".b }) },
                  undecodable_reply: :drop)
    assert_raises(Acemq::ResponderFailed) { r.request(1, routing_key: "k", timeout: 1) }
  end

  def test_truncates_short_strings_mutant_sends_255_bytes
    publisher = FakePublisher.new
    r = requester(publisher, long_short_string: :truncate)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", correlation_id: "c" * 300, timeout: 0.01) }
    assert_equal "c" * 255, publisher.published.first.properties[:correlation_id]
  end
end

# Issue 12's decisions and the knobs behind them, requester side.
class RequesterDecisionsTest < Minitest::Test
  include RequesterHelpers

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def test_the_default_timeout_is_30_seconds_and_the_policys
    assert_equal 30.0, Acemq::Requester.new(nil).default_timeout
    assert_equal 5, Acemq::Requester.new(nil, default_timeout: 5).default_timeout
    assert_equal 10.0, requester(FakePublisher.new, default_timeout_ms: 10_000).default_timeout
    r = requester(FakePublisher.new, default_timeout_ms: 50)
    started = now
    error = assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k") }
    assert_operator now - started, :>=, 0.05
    assert_match(/within 0.05s/, error.message)
    # A gather given no timeout waits the same default.
    started = now
    assert_equal [], r.publish_request(1, exchange: "fan")
    assert_operator now - started, :>=, 0.05
  end

  def test_type_travels_as_the_type_property_and_absence_sends_none
    publisher = FakePublisher.new
    r = requester(publisher)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", type: "quote.requested", timeout: 0.01) }
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.01) }
    assert_raises(Acemq::RequestTimeoutError) do
      r.send_request_multi(1, endpoint: "e", expected_reply_count: 2, type: "quote.requested", timeout: 0.01)
    end
    with_type, without, *copies = publisher.published.map(&:properties)
    assert_equal "quote.requested", with_type[:type]
    refute with_type[:headers].key?("type")
    refute without.key?(:type)
    assert_equal %w[quote.requested quote.requested], copies.map { _1[:type] }
    assert_raises(Acemq::ShortStringTooLong) { r.request(1, routing_key: "k", type: "t" * 256) }
  end

  def test_type_carrier_header_puts_the_type_in_a_header
    publisher = FakePublisher.new
    r = requester(publisher, type_carrier: :header)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", type: "quote.requested", timeout: 0.01) }
    assert_equal [], r.publish_request(1, exchange: "fan", type: "quote.requested", timeout: 0.01)
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.01) }
    request, gather, untyped = publisher.published.map(&:properties)
    [request, gather].each do |props|
      refute props.key?(:type)
      assert_equal "quote.requested", props[:headers]["type"]
    end
    refute untyped[:headers].key?("type")
  end

  # Starts a call in a thread and waits until its publish left.
  def pending_call(r, publisher_queue, &call)
    thread = Thread.new(&call)
    thread.report_on_exception = false
    publisher_queue.pop
    thread
  end

  def test_close_ends_pending_calls_at_once_uncounted_and_returns_after_them
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m })
    request = pending_call(r, sent) { r.request(1, routing_key: "k", timeout: 20) }
    gather = pending_call(r, sent) { r.send_request_multi(1, endpoint: "e", expected_reply_count: 1, timeout: 20) }
    started = now
    r.close
    refute request.alive?, "close returned before the pending request ended"
    refute gather.alive?, "close returned before the pending gather ended"
    assert_operator now - started, :<, 1
    assert_raises(Acemq::RequesterClosed) { request.value }
    assert_raises(Acemq::RequesterClosed) { gather.value }
    assert_equal 0, r.timed_out
    assert_raises(Acemq::RequesterClosed) { r.request(1, routing_key: "k", timeout: 1) }
  end

  def test_pending_at_close_wait_leaves_calls_to_their_timeout
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, pending_at_close: :wait)
    request = pending_call(r, sent) { r.request(1, routing_key: "k", timeout: 0.3) }
    started = now
    r.close
    assert_operator now - started, :<, 0.2
    assert request.alive?
    assert_raises(Acemq::RequestTimedOut) { request.value }
    assert_operator now - started, :>=, 0.25
  end

  def returning = FakePublisher.new { raise Acemq::PublishReturned, "returned: 312 NO_ROUTE" }

  def test_a_returned_gather_fails_at_once
    r = requester(returning)
    started = now
    assert_raises(Acemq::PublishReturned) { r.send_request_multi(1, endpoint: "none", expected_reply_count: 2, timeout: 5) }
    assert_raises(Acemq::PublishReturned) { r.publish_request(1, exchange: "unbound", timeout: 5) }
    assert_operator now - started, :<, 1
    # The request knob leaves gathers alone.
    r = requester(returning, honour_returns: false)
    assert_raises(Acemq::PublishReturned) { r.publish_request(1, exchange: "unbound", timeout: 5) }
    assert_raises(Acemq::RequestTimedOut) { r.request(1, routing_key: "k", timeout: 0.05) }
  end

  def test_honour_gather_returns_false_waits_out_the_timeout
    r = requester(returning, honour_gather_returns: false)
    started = now
    assert_equal [], r.publish_request(1, exchange: "unbound", timeout: 0.1)
    assert_operator now - started, :>=, 0.1
    assert_raises(Acemq::RequestTimeoutError) { r.send_request_multi(1, endpoint: "none", expected_reply_count: 1, timeout: 0.05) }
    # Requests still honour returns.
    assert_raises(Acemq::PublishReturned) { r.request(1, routing_key: "k", timeout: 5) }
  end

  def test_gathers_never_count_in_timed_out_unless_the_policy_says
    r = requester(FakePublisher.new)
    assert_raises(Acemq::RequestTimeoutError) { r.send_request_multi(1, endpoint: "e", expected_reply_count: 1, timeout: 0.02) }
    assert_equal [], r.publish_request(1, exchange: "fan", timeout: 0.02)
    assert_equal 0, r.timed_out
    r = requester(FakePublisher.new, count_gather_timeouts: true)
    assert_raises(Acemq::RequestTimeoutError) { r.send_request_multi(1, endpoint: "e", expected_reply_count: 1, timeout: 0.02) }
    assert_equal [], r.publish_request(1, exchange: "fan", timeout: 0.02)
    assert_equal 2, r.timed_out
  end

  def test_gather_default_correlation_none_sends_no_correlation_id
    publisher = FakePublisher.new
    r = requester(publisher, gather_default_correlation: :none)
    r.publish_request(1, exchange: "fan", request_id: "g1", timeout: 0.01)
    r.publish_request(1, exchange: "fan", request_id: "g2", correlation_id: "c-1", timeout: 0.01)
    assert_equal [nil, "c-1"], publisher.published.map { _1.properties[:correlation_id] }
    assert_equal %w[g1 g2], publisher.published.map { _1.properties[:message_id] }
  end

  def test_unmatched_names_both_ids_of_a_gather_reply
    r = requester(FakePublisher.new)
    events = []
    r.on(:unmatched) { |e| events << e }
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => "gone".b }, correlation_id: "c-1".b), "1")
    r.send(:on_reply, FakeProps.new(headers: {}, correlation_id: nil), "1")
    assert_equal [{ correlation_id: "c-1", response_message_id: "gone" }, { correlation_id: nil, response_message_id: nil }], events
  end
end
