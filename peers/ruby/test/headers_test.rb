# frozen_string_literal: true

require_relative "test_helper"

# Bunny-specific extras beside the shared wire vectors (wire_vectors_test.rb).
class HeadersTest < Minitest::Test
  H = Acemq::Headers

  def test_text_turns_bunny_binary_strings_into_utf8
    value = "caf\u00e9".b
    assert_equal Encoding::ASCII_8BIT, value.encoding
    assert_equal Encoding::UTF_8, H.text(value).encoding
  end

  def test_normalize_makes_keys_utf8_and_keeps_values
    out = H.normalize({ "acemq-reply-to".b => "q".b, "x-n".b => 5 })
    assert_equal %w[acemq-reply-to x-n], out.keys
    assert(out.keys.all? { |k| k.encoding == Encoding::UTF_8 })
    assert_equal 5, out["x-n"]
    assert_equal({}, H.normalize(nil))
  end

  # RR-4.2, SG-3.1: a tutorial caller sends its own correlation_id and no message_id.
  def test_request_id_is_message_id_else_correlation_id
    assert_equal "m-1", H.request_id("m-1", "c-1")
    assert_equal "1", H.request_id(nil, "1")
    assert_equal "2", H.request_id("", "2")
    assert_nil H.request_id(nil, nil)
  end

  module Deep
    class PriceUnavailable < StandardError; end
  end

  def test_failure_text_of_a_ruby_error
    assert_equal "PriceUnavailable: no price", H.failure_text(Deep::PriceUnavailable.new("no price"))
    assert_equal "Error: anon", H.failure_text(Class.new(StandardError).new("anon"))
  end

  def test_only_short_string_properties_are_limited
    assert H.check_short_strings!(routing_key: "a" * 300, headers: { "h" => "a" * 300 })
  end

  def test_truncation_cuts_short_strings_at_255_bytes_on_a_utf8_boundary
    out = H.truncate_short_strings(correlation_id: "\u00e9" * 200, message_id: "m", routing_key: "k" * 300)
    assert_equal 254, out[:correlation_id].bytesize
    assert out[:correlation_id].valid_encoding?
    assert_equal %w[m], [out[:message_id]]
    assert_equal 300, out[:routing_key].size
    assert_equal 255, H.truncate_short_strings(type: "t" * 256)[:type].bytesize
  end

  def test_strict_type_violation_names_the_first_boolean_float_table_or_array
    assert_nil H.strict_type_violation({ "s" => "v".b, "l" => 9_000_000_000, "b" => -7 })
    assert_equal "x-flag", H.strict_type_violation({ "s" => "v", "x-flag" => false, "x-ratio" => 0.25 })
    assert_equal "x-ratio", H.strict_type_violation({ "x-ratio" => 0.25 })
    assert_equal "x-table", H.strict_type_violation({ "x-table" => { "k" => "v" } })
    assert_equal "x-list", H.strict_type_violation({ "x-list" => ["a", 2] })
  end
end
