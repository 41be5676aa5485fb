# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "pathname"

# The shared cases of the pure wire rules (catalogue/wire-vectors.json), one test per case,
# run through the binding's pure functions. Header values are written as the AMQP field
# table bytes the notation names and decoded by amq-protocol, so each case sees exactly
# what Bunny hands the binding.
class WireVectorsTest < Minitest::Test
  H = Acemq::Headers

  def self.vectors_path
    return Pathname(ENV["ACEMQ_WIRE_VECTORS"]) if ENV["ACEMQ_WIRE_VECTORS"]

    Pathname(__dir__).expand_path.ascend do |dir|
      file = dir / "catalogue" / "wire-vectors.json"
      return file if file.file?
    end
    raise "catalogue/wire-vectors.json not found above #{__dir__} (set ACEMQ_WIRE_VECTORS)"
  end

  VECTORS = JSON.parse(vectors_path.read)

  # The typed notation as field-table bytes: a string is S, {"bytes": s} is x, and so on.
  module Notation
    module_function

    def text(value)
      value.is_a?(Hash) && value.key?("repeat") ? value["repeat"] * value["times"] : value
    end

    def field(value)
      return "S".b + sized(text(value)) if value.is_a?(String) || value.key?("repeat")

      type, v = value.first
      case type
      when "bytes" then "x".b + sized(v)
      when "long" then "l".b + [v].pack("q>")
      when "int" then "I".b + [v].pack("l>")
      when "byte" then "b".b + [v].pack("c")
      when "bool" then "t".b + [v ? 1 : 0].pack("C")
      when "double" then "d".b + [v].pack("G")
      when "table" then "F".b + table(v)
      when "array" then "A".b + sized(v.map { |item| field(item) }.join.b)
      else raise ArgumentError, "unknown notation #{type.inspect}"
      end
    end

    def sized(string) = [string.bytesize].pack("N") + string.b

    def table(hash)
      sized(hash.map { |key, value| [key.bytesize].pack("C") + key.b + field(value) }.join.b)
    end

    # Headers as the binding sees them: decoded by amq-protocol, keys made UTF-8.
    def headers(hash) = Acemq::Headers.normalize(AMQ::Protocol::Table.decode(table(hash || {})))
  end

  def self.each_case(group, &block)
    VECTORS.fetch(group).fetch("cases").each do |c|
      define_method("test_#{group}: #{c.fetch('name')}") { instance_exec(c, &block) }
    end
  end

  each_case("header_string") do |c|
    headers = Notation.headers(c.key?("value") ? { "acemq-reply-to" => c["value"] } : {})
    expected = c["expect"]
    actual = H.text(headers["acemq-reply-to"])
    expected.nil? ? assert_nil(actual) : assert_equal(expected, actual)
  end

  each_case("reply_address") do |c|
    order = (c["read_order"] || %w[header native]).map(&:to_sym)
    address, source = H.reply_address(Notation.headers(c["headers"]), c["reply_to"]&.b, order)
    expected = c["expect"]
    assert_equal(expected ? [expected["address"], expected["source"].to_sym] : [nil, nil], [address, source])
  end

  each_case("strip_engine_headers") do |c|
    assert_equal c["kept"].sort, H.strip_private(Notation.headers(c["headers"])).keys.sort
  end

  each_case("failure_text") do |c|
    assert_equal c["expect"], H.failure_text_from(c["type"], c["message"])
  end

  each_case("delivery_attempt") do |c|
    assert_equal c["expect"], H.attempt(Notation.headers(c["headers"]))
  end

  each_case("retry_decision") do |c|
    args = [c["attempt"], c["max_attempts"]].compact
    assert_equal c["expect"].to_sym, H.retry_decision(*args)
  end

  each_case("short_string") do |c|
    value = Notation.text(c["value"])
    H::SHORT_STRING_PROPERTIES.each do |property|
      if c["expect"] == "accepted"
        assert H.check_short_strings!(property => value), property
      else
        assert_raises(Acemq::ShortStringTooLong, property.to_s) { H.check_short_strings!(property => value) }
      end
    end
  end
end
