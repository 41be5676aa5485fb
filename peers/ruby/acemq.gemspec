# frozen_string_literal: true

require_relative "lib/acemq/version"

Gem::Specification.new do |spec|
  spec.name = "acemq"
  spec.version = Acemq::VERSION
  spec.summary = "acemq request/reply and scatter-gather over RabbitMQ (Bunny)"
  spec.authors = ["acemq-interop"]
  spec.license = "MIT"
  # The binding only: lib/acemq_peer and bin/ are the conformance suite's adapter.
  spec.files = Dir["lib/acemq.rb", "lib/acemq/*.rb"]
  spec.required_ruby_version = ">= 3.1"
  spec.add_dependency "bunny", "~> 2.19"
end
