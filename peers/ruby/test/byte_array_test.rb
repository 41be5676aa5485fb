# frozen_string_literal: true

require_relative "test_helper"

class ByteArrayTest < Minitest::Test
  def test_strings_are_long_strings_and_byte_arrays_are_type_x
    table = AMQ::Protocol::Table.encode("a" => "q", "b" => Acemq::ByteArray.new("q"))
    assert_equal "\x01aS\x00\x00\x00\x01q\x01bx\x00\x00\x00\x01q".b, table[4..]
    assert_equal({ "a" => "q", "b" => "q" }, AMQ::Protocol::Table.decode(table))
  end

  def test_integers_are_signed_64_bit
    table = AMQ::Protocol::Table.encode("n" => 1)
    assert_equal "l", table[6]
  end
end
