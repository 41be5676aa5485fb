# frozen_string_literal: true

require_relative "test_helper"
require "pathname"
require "yaml"
require "acemq_peer/knobs"

# Protocol 4's policy values on the binding's policy types, and those types against the
# catalogue's `policies:` (only the knobs: the harness resolves mutants and profiles).
class KnobsTest < Minitest::Test
  Knobs = AcemqPeer::Knobs
  TYPES = { "requester" => Acemq::Internal::RequesterPolicy, "responder" => Acemq::Internal::ResponderPolicy }.freeze

  def self.policies
    Pathname(__dir__).expand_path.ascend do |dir|
      file = dir / "catalogue" / "catalogue.yaml"
      return YAML.safe_load(file.read).fetch("policies") if file.file?
    end
    raise "catalogue/catalogue.yaml not found above #{__dir__}"
  end

  POLICIES = policies

  def test_values_are_set_member_by_member_in_the_members_type
    policy = Knobs.requester_policy({ "write_header_address" => false, "match_replies_by" => "oldest_waiter",
                                      "default_timeout_ms" => 10_000, "native_address" => "stale" })
    assert_equal({ write_header_address: false, match_replies_by: :oldest_waiter, default_timeout_ms: 10_000,
                   native_address: :stale }, policy.changes)
    policy = Knobs.responder_policy({ "read_order" => %w[native header], "strip_prefix" => "x-", "attempt_base" => 0 })
    assert_equal({ read_order: %i[native header], strip_prefix: :"x-", attempt_base: 0 }, policy.changes)
    # No policy (an older protocol) and {} are the binding as it ships.
    assert_equal Acemq::Internal::RequesterPolicy::DEFAULT, Knobs.requester_policy(nil)
    assert_equal Acemq::Internal::ResponderPolicy::DEFAULT, Knobs.responder_policy({})
  end

  # Every value the catalogue lists for a knob, as JSON brings it, changes that member only.
  def test_every_catalogue_value_of_every_knob_is_taken
    TYPES.each do |side, type|
      POLICIES.fetch(side).each do |knob, spec|
        next unless type.members.include?(knob.to_sym)

        values = spec["values"] || ([true, false].include?(spec["default"]) ? [true, false] : [spec["default"]])
        values.each do |value|
          changes = Knobs.policy(side.to_sym, { knob => value }).changes
          assert_empty changes.keys - [knob.to_sym], "#{side}.#{knob} = #{value.inspect}"
        end
      end
    end
  end

  def test_an_unknown_knob_or_a_value_the_member_cannot_take_is_refused_naming_it
    {
      { "write_header_adress" => false } => "write_header_adress",
      { "read_order" => %w[header] } => "read_order", # a responder knob
      { "count_timeouts" => "no" } => "count_timeouts",
      { "match_replies_by" => "bogus" } => "match_replies_by",
      { "default_timeout_ms" => 1.5 } => "default_timeout_ms",
      { "match_replies_by" => nil } => "match_replies_by"
    }.each do |values, knob|
      error = assert_raises(ArgumentError, values.inspect) { Knobs.requester_policy(values) }
      assert_includes error.message, knob, values.inspect
    end
    error = assert_raises(ArgumentError) { Knobs.responder_policy({ "read_order" => "header" }) }
    assert_includes error.message, "read_order"
    assert_raises(ArgumentError) { Knobs.responder_policy(%w[read_order]) }
  end

  def test_the_knobs_are_the_members_of_the_policy_types
    assert_equal({ requester: Acemq::Internal::RequesterPolicy.members.map(&:to_s),
                   responder: Acemq::Internal::ResponderPolicy.members.map(&:to_s) }, Knobs.names)
  end

  # A knob protocol 4 leaves out keeps the catalogue's default: the binding's must be it.
  def test_every_member_is_a_catalogue_knob_at_its_default
    TYPES.each do |side, type|
      type.members.each do |member|
        spec = POLICIES.fetch(side)[member.to_s]
        refute_nil spec, "#{side}.#{member} is no catalogue knob"
        assert_equal Knobs.typed(type::DEFAULT[member], spec["default"]), type::DEFAULT[member], "#{side}.#{member}"
      end
    end
  end

  # Bunny writes every Integer as l (signed 64-bit), so narrow_int_header cannot be true.
  def test_only_what_bunny_cannot_write_is_unreachable
    assert_equal({ "narrow_int_header" => [true] }, Knobs::UNREACHABLE)
    assert_equal "l", AMQ::Protocol::TableValueEncoder.encode(1)[0]
  end

  def test_the_public_api_has_no_policy
    assert_raises(NameError) { Acemq::RequesterPolicy }
    assert_raises(NameError) { Acemq::ResponderPolicy }
    refute Acemq::Requester.instance_method(:initialize).parameters.flatten.include?(:policy)
  end
end
