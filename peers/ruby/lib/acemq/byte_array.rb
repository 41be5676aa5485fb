# frozen_string_literal: true

require "amq/protocol/table_value_encoder"
require "amq/protocol/table_value_decoder"

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

  # A header value that arrived as an AMQP byte array (field type x). amq-protocol decodes
  # x and S to the same binary String; this subclass keeps the difference, which only a
  # non-default responder policy (bytes_address: :ignore) looks at. It is a String in every
  # other respect, so every reader treats both alike (RR-2).
  class ReceivedByteArray < String; end

  # Teaches AMQ::Protocol's table decoding to hand a byte array back as ReceivedByteArray.
  # Its decoders read a value's type, then call decode_string for both S and x: the type
  # just read (per thread: Bunny's reader threads decode frames) says which it was.
  module ByteArrayDecoding
    def decode_value_type(data, offset)
      type, next_offset = super
      Thread.current[:acemq_byte_array_value] = type == AMQ::Protocol::TypeConstants::TYPE_BYTE_ARRAY
      [type, next_offset]
    end

    def decode_string(data, offset)
      value, next_offset = super
      return [value, next_offset] unless Thread.current[:acemq_byte_array_value]

      Thread.current[:acemq_byte_array_value] = false
      [ReceivedByteArray.new(value), next_offset]
    end
  end

  AMQ::Protocol::TableValueDecoder.singleton_class.prepend(ByteArrayDecoding)
end
