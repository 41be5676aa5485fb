# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "minitest/autorun"
require "acemq"
require "acemq/_internal"

# Stands in for the broker in pure unit tests: records publishes, optionally answers them.
class FakePublisher
  Published = Struct.new(:payload, :exchange, :routing_key, :properties)

  attr_reader :published

  def initialize(&on_publish)
    @published = []
    @on_publish = on_publish
  end

  def publish(payload, exchange:, routing_key:, **properties)
    Acemq::Headers.check_short_strings!(properties)
    message = Published.new(payload, exchange, routing_key, properties)
    @published << message
    @on_publish&.call(message)
  end

  def close; end
end

FakeProps = Struct.new(:headers, :correlation_id, keyword_init: true)

module RequesterHelpers
  # A requester whose reply queue is "rq" and whose publishes go to a FakePublisher;
  # policy_fields change its RequesterPolicy from the default.
  def requester(publisher, **policy_fields)
    policy = Acemq::Internal::RequesterPolicy.build(**policy_fields)
    Acemq::Internal::Requester.new(nil, policy, publisher: publisher).tap do |r|
      r.instance_variable_set(:@reply_queue, "rq")
    end
  end

  # What a responder would send back for a published request.
  def reply_to(requester, message, body, headers: {})
    id = message.properties[:message_id]
    props = FakeProps.new(headers: { "responseMessageId".b => id.b }.merge(headers), correlation_id: id.b)
    requester.send(:on_reply, props, body.b)
  end
end
