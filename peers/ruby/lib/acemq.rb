# frozen_string_literal: true

# acemq for Ruby: request/reply and scatter-gather over RabbitMQ with Bunny.
# The public API is Requester, Responder, Connection.open, their errors and Headers' wire rules;
# acemq/_internal is private to the conformance adapter and not loaded here.
require_relative "acemq/version"
require_relative "acemq/errors"
require_relative "acemq/connection"
require_relative "acemq/connection_watch"
require_relative "acemq/headers"
require_relative "acemq/policy"
require_relative "acemq/observable"
require_relative "acemq/byte_array"
require_relative "acemq/publisher"
require_relative "acemq/gather"
require_relative "acemq/requester"
require_relative "acemq/responder"
