# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "stringio"
require "acemq_peer/session"

# responder.start's "events" (protocol 4): a responder started with false writes no event.
class SessionEventsTest < Minitest::Test
  Info = Struct.new(:delivery_tag)
  Props = Struct.new(:headers, :message_id, :correlation_id, :reply_to, :type, :content_type, keyword_init: true)
  Channel = Struct.new(:settled) do
    def ack(tag) = settled << [:ack, tag]
    def nack(tag, _multiple, _requeue) = settled << [:nack, tag]
  end

  def setup
    @out = StringIO.new
    @session = AcemqPeer::Session.new(StringIO.new, @out, Logger.new(File::NULL))
  end

  # What the session writes for one echo request, and one without a reply address, to a
  # responder started with `command` (on fakes: no broker).
  def events_of(command)
    @out.string = +""
    command = { "name" => "r", "queue" => "svc", "behavior" => { "reply" => "echo" } }.merge(command)
    build = @session.send(:build_responder, "r", command)
    responder = build.call(nil)
    responder.instance_variable_set(:@channel, Channel.new([]))
    responder.instance_variable_set(:@publisher, FakePublisher.new)
    [{ "acemq-reply-to".b => "rq".b }, {}].each do |headers|
      responder.send(:handle, Info.new(1), Props.new(headers: headers, message_id: "m1".b), '{"a":1}'.b)
    end
    @out.string.lines.map { |line| JSON.parse(line)["event"] }
  end

  def test_events_false_writes_no_event
    assert_empty events_of("events" => false)
  end

  def test_events_absent_or_true_writes_them
    assert_equal %w[handled replied unanswerable], events_of({})
    assert_equal %w[handled replied unanswerable], events_of("events" => true)
  end
end
