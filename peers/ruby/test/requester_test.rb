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
    assert_equal [{ correlation_id: "late" }], events
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
