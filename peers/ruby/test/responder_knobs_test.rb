# frozen_string_literal: true

require_relative "test_helper"
require_relative "responder_test"

# Responder policy fields of the catalogue's mutants, on ResponderTest's fakes.
class ResponderKnobsTest < ResponderTest
  # Only this class's tests (it inherits ResponderTest's helpers, not its tests).
  def self.runnable_methods = public_instance_methods(false).grep(/\Atest_/).map(&:to_s)

  module Scenario
    class Failure < StandardError; end
  end

  def test_bytes_address_ignore_takes_a_byte_array_as_absent
    bytes = Acemq::ReceivedByteArray.new("hb".b)
    r = responder(FakePublisher.new)
    deliver(r, headers: { "acemq-reply-to" => bytes }, reply_to: "n")
    assert_equal "hb", @events.assoc(:handled).last[:request].reply_to
    r = responder(FakePublisher.new, bytes_address: :ignore)
    deliver(r, headers: { "acemq-reply-to" => bytes }, reply_to: "n")
    assert_equal ["n", :native], @events.assoc(:handled).last[:request].to_h.values_at(:reply_to, :reply_to_source)
    r = responder(FakePublisher.new, bytes_address: :ignore)
    deliver(r, headers: { "acemq-reply-to" => bytes })
    assert_equal 1, r.unanswerable
    r = responder(FakePublisher.new, bytes_address: :ignore)
    deliver(r, headers: { "acemq-reply-to" => "hs" })
    assert_equal "hs", @events.assoc(:handled).last[:request].reply_to
  end

  SPEC_HEADERS = { "acemq-reply-to" => "rq", "acemq-whatever" => "w", "responseMessageId" => "g",
                   "x-custom" => "c", "x-acemq-trace" => "t" }.freeze

  # RR-5: only x-acemq-* is hidden; the spec's own acemq-* headers reach the handler.
  def test_the_handler_sees_the_spec_headers_and_hides_acemq_ones_only_by_policy
    deliver(responder(FakePublisher.new), headers: SPEC_HEADERS)
    assert_equal %w[acemq-reply-to acemq-whatever responseMessageId x-custom],
                 @events.assoc(:handled).last[:request].headers.keys.sort
    publisher = FakePublisher.new
    r = responder(publisher, pass_spec_headers: false)
    deliver(r, headers: SPEC_HEADERS)
    request = @events.assoc(:handled).last[:request]
    assert_equal %w[responseMessageId x-custom], request.headers.keys.sort
    # Hidden from the handler only: the reply address was still read and answered.
    assert_equal [["rq", :header], ["rq"]], [[request.reply_to, request.reply_to_source], publisher.published.map(&:routing_key)]
  end

  def test_reply_content_type_none_leaves_it_off
    publisher = FakePublisher.new
    deliver(responder(publisher, reply_content_type: :none))
    refute publisher.published.first.properties.key?(:content_type)
  end

  def test_strip_prefix_x_hides_every_x_header
    r = responder(FakePublisher.new, strip_prefix: :"x-")
    deliver(r, headers: { "acemq-reply-to" => "rq", "x-acemq-trace" => "t", "x-custom" => 1 }, delivery_count: 1)
    request = @events.assoc(:handled).last[:request]
    assert_equal %w[acemq-reply-to], request.headers.keys
    assert_equal 2, request.attempt # x-delivery-count is still read
  end

  def test_failure_body_json_and_qualified_error_type
    publisher = FakePublisher.new
    deliver(responder(publisher, failure_body: :json) { raise Scenario::Failure, "no" })
    failure = publisher.published.first
    assert_equal "Failure: no", failure.properties[:headers]["acemq-error"]
    assert_equal({ "error" => "Failure: no" }, JSON.parse(failure.payload))
    # Every failure reply carries it, not only a handler's: MalformedRequest too.
    publisher = FakePublisher.new
    deliver(responder(publisher, failure_body: :json), body: "{")
    failure = publisher.published.first
    assert_match(/\AMalformedRequest: /, failure.properties[:headers]["acemq-error"])
    assert_equal({ "error" => failure.properties[:headers]["acemq-error"] }, JSON.parse(failure.payload))
    # And MalformedHeader (a strict reader's).
    publisher = FakePublisher.new
    deliver(responder(publisher, failure_body: :json, header_types: :strict), headers: { "acemq-reply-to" => "rq", "x-flag" => false })
    failure = publisher.published.first
    assert_equal({ "error" => "MalformedHeader: x-flag" }, JSON.parse(failure.payload))

    publisher = FakePublisher.new
    deliver(responder(publisher, error_type_name: :qualified) { raise Scenario::Failure, "no" })
    assert_equal "ResponderKnobsTest::Scenario::Failure: no", publisher.published.first.properties[:headers]["acemq-error"]
    publisher = FakePublisher.new
    deliver(responder(publisher, error_type_name: :qualified), body: "{")
    assert_match(/\AMalformedRequest: /, publisher.published.first.properties[:headers]["acemq-error"])
  end

  def test_retry_failures_requeues_until_the_last_attempt_then_dead_letters
    publisher = FakePublisher.new
    r = responder(publisher, retry_failures: true) { raise Scenario::Failure, "no" }
    deliver(r)
    assert_equal [[:nack, 7, false, true]], settled(r)
    assert_equal ["rq"], publisher.published.map(&:routing_key)
    deliver(r, delivery_count: 2)
    assert_equal [:ack, 7], settled(r).last
    assert_equal %w[rq rq svc.dlq], publisher.published.map(&:routing_key)
    assert_equal "Failure: no", publisher.published.last.properties[:headers]["acemq-dead-letter-reason"]
  end

  def test_count_unanswerable_false_acks_and_emits_without_counting
    r = responder(FakePublisher.new, count_unanswerable: false)
    deliver(r, headers: {})
    assert_equal [0, [[:ack, 7]]], [r.unanswerable, settled(r)]
    assert_equal :unanswerable, @events.last.first
  end

  def test_last_attempt_ack_acks_without_dead_lettering
    publisher = returning_publisher
    r = responder(publisher, last_attempt: :ack)
    deliver(r)
    assert_equal [[:nack, 7, false, true]], settled(r) # earlier attempts still retry
    deliver(r, delivery_count: 2)
    assert_equal [:ack, 7], settled(r).last
    assert_equal %w[rq rq], publisher.published.map(&:routing_key)
    refute @events.assoc(:dead_lettered)
  end

  # Channels that record each queue declare; a passive declare of a queue not in `existing`
  # raises NotFound and closes that channel, as the broker's 404 does.
  class DeclareChannel
    attr_reader :declares

    def initialize(existing, log)
      @existing = existing
      @declares = log
      @open = true
    end

    def queue(name, **opts)
      raise Bunny::ChannelAlreadyClosed.new("closed", self) unless @open

      @declares << [self, name, opts]
      if opts[:passive] && !@existing.include?(name)
        @open = false
        raise Bunny::NotFound.new("NOT_FOUND - no queue '#{name}'", self, nil)
      end
      name
    end

    def close = @open = false
    def open? = @open
  end

  DeclareConnection = Struct.new(:existing, :log, :channels) do
    def create_channel(*) = DeclareChannel.new(existing, log).tap { |c| channels << c }
  end

  def declares(request_queue, existing)
    connection = DeclareConnection.new(existing, [], [])
    r = Acemq::Internal::Responder.new(connection, Acemq::Internal::ResponderPolicy.build(request_queue: request_queue), queue: "svc") { {} }
    main = connection.create_channel
    r.instance_variable_set(:@channel, main)
    r.send(:declare_request_queue)
    connection.log.map { |channel, name, opts| [channel.equal?(main) ? :main : :probe, name, opts] }
  end

  def test_request_queue_classic_if_missing_probes_passively_then_declares_classic
    assert_equal [[:main, "svc", { durable: true, arguments: { "x-queue-type" => "quorum" } }]], declares(:quorum, [])
    # Missing: the probe channel's 404 leaves the main channel open for a classic declare.
    assert_equal [[:probe, "svc", { passive: true }], [:main, "svc", { durable: true }]], declares(:classic_if_missing, [])
    # Present: used as it is, nothing declared with arguments.
    assert_equal [[:probe, "svc", { passive: true }], [:main, "svc", { passive: true }]], declares(:classic_if_missing, ["svc"])
  end

  # RR-20.4: acked after the handler and its reply (RR-14's settling); on delivery, before
  # the handler runs, the policy's other value: nothing is left to settle, and a reply that
  # could not be delivered cannot put the request back.
  def test_ack_timing_on_delivery_acks_before_the_handler_and_cannot_requeue
    order = []
    r = responder(FakePublisher.new) { |request| order << settled(r).dup; { echo: request.body } }
    deliver(r)
    assert_equal [[[]], [[:ack, 7]]], [order, settled(r)]

    order = []
    r = responder(FakePublisher.new, ack_timing: :on_delivery) { |request| order << settled(r).dup; { echo: request.body } }
    deliver(r)
    assert_equal [[[[:ack, 7]]], [[:ack, 7]]], [order, settled(r)]

    returned = FakePublisher.new { raise Acemq::PublishReturned, "returned: 312 NO_ROUTE" }
    r = responder(returned)
    deliver(r)
    assert_equal [[:nack, 7, false, true]], settled(r)
    r = responder(returned, ack_timing: :on_delivery)
    deliver(r)
    assert_equal [[:ack, 7]], settled(r)
    assert_equal 1, @events.count { |event, _| event == :reply_failed }
  end
end
