# frozen_string_literal: true

require_relative "test_helper"

class ResponderTest < Minitest::Test
  # Records what the responder does with each delivery.
  class FakeChannel
    attr_reader :settled

    def initialize
      @settled = []
    end

    def ack(tag) = @settled << [:ack, tag]
    def nack(tag, multiple, requeue) = @settled << [:nack, tag, multiple, requeue]
  end

  Info = Struct.new(:delivery_tag)
  Props = Struct.new(:headers, :message_id, :correlation_id, :reply_to, :type, :content_type, keyword_init: true)

  # policy_fields change the ResponderPolicy from the default.
  def responder(publisher, max_attempts: nil, **policy_fields, &handler)
    handler ||= ->(request) { { echo: request.body } }
    policy = Acemq::Internal::ResponderPolicy.build(**policy_fields)
    r = Acemq::Internal::Responder.new(nil, policy, queue: "svc", max_attempts: max_attempts, &handler)
    r.instance_variable_set(:@channel, FakeChannel.new)
    r.instance_variable_set(:@publisher, publisher)
    @events = []
    %i[handled replied reply_failed dead_lettered unanswerable].each { |e| r.on(e) { |f| @events << [e, f] } }
    r
  end

  def deliver(r, headers: { "acemq-reply-to" => "rq" }, reply_to: nil, delivery_count: nil, body: '{"a":1}')
    headers = headers.transform_keys(&:b)
    headers["x-delivery-count".b] = delivery_count if delivery_count
    props = Props.new(headers: headers, message_id: "m1".b, correlation_id: "c1".b, reply_to: reply_to&.b,
                      content_type: "application/json".b)
    r.send(:handle, Info.new(7), props, body.b)
  end

  def settled(r) = r.instance_variable_get(:@channel).settled

  def test_echo_reply_is_addressed_by_the_rules
    publisher = FakePublisher.new
    r = responder(publisher)
    deliver(r, headers: { "acemq-reply-to" => "rq", "x-acemq-trace" => "t", "x-custom" => 1 })
    reply = publisher.published.first
    assert_equal ["", "rq"], [reply.exchange, reply.routing_key]
    assert_equal "m1", reply.properties[:correlation_id]
    assert_equal "m1", reply.properties[:headers]["responseMessageId"]
    assert_equal "application/json", reply.properties[:content_type]
    assert_equal({ "echo" => { "a" => 1 } }, JSON.parse(reply.payload))
    assert_equal [[:ack, 7]], settled(r)
    assert_equal 1, r.answered
    handled = @events.assoc(:handled).last[:request]
    assert_equal %w[acemq-reply-to x-custom], handled.headers.keys.sort
    assert_equal [:header, 1], [handled.reply_to_source, handled.attempt]
  end

  def test_no_strip_mutant_shows_private_headers
    r = responder(FakePublisher.new, strip_engine_headers: false)
    deliver(r, headers: { "acemq-reply-to" => "rq", "x-acemq-trace" => "t" })
    assert_includes @events.assoc(:handled).last[:request].headers.keys, "x-acemq-trace"
  end

  def test_reply_address_read_order_is_the_policys
    [[%i[header native], :header], [%i[native header], :native]].each do |order, source|
      r = responder(FakePublisher.new, read_order: order)
      deliver(r, headers: { "acemq-reply-to" => "h" }, reply_to: "n")
      assert_equal source, @events.assoc(:handled).last[:request].reply_to_source
    end
    r = responder(FakePublisher.new, read_order: %i[header])
    deliver(r, headers: {}, reply_to: "n")
    assert_equal 1, r.unanswerable
  end

  def test_unanswerable_is_counted_and_acked_without_running_the_handler
    ran = false
    publisher = FakePublisher.new
    r = responder(publisher) { ran = true }
    deliver(r, headers: { "acemq-reply-to" => "" }, reply_to: "")
    refute ran
    assert_equal [1, 0], [r.unanswerable, r.answered]
    assert_empty publisher.published
    assert_equal [[:ack, 7]], settled(r)
    assert_equal [:unanswerable, { message_id: "m1" }], @events.last
  end

  def test_dead_letter_unanswerable_mutant
    publisher = FakePublisher.new
    r = responder(publisher, unanswerable: :dead_letter)
    deliver(r, headers: {})
    assert_equal ["svc.dlq"], publisher.published.map(&:routing_key)
  end

  class PriceError < StandardError; end

  def test_handler_failure_replies_with_the_error_then_dead_letters_once
    publisher = FakePublisher.new
    r = responder(publisher) { raise PriceError, "no price" }
    deliver(r)
    failure, dead = publisher.published
    assert_equal ["", "rq"], [failure.payload, failure.routing_key]
    assert_equal "PriceError: no price", failure.properties[:headers]["acemq-error"]
    assert_equal "svc.dlq", dead.routing_key
    assert_equal "PriceError: no price", dead.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal %w[m1 c1], dead.properties.values_at(:message_id, :correlation_id)
    assert_equal '{"a":1}', dead.payload
    assert_equal [[:ack, 7]], settled(r)
    assert_equal 0, r.answered
  end

  def test_failure_mutants
    publisher = FakePublisher.new
    r = responder(publisher, dead_letter_failures: false) { raise "x" }
    deliver(r)
    assert_equal ["rq"], publisher.published.map(&:routing_key)
    r = responder(FakePublisher.new, count_failures_answered: true) { raise "x" }
    deliver(r)
    assert_equal 1, r.answered
  end

  def returning_publisher
    FakePublisher.new { |m| raise Acemq::PublishReturned, "returned: 312 NO_ROUTE" unless m.routing_key.end_with?(".dlq") }
  end

  def test_undeliverable_reply_is_requeued_explicitly_and_rolled_back
    r = responder(returning_publisher)
    deliver(r)
    assert_equal [[:nack, 7, false, true]], settled(r)
    assert_equal 0, r.answered
    assert_equal [:reply_failed, { message_id: "m1", attempt: 1, error: "returned: 312 NO_ROUTE" }], @events.last
  end

  def test_last_attempt_dead_letters_as_undeliverable_reply
    publisher = returning_publisher
    r = responder(publisher)
    deliver(r, delivery_count: 2)
    assert_equal [[:ack, 7]], settled(r)
    assert_equal "UndeliverableReply: returned: 312 NO_ROUTE",
                 publisher.published.last.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal :dead_lettered, @events.last.first
  end

  def test_no_rollback_mutant_keeps_the_increment
    r = responder(returning_publisher, rollback_answered: false)
    deliver(r)
    assert_equal 1, r.answered
  end

  # A publisher whose publish returns (the broker's confirm) only once the test lets it.
  def held_publisher(confirm)
    FakePublisher.new { confirm.pop }
  end

  def test_answered_after_confirm_counts_on_the_confirm_and_no_later
    confirm = Queue.new
    r = responder(held_publisher(confirm), answered_timing: :after_confirm)
    delivery = Thread.new { deliver(r) }
    Thread.pass until confirm.num_waiting == 1
    assert_equal 0, r.answered # the reply is out, its confirm not back: not counted yet
    confirm << :ack
    delivery.join
    assert_equal 1, r.answered # at once: no added delay

    # The default counts before the publish, while the confirm is still held.
    confirm = Queue.new
    r = responder(held_publisher(confirm))
    delivery = Thread.new { deliver(r) }
    Thread.pass until confirm.num_waiting == 1
    assert_equal 1, r.answered
    confirm << :ack
    delivery.join
  end

  # Counting on the confirm has nothing to roll back: a reply that failed was never counted.
  def test_answered_after_confirm_never_counts_a_failed_reply
    [true, false].each do |rollback|
      r = responder(returning_publisher, answered_timing: :after_confirm, rollback_answered: rollback)
      deliver(r)
      assert_equal [0, [[:nack, 7, false, true]]], [r.answered, settled(r)]
    end
  end

  def test_handler_failure_retry_sends_nothing_and_requeues_then_dead_letters
    publisher = FakePublisher.new
    r = responder(publisher, handler_failure: :retry) { raise PriceError, "no price" }
    deliver(r)
    assert_empty publisher.published
    assert_equal [[:nack, 7, false, true]], settled(r)
    deliver(r, delivery_count: 2)
    assert_equal ["svc.dlq"], publisher.published.map(&:routing_key)
    assert_equal "PriceError: no price", publisher.published.last.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal 0, r.answered
  end

  def test_counters_after_subscribe_mutant_never_counts_the_first_answer
    r = responder(FakePublisher.new, counters_created: :after_first_delivery)
    deliver(r)
    assert_equal [[:ack, 7]], settled(r)
    assert_equal 0, r.answered
    deliver(r)
    deliver(r)
    assert_equal 2, r.answered
  end

  def test_answered_is_counted_before_the_reply_is_published
    r = nil
    seen = nil
    r = responder(FakePublisher.new { seen = r.answered })
    deliver(r)
    assert_equal 1, seen
  end

  def test_counters_exist_at_zero_before_start
    r = responder(FakePublisher.new)
    assert_equal [0, 0], [r.answered, r.unanswerable]
  end

  def test_reply_addressing_mutants
    publisher = FakePublisher.new
    r = responder(publisher, reply_correlation_from: :correlation_id)
    deliver(r)
    assert_equal %w[c1 m1], [publisher.published.first.properties[:correlation_id],
                             publisher.published.first.properties[:headers]["responseMessageId"]]
    publisher = FakePublisher.new
    r = responder(publisher, response_message_id: false)
    deliver(r)
    assert_equal "m1", publisher.published.first.properties[:correlation_id]
    refute publisher.published.first.properties[:headers].key?("responseMessageId")
  end

  def test_acks_undeliverable_mutant_neither_retries_nor_dead_letters
    publisher = returning_publisher
    r = responder(publisher, undeliverable_reply: :ack)
    deliver(r, delivery_count: 2)
    assert_equal [[:ack, 7]], settled(r)
    assert_equal ["rq"], publisher.published.map(&:routing_key)
    assert_equal [:reply_failed, { message_id: "m1", attempt: 3, error: "returned: 312 NO_ROUTE" }], @events.last
  end

  def test_strict_header_types_mutant_fails_the_request_without_running_the_handler
    ran = false
    publisher = FakePublisher.new
    r = responder(publisher, header_types: :strict) { ran = true }
    deliver(r, headers: { "acemq-reply-to" => "rq", "x-n" => 5, "x-flag" => true, "x-list" => [] })
    refute ran
    failure, dead = publisher.published
    assert_equal "MalformedHeader: x-flag", failure.properties[:headers]["acemq-error"]
    assert_equal "MalformedHeader: x-flag", dead.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal [[:ack, 7]], settled(r)

    publisher = FakePublisher.new
    r = responder(publisher, header_types: :strict)
    deliver(r, headers: { "acemq-reply-to" => "rq", "x-n" => 5 })
    assert_equal({ "echo" => { "a" => 1 } }, JSON.parse(publisher.published.first.payload))
  end

  # Issue 12's decisions and the knobs behind them, responder side.

  def test_attempts_default_to_3_and_follow_the_policy
    assert_equal 3, Acemq::Responder.new(nil, queue: "q") { nil }.max_attempts
    r = responder(returning_publisher)
    deliver(r, delivery_count: 1)
    deliver(r, delivery_count: 2)
    assert_equal [[:nack, 7, false, true], [:ack, 7]], settled(r)
    r = responder(returning_publisher, default_max_attempts: 5)
    assert_equal 5, r.max_attempts
    [2, 3, 4].each { |count| deliver(r, delivery_count: count) }
    assert_equal [[:nack, 7, false, true], [:nack, 7, false, true], [:ack, 7]], settled(r)
    assert_equal [3, 4, 5], @events.select { _1.first == :reply_failed }.map { _1.last[:attempt] }
    # A max_attempts given wins over the default.
    r = responder(returning_publisher, max_attempts: 2, default_max_attempts: 5)
    deliver(r, delivery_count: 1)
    assert_equal [[:ack, 7]], settled(r)
  end

  def test_the_attempt_is_the_delivery_count_plus_the_base
    assert_equal [1, 1, 3], [{}, { "x-delivery-count" => 0 }, { "x-delivery-count" => 2 }].map { Acemq::Headers.attempt(_1) }
    assert_equal [0, 0, 2], [{}, { "x-delivery-count" => 0 }, { "x-delivery-count" => 2 }].map { Acemq::Headers.attempt(_1, 0) }
    r = responder(returning_publisher, attempt_base: 0)
    deliver(r)
    assert_equal 0, @events.assoc(:handled).last[:request].attempt
    # The last attempt is still the one numbered max_attempts: one more delivery.
    deliver(r, delivery_count: 2)
    deliver(r, delivery_count: 3)
    assert_equal [[:nack, 7, false, true], [:nack, 7, false, true], [:ack, 7]], settled(r)
  end

  def test_an_undeliverable_failure_reply_is_retried_then_dead_lettered_as_undeliverable
    publisher = returning_publisher
    r = responder(publisher) { raise PriceError, "no price" }
    deliver(r)
    assert_equal [[:nack, 7, false, true]], settled(r)
    assert_equal [:reply_failed, { message_id: "m1", attempt: 1, error: "returned: 312 NO_ROUTE" }], @events.last
    deliver(r, delivery_count: 2)
    assert_equal [:ack, 7], settled(r).last
    dead = publisher.published.last
    assert_equal "svc.dlq", dead.routing_key
    assert_equal "UndeliverableReply: returned: 312 NO_ROUTE", dead.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal %i[handled reply_failed handled reply_failed dead_lettered], @events.map(&:first)
    assert_equal 0, r.answered
  end

  def test_failure_reply_unchecked_dead_letters_with_the_failure_at_once
    publisher = returning_publisher
    r = responder(publisher, failure_reply_delivery: :unchecked) { raise PriceError, "no price" }
    deliver(r)
    assert_equal [[:ack, 7]], settled(r)
    assert_equal "PriceError: no price", publisher.published.last.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal %i[handled replied dead_lettered], @events.map(&:first)
  end

  def test_a_body_that_is_not_json_fails_as_malformed_request_without_the_handler
    ran = false
    publisher = FakePublisher.new
    r = responder(publisher) { ran = true }
    deliver(r, body: "not json")
    refute ran
    failure, dead = publisher.published
    assert_equal ["", "rq"], [failure.payload, failure.routing_key]
    error = failure.properties[:headers]["acemq-error"]
    assert_match(/\AMalformedRequest: \S/, error)
    assert_equal error, dead.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal ["svc.dlq", "not json"], [dead.routing_key, dead.payload]
    assert_equal [[:ack, 7]], settled(r)
    assert_equal %i[replied dead_lettered], @events.map(&:first)
    assert_equal error, @events.first.last[:failure]
    assert_equal 0, r.answered
  end

  def test_malformed_request_drop_acks_silently
    publisher = FakePublisher.new
    r = responder(publisher, malformed_request: :drop)
    deliver(r, body: "not json")
    assert_empty publisher.published
    assert_equal [[:ack, 7]], settled(r)
    assert_empty @events
    deliver(r)
    assert_equal 1, publisher.published.size
  end

  def test_counters_after_subscribe_loses_the_first_answer_only
    r = responder(FakePublisher.new, counters_created: :after_first_delivery)
    deliver(r, headers: {})
    deliver(r)
    deliver(r)
    assert_equal [1, 1], [r.unanswerable, r.answered]
  end

  def test_dead_letter_unanswerable_writes_both_events_and_acks
    publisher = FakePublisher.new
    r = responder(publisher, unanswerable: :dead_letter)
    deliver(r, headers: {})
    assert_equal "Unanswerable: the request names no reply address",
                 publisher.published.first.properties[:headers]["acemq-dead-letter-reason"]
    assert_equal [[:ack, 7]], settled(r)
    assert_equal 1, r.unanswerable
    assert_equal %i[dead_lettered unanswerable], @events.map(&:first)
  end
end
