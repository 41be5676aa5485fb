# frozen_string_literal: true

require "amq/protocol/table_value_encoder"

module Acemq
  # A header value to be written as an AMQP byte array (field type x).
  #
  # amq-protocol writes every String as a long string and has no byte-array type, so the
  # encoder learns this one class. Only a requester policy with header_address_as_bytes
  # writes it: the spec's own headers are long strings (RR-2).
  ByteArray = Struct.new(:bytes)

  # Teaches AMQ::Protocol::TableValueEncoder to write Acemq::ByteArray as type x.
  module ByteArrayEncoding
    def encode(value)
      return super unless value.is_a?(ByteArray)

      bytes = value.bytes.b
      String.new("x", encoding: Encoding::BINARY) << [bytes.bytesize].pack("N") << bytes
    end

    def field_value_size(value)
      value.is_a?(ByteArray) ? 1 + 4 + value.bytes.bytesize : super
    end
  end

  AMQ::Protocol::TableValueEncoder.singleton_class.prepend(ByteArrayEncoding)
end
