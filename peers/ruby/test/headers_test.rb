# frozen_string_literal: true

require_relative "test_helper"

class HeadersTest < Minitest::Test
  H = Acemq::Headers

  def test_text_turns_bunny_binary_strings_into_utf8
    value = "caf\u00e9".b
    assert_equal Encoding::ASCII_8BIT, value.encoding
    assert_equal "caf\u00e9", H.text(value)
    assert_equal Encoding::UTF_8, H.text(value).encoding
    assert_nil H.text(nil)
    assert_nil H.text(42)
  end

  def test_empty_is_absent
    assert_nil H.present_text("")
    assert_nil H.present_text(nil)
    assert_equal "q", H.present_text("q".b)
  end

  def test_normalize_makes_keys_utf8_and_keeps_values
    out = H.normalize({ "acemq-reply-to".b => "q".b, "x-n".b => 5 })
    assert_equal %w[acemq-reply-to x-n], out.keys
    assert(out.keys.all? { |k| k.encoding == Encoding::UTF_8 })
    assert_equal 5, out["x-n"]
    assert_equal({}, H.normalize(nil))
  end

  def test_strip_private_removes_only_the_x_acemq_namespace
    headers = { "x-acemq-trace" => "1", "acemq-reply-to" => "q", "x-custom" => "c", "x-acemqish" => "k" }
    assert_equal %w[acemq-reply-to x-custom x-acemqish], H.strip_private(headers).keys
  end

  def test_attempt_is_delivery_count_plus_one_for_any_integer_type
    assert_equal 1, H.attempt({})
    assert_equal 1, H.attempt({ "x-delivery-count" => 0 })
    assert_equal 3, H.attempt({ "x-delivery-count" => 2 })
    assert_equal 3, H.attempt({ "x-delivery-count" => "2".b })
    assert_equal 1, H.attempt({ "x-delivery-count" => "two" })
  end

  def test_reply_address_header_first_then_native
    both = { "acemq-reply-to" => "from-header".b }
    assert_equal ["from-header", :header], H.reply_address(both, "from-native".b, %i[header native])
    assert_equal ["from-native", :native], H.reply_address(both, "from-native".b, %i[native header])
    assert_equal ["from-native", :native], H.reply_address({ "acemq-reply-to" => "" }, "from-native", %i[header native])
    assert_equal [nil, nil], H.reply_address({}, "", %i[header native])
    assert_equal [nil, nil], H.reply_address({}, "from-native", %i[header])
  end

  def test_reply_address_accepts_byte_array_and_long_string_alike
    assert_equal "q\u00e9", H.reply_address({ "acemq-reply-to" => "q\u00e9".b }, nil, %i[header]).first
  end

  module Deep
    class PriceUnavailable < StandardError; end
  end

  def test_failure_text_uses_the_unqualified_type_name
    assert_equal "PriceUnavailable: no price", H.failure_text(Deep::PriceUnavailable.new("no price"))
    assert_equal "RuntimeError: boom", H.failure_text(RuntimeError.new("boom"))
    assert_equal "Error: anon", H.failure_text(Class.new(StandardError).new("anon"))
  end

  def test_short_strings_over_255_bytes_are_refused_not_truncated
    assert H.check_short_strings!(message_id: "a" * 255)
    error = assert_raises(Acemq::ShortStringTooLong) { H.check_short_strings!(correlation_id: "\u00e9" * 128) }
    assert_match(/256 bytes/, error.message)
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
