# frozen_string_literal: true

require_relative "test_helper"

class GatherTest < Minitest::Test
  include RequesterHelpers

  # Answers each published copy n times (n responders), with the responder's number.
  def requester_answering(times, **options)
    r = nil
    publisher = FakePublisher.new do |m|
      Thread.new { times.times { |i| reply_to(r, m, i.to_s) } }
    end
    r = requester(publisher, **options)
    [r, publisher]
  end

  def test_multi_publishes_one_copy_per_expected_reply_with_shared_ids
    r, publisher = requester_answering(1)
    replies = r.send_request_multi({ sku: "S" }, endpoint: "pricing", expected_reply_count: 3, correlation_id: "c-1",
                                                 request_id: "g1", timeout: 2)
    assert_equal [0, 0, 0], replies
    assert_equal 3, publisher.published.size
    publisher.published.each do |m|
      assert_equal ["", "pricing", "g1", "c-1"], [m.exchange, m.routing_key, m.properties[:message_id], m.properties[:correlation_id]]
      assert_equal "rq", m.properties[:reply_to]
    end
  end

  def test_correlation_id_defaults_to_the_request_id
    r, publisher = requester_answering(1)
    r.send_request_multi(1, endpoint: "e", request_id: "g1", timeout: 0.05)
    assert_equal "g1", publisher.published.first.properties[:correlation_id]
  end

  def test_count_reached_resolves_early
    r, = requester_answering(2)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal [0, 1], r.publish_request(1, exchange: "fan", expected_reply_count: 2, timeout: 5)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 1
  end

  def test_shortfall_rejects_with_partial_replies_in_arrival_order
    r, = requester_answering(2)
    error = assert_raises(Acemq::RequestTimeoutError) do
      r.publish_request(1, exchange: "fan", expected_reply_count: 3, timeout: 0.2)
    end
    assert_equal [0, 1], error.partial_replies
  end

  def test_shortfall_resolves_mutant_returns_the_partial_replies
    r, = requester_answering(2, gather_shortfall: :resolve)
    assert_equal [0, 1], r.publish_request(1, exchange: "fan", expected_reply_count: 3, timeout: 0.2)
  end

  def test_without_a_count_it_resolves_at_the_timeout
    r, = requester_answering(2)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal [0, 1], r.publish_request(1, exchange: "fan", timeout: 0.3)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.3
    r, = requester_answering(0)
    assert_equal [], r.publish_request(1, exchange: "fan", timeout: 0.05)
  end

  def test_on_reply_is_called_per_reply
    r, = requester_answering(2)
    seen = []
    r.publish_request(1, exchange: "fan", expected_reply_count: 2, timeout: 2) { |reply| seen << reply }
    assert_equal [0, 1], seen
  end

  def test_replies_are_demultiplexed_by_response_message_id_only
    r = requester(FakePublisher.new)
    thread = Thread.new { r.publish_request(1, exchange: "fan", expected_reply_count: 1, request_id: "g1", timeout: 2) }
    sleep 0.05
    # correlation_id plays no part: a bus responder may copy the business id into it.
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => "g1".b }, correlation_id: "c-1".b), "7")
    assert_equal [7], thread.value
  end

  def test_replies_after_the_gather_ended_and_failure_replies_are_unmatched
    r, publisher = requester_answering(1)
    r.send_request_multi(1, endpoint: "e", expected_reply_count: 1, timeout: 1)
    reply_to(r, publisher.published.first, "1")
    assert_equal 1, r.unmatched

    r = requester(FakePublisher.new)
    thread = Thread.new { r.publish_request(1, exchange: "fan", request_id: "g2", timeout: 0.2) }
    sleep 0.05
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => "g2".b, "acemq-error".b => "E: x".b }), "")
    assert_equal [], thread.value
    assert_equal 1, r.unmatched
  end

  def test_gather_by_correlation_id_mutant_ignores_response_message_id
    r = requester(FakePublisher.new, gather_demux_by: :correlation_id)
    thread = Thread.new do
      r.publish_request(1, exchange: "fan", expected_reply_count: 1, request_id: "g1", correlation_id: "c-1", timeout: 0.3)
    end
    thread.report_on_exception = false
    sleep 0.05
    # A bus responder copies the business correlation id; only responseMessageId names the gather.
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => "g1".b }, correlation_id: "c-1".b), "7")
    assert_raises(Acemq::RequestTimeoutError) { thread.value }
    assert_equal 1, r.unmatched
  end

  def test_copies_distinct_ids_mutant_gives_each_copy_its_own_message_id
    r, publisher = requester_answering(1, gather_copy_ids: :distinct)
    error = assert_raises(Acemq::RequestTimeoutError) do
      r.send_request_multi(1, endpoint: "e", expected_reply_count: 3, request_id: "g1", timeout: 0.2)
    end
    ids = publisher.published.map { |m| m.properties[:message_id] }
    assert_equal ["g1", 3], [ids.first, ids.uniq.size]
    assert_equal [0], error.partial_replies
  end

  def test_multi_one_copy_mutant_publishes_once
    r, publisher = requester_answering(1, multi_copies: :one)
    assert_raises(Acemq::RequestTimeoutError) do
      r.send_request_multi(1, endpoint: "e", expected_reply_count: 3, timeout: 0.1)
    end
    assert_equal 1, publisher.published.size
  end

  def test_gathering_without_early_resolution_waits_for_the_timeout
    gathering = Acemq::Gathering.new("g", "c", 1, nil, early: false)
    gathering.add(:a)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal [[:a], :timeout, true], gathering.wait(0.2).to_a
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.2
    assert_equal [[], :timeout, false], Acemq::Gathering.new("g", "c", 1, nil, early: false).wait(0.01).to_a
    assert_equal [[:a], :count, true], Acemq::Gathering.new("g", "c", 1, nil).tap { _1.add(:a) }.wait(5).to_a
  end

  def test_no_count_means_one_mutant
    r, = requester_answering(2, gather_missing_count: :one)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal [0], r.publish_request(1, exchange: "fan", timeout: 5).take(1)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 1
    r, = requester_answering(0, gather_missing_count: :one)
    error = assert_raises(Acemq::RequestTimeoutError) { r.publish_request(1, exchange: "fan", timeout: 0.05) }
    assert_equal [], error.partial_replies
  end

  def test_stray_reply_to_oldest_gather_mutant
    r = requester(FakePublisher.new, gather_stray_reply: :oldest_gather)
    thread = Thread.new { r.publish_request(1, exchange: "fan", expected_reply_count: 1, request_id: "g1", timeout: 2) }
    sleep 0.05
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => "other".b }, correlation_id: "c".b), "9")
    assert_equal [9], thread.value
    assert_equal 0, r.unmatched
    # With no gather pending there is nothing to misroute to.
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => "other".b }, correlation_id: "c".b), "9")
    assert_equal 1, r.unmatched
  end
end
