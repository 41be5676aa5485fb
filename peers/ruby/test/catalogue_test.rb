# frozen_string_literal: true

require_relative "test_helper"
require "pathname"
require "yaml"
require "acemq_peer/catalogue"

# The policies and the adapter's name table against catalogue/catalogue.yaml.
class CatalogueTest < Minitest::Test
  Catalogue = AcemqPeer::Catalogue
  POLICY_TYPES = { "requester" => Acemq::Internal::RequesterPolicy, "responder" => Acemq::Internal::ResponderPolicy }.freeze

  def self.catalogue
    Pathname(__dir__).expand_path.ascend do |dir|
      file = dir / "catalogue" / "catalogue.yaml"
      return YAML.safe_load(file.read) if file.file?
    end
    raise "catalogue/catalogue.yaml not found above #{__dir__}"
  end

  CATALOGUE = catalogue

  # Mutants the catalogue says only some clients can have (only_where) and this adapter
  # does not offer, and the knobs only they use: Bunny cannot write what they need
  # (narrow-int-header: B or u). Any other catalogue mutant or knob missing still fails.
  UNOFFERED = CATALOGUE.fetch("mutants").select { |name, spec| spec["only_where"] && !Catalogue::MUTANTS.key?(name) }
  UNOFFERED_KNOBS = begin
    offered = CATALOGUE.fetch("mutants").reject { |name, _| UNOFFERED.key?(name) }
    used = offered.values.flat_map { |spec| spec["policy"].keys }
    UNOFFERED.values.flat_map { |spec| spec["policy"].keys } - used
  end

  # A catalogue value as this binding spells it: symbols for choices and orders.
  def ruby_value(_knob, value)
    case value
    when Array then value.map(&:to_sym)
    when String then value.to_sym
    else value
    end
  end

  def test_policy_fields_and_defaults_are_the_catalogues
    POLICY_TYPES.each do |side, type|
      knobs = CATALOGUE.fetch("policies").fetch(side).reject { |knob, _| UNOFFERED_KNOBS.include?(knob) && !type.members.include?(knob.to_sym) }
      assert_equal knobs.keys.map(&:to_sym), type.members, side
      knobs.each do |knob, spec|
        assert_equal ruby_value(knob, spec["default"]), type::DEFAULT[knob.to_sym], "#{side}.#{knob}"
      end
    end
  end

  def test_every_choice_the_catalogue_lists_is_accepted_and_others_refused
    POLICY_TYPES.each do |side, type|
      CATALOGUE.fetch("policies").fetch(side).each do |knob, spec|
        next unless spec["values"] && type.members.include?(knob.to_sym)

        spec["values"].each do |value|
          value = ruby_value(knob, value)
          assert type.build(knob.to_sym => value), "#{side}.#{knob} = #{value}"
        end
      end
      field = type.members.find { |m| type::CHOICES[m].is_a?(Array) && !type::CHOICES[m].include?(true) }
      assert_raises(ArgumentError) { type.build(field => :typo) }
      assert_raises(ArgumentError) { type.build(no_such_field: true) }
    end
  end

  def test_the_public_api_has_no_policy
    assert_raises(NameError) { Acemq::RequesterPolicy }
    assert_raises(NameError) { Acemq::ResponderPolicy }
    refute Acemq::Requester.instance_method(:initialize).parameters.flatten.include?(:policy)
  end

  def test_mutants_match_the_catalogue_name_side_and_values
    mutants = CATALOGUE.fetch("mutants").reject { |name, _| UNOFFERED.key?(name) }
    assert_equal mutants.keys.sort, Catalogue.mutants.sort
    mutants.each do |name, spec|
      side, fields = Catalogue::MUTANTS.fetch(name)
      assert_equal spec["side"], side.to_s, name
      assert_equal spec["policy"].keys.map(&:to_sym), fields.keys, name
      spec["policy"].each do |knob, value|
        assert_equal ruby_value(knob, value), fields[knob.to_sym], "#{name}: #{knob}"
      end
    end
  end

  # Only narrow-int-header may be left out: Bunny writes every Integer as l (signed 64-bit).
  def test_only_an_only_where_mutant_may_be_left_out
    assert_equal %w[narrow-int-header], UNOFFERED.keys
    assert_equal %w[narrow_int_header], UNOFFERED_KNOBS
    assert_equal "l", AMQ::Protocol::TableValueEncoder.encode(1)[0]
  end

  def test_profiles_are_the_ones_the_catalogue_lists_for_ruby
    profiles = CATALOGUE.fetch("profiles").select { |name, p| name == "current" || p["peers"].key?("ruby") }
    assert_equal profiles.keys.sort, Catalogue.profiles.sort
    profiles.each do |name, profile|
      settings = profile["peers"].fetch("ruby", {}) || {}
      expected = settings.to_h { |end_name, fields| [end_name.to_sym, fields.to_h { |k, v| [k.to_sym, ruby_value(k, v)] }] }
      assert_equal expected, Catalogue::PROFILES.fetch(name), name
    end
  end

  def test_resolution_by_end_and_unknown_names
    assert_equal Acemq::Internal::RequesterPolicy::DEFAULT, Catalogue.requester_policy(nil, nil)
    assert_equal({ write_native_address: false, write_header_address: false },
                 Catalogue.requester_policy("0.3.0", "native-only").changes)
    assert_equal({ gather_shortfall: :resolve }, Catalogue.requester_policy("current", "shortfall-resolves").changes)
    # A mutant of the other side leaves this end as current.
    assert_equal({}, Catalogue.responder_policy("current", "native-only").changes)
    assert_equal({ read_order: %i[header] }, Catalogue.responder_policy("0.3.0", nil).changes)
    assert_equal({ answered_timing: :after_confirm }, Catalogue.responder_policy(nil, "answered-after-publish").changes)
    assert_equal({ request_deadline: :late }, Catalogue.requester_policy(nil, "late-timeout").changes)
    assert_equal({ pass_spec_headers: false }, Catalogue.responder_policy(nil, "hides-acemq-headers").changes)
    error = assert_raises(ArgumentError) { Catalogue.requester_policy(nil, "native-onyl") }
    assert_includes error.message, "native-only"
    error = assert_raises(ArgumentError) { Catalogue.responder_policy("0.3", nil) }
    assert_includes error.message, "0.3.0"
  end
end
