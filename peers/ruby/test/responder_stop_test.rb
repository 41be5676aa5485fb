# frozen_string_literal: true

require_relative "test_helper"

# Responder#stop settles what it answered before closing (a close before the ack would put
# an answered request back on the queue, for the next responder to answer again).
class ResponderStopTest < Minitest::Test
  Info = Struct.new(:delivery_tag)
  Props = Struct.new(:headers, :message_id, :correlation_id, :reply_to, :type, :content_type, keyword_init: true)

  # One log of what the channel, the consumer and the publisher are told, in order.
  class Channel
    def initialize(log) = @log = log
    def ack(tag) = @log << [:ack, tag]
    def nack(tag, multiple, requeue) = @log << [:nack, tag, multiple, requeue]
    def open? = true
    def close = @log << :channel_close
  end

  Connection = Struct.new(:log) { def open? = true }

  Consumer = Struct.new(:log) { def cancel = log << :cancel }

  def responder(publisher, &handler)
    @log = Queue.new
    handler ||= ->(_request) { { ok: true } }
    r = Acemq::Internal::Responder.new(Connection.new(@log), Acemq::Internal::ResponderPolicy.build, queue: "svc", &handler)
    r.instance_variable_set(:@channel, Channel.new(@log))
    r.instance_variable_set(:@consumer, Consumer.new(@log))
    r.instance_variable_set(:@publisher, publisher)
    r
  end

  def deliver(r, tag = 7)
    props = Props.new(headers: { "acemq-reply-to".b => "rq".b }, message_id: "m#{tag}".b)
    r.send(:handle, Info.new(tag), props, "{}".b)
  end

  def log = Array.new(@log.size) { @log.pop }

  def test_stop_waits_for_the_ack_of_a_request_whose_reply_is_being_confirmed
    confirm = Queue.new
    published = Queue.new
    publisher = FakePublisher.new do |_m|
      published << true
      confirm.pop # the broker's confirm is still on the way
    end
    r = responder(publisher)
    handling = Thread.new { deliver(r) }
    published.pop
    stopping = Thread.new { r.stop }
    Thread.pass until @log.size >= 1 # stop has cancelled the consumer
    confirm << :ack
    [handling, stopping].each { |t| assert t.join(5), "stop or the handler did not return" }
    assert_equal [:cancel, [:ack, 7], :channel_close], log
  end

  def test_after_stop_a_delivery_is_left_for_the_broker_to_requeue
    ran = false
    r = responder(FakePublisher.new) { ran = true }
    r.stop
    deliver(r, 8)
    refute ran
    assert_equal [:cancel, :channel_close], log
  end
end
