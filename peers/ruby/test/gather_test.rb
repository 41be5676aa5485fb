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
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    gathering = Acemq::Gathering.new("g", "c", 1, 0.2, early: false)
    gathering.add(:a)
    assert_equal [[:a], :timeout, true], gathering.wait.to_a
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.2
    assert_equal [[], :timeout, false], Acemq::Gathering.new("g", "c", 1, 0.01, early: false).wait.to_a
    assert_equal [[:a], :count, true], Acemq::Gathering.new("g", "c", 1, 5).tap { _1.add(:a) }.wait.to_a
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

  # --- SG-10: a failure reply is not an answer ---

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def failure_reply(r, id)
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => id.b, "acemq-error".b => "E: x".b },
                                    correlation_id: id.b), "")
  end

  def good_reply(r, id, body = "7")
    r.send(:on_reply, FakeProps.new(headers: { "responseMessageId".b => id.b }, correlation_id: id.b), body)
  end

  # A gather of count 1 on its own thread, started (registered) once this returns.
  def pending_gather(r, sent, mode: :publish, timeout: 2, &on_reply)
    thread = Thread.new do
      Thread.current.report_on_exception = false
      if mode == :publish
        r.publish_request(1, exchange: "fan", expected_reply_count: 1, request_id: "g1", timeout: timeout, &on_reply)
      else
        r.send_request_multi(1, endpoint: "e", expected_reply_count: 1, request_id: "g1", timeout: timeout)
      end
    end
    sent.pop
    thread
  end

  def recording(r)
    [].tap { |events| r.on(:unmatched) { |e| events << e } }
  end

  def test_a_failure_reply_is_kept_out_of_the_gather_and_its_count_and_is_unmatched
    %i[publish multi].each do |mode|
      sent = Queue.new
      r = requester(FakePublisher.new { |m| sent << m })
      events = recording(r)
      seen = []
      thread = pending_gather(r, sent, mode: mode) { |reply| seen << reply }
      failure_reply(r, "g1")
      assert thread.alive?, "#{mode}: the failure reply counted toward the count"
      good_reply(r, "g1")
      assert_equal [7], thread.value, mode
      assert_equal [7], seen if mode == :publish # on_reply never saw the failure
      assert_equal 1, r.unmatched, mode
      assert_equal [{ correlation_id: "g1", response_message_id: "g1" }], events, mode
    end
  end

  def test_gather_keeps_failures_mutant_adds_a_nil_reply_that_counts
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, gather_failure_reply: :keep)
    events = recording(r)
    seen = []
    thread = pending_gather(r, sent) { |reply| seen << reply }
    failure_reply(r, "g1")
    assert_equal [nil], thread.value
    assert_equal [nil], seen
    assert_equal [0, []], [r.unmatched, events]
  end

  def test_gather_failures_not_counted_mutant_emits_without_counting
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, count_gather_failures: false)
    events = recording(r)
    thread = pending_gather(r, sent)
    failure_reply(r, "g1")
    assert thread.alive?
    good_reply(r, "g1")
    assert_equal [7], thread.value
    assert_equal [0, 1], [r.unmatched, events.size]
  end

  # SG-8's and SG-10's counter fields are independent of each other.
  def test_failure_and_late_reply_counters_are_independent
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, count_gather_unmatched: false)
    thread = pending_gather(r, sent)
    failure_reply(r, "g1") # SG-10: still counted
    good_reply(r, "g1")
    thread.value
    good_reply(r, "g1") # late (SG-8): not counted by this policy
    assert_equal 1, r.unmatched

    r = requester(FakePublisher.new { |m| sent << m }, count_gather_failures: false)
    thread = pending_gather(r, sent)
    failure_reply(r, "g1") # SG-10: not counted by this policy
    good_reply(r, "g1")
    thread.value
    good_reply(r, "g1") # late (SG-8): still counted
    assert_equal 1, r.unmatched
  end

  # --- SG-8.1: a gather that ended but is not yet removed takes no reply ---

  def test_gathering_refuses_a_reply_once_its_count_is_reached_or_its_time_is_up
    gathering = Acemq::Gathering.new("g", "c", 1, 5)
    assert gathering.add(:a)
    refute gathering.add(:b), "added to a gathering whose count was reached"
    assert_equal [:a], gathering.wait.replies
    gathering = Acemq::Gathering.new("g", "c", nil, 0.01)
    sleep 0.02
    refute gathering.add(:a), "added to a gathering whose deadline passed"
    assert_equal [[], :timeout], gathering.wait.to_a.first(2)
    gathering = Acemq::Gathering.new("g", "c", nil, 5).tap(&:close)
    refute gathering.add(:a)
  end

  # The window between "count reached" (or the deadline) and the requester removing the
  # gather: a reply arriving there is Unmatched with its event, not added and lost.
  def test_a_reply_for_a_finished_gather_still_pending_removal_is_unmatched
    [[1, 5], [nil, 0.01]].each do |expected, timeout|
      r = requester(FakePublisher.new)
      events = recording(r)
      gathering = Acemq::Gathering.new("g1", "g1", expected, timeout)
      gathering.add(1) if expected
      sleep 0.02 unless expected
      r.instance_variable_get(:@gathers)["g1"] = gathering # ended, not yet removed
      good_reply(r, "g1")
      assert_equal [expected ? [1] : [], 1], [gathering.wait.replies, r.unmatched], "count #{expected.inspect}"
      assert_equal [{ correlation_id: "g1", response_message_id: "g1" }], events
    end
  end

  # The same race end to end: a reply beyond the count, delivered as the count is reached.
  def test_a_reply_beyond_the_count_is_unmatched_not_in_the_result
    r, = requester_answering(3)
    assert_equal [0, 1], r.publish_request(1, exchange: "fan", expected_reply_count: 2, timeout: 2)
    deadline = now + 5
    sleep 0.01 until r.unmatched == 1 || now > deadline # the third reply is on its way
    assert_equal 1, r.unmatched
  end

  # --- SG-9: the timeout bounds every gather ---

  def test_a_reply_does_not_extend_a_gather_and_restart_per_reply_does
    [[:fixed, 0.3, 0.45], [:restart_per_reply, 0.5, 5]].each do |deadline, at_least, under|
      sent = Queue.new
      r = requester(FakePublisher.new { |m| sent << m }, gather_deadline: deadline)
      started = now
      thread = Thread.new { r.publish_request(1, exchange: "fan", request_id: "g1", timeout: 0.3) }
      sent.pop
      sleep 0.2
      good_reply(r, "g1")
      assert_equal [7], thread.value, deadline
      assert_operator now - started, :>=, at_least, deadline
      assert_operator now - started, :<, under, deadline
    end
  end

  def test_restart_per_reply_makes_a_shortfall_reject_late
    sent = Queue.new
    r = requester(FakePublisher.new { |m| sent << m }, gather_deadline: :restart_per_reply)
    started = now
    thread = Thread.new do
      Thread.current.report_on_exception = false
      r.send_request_multi(1, endpoint: "e", expected_reply_count: 2, request_id: "g1", timeout: 0.3)
    end
    sent.pop
    sleep 0.2
    good_reply(r, "g1")
    error = assert_raises(Acemq::RequestTimeoutError) { thread.value }
    assert_equal [7], error.partial_replies
    assert_operator now - started, :>=, 0.5
  end
end
