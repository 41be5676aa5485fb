# frozen_string_literal: true

require "acemq/_internal"

module AcemqPeer
  # Protocol 4's policy values, set on the binding's own policy types. The adapter holds no
  # catalogue: the members of RequesterPolicy and ResponderPolicy are named as the
  # catalogue's knobs, so hello lists them and a command's values go to the member of that
  # name; the type's `build` refuses a value outside the member's choices.
  module Knobs
    TYPES = { requester: Acemq::Internal::RequesterPolicy, responder: Acemq::Internal::ResponderPolicy }.freeze

    # What Bunny cannot put on the wire whatever a policy says: its table encoder writes
    # every Integer as a signed 64-bit `l`, never B, u or i (so the policy has no such member).
    UNREACHABLE = { "narrow_int_header" => [true] }.freeze

    module_function

    # hello's "knobs": gatherer knobs are requester ones.
    def names = TYPES.transform_values { |type| type.members.map(&:to_s) }

    def requester_policy(values) = policy(:requester, values)

    def responder_policy(values) = policy(:responder, values)

    # The binding's default policy of that side with each knob of `values` (a command's
    # "policy"; nil or {}: the binding as it ships) set on the member of that name.
    def policy(side, values)
      type = TYPES.fetch(side)
      raise ArgumentError, "policy must be an object, not #{values.inspect}" unless values.nil? || values.is_a?(Hash)

      fields = (values || {}).to_h do |knob, value|
        member = knob.to_sym
        raise ArgumentError, "unknown #{side} policy knob #{knob.inspect}" unless type.members.include?(member)

        [member, typed(type::DEFAULT[member], value)]
      end
      type.build(**fields)
    end

    # A JSON value in the member's own type, as its default shows it: the binding spells a
    # choice as a symbol and read_order as a list of them. Anything else (a boolean, an
    # integer, a value of the wrong kind) goes as it is, for `build` to accept or refuse.
    def typed(default, value)
      case default
      when Symbol then value.is_a?(String) ? value.to_sym : value
      when Array then value.is_a?(Array) ? value.map { |item| typed(default.first, item) } : value
      else value
      end
    end
  end
end
