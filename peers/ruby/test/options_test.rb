# frozen_string_literal: true

require_relative "test_helper"

class OptionsTest < Minitest::Test
  def test_profiles
    current = Acemq::Profile.fetch(nil)
    assert_equal "current", current.name
    assert current.write_header && current.write_native
    assert_equal %i[header native], current.read_order
    old = Acemq::Profile.fetch("0.3.0")
    assert old.write_header
    refute old.write_native
    assert_equal %i[header], old.read_order
    assert_equal current.to_h.merge(name: "0.5.0"), Acemq::Profile.fetch("0.5.0").to_h
    assert_raises(Acemq::ConfigurationError) { Acemq::Profile.fetch("0.1.0") }
  end

  def test_every_catalogue_mutant_is_known_on_its_side
    assert_equal 30, Acemq::Mutants::ALL.uniq.size
    assert_equal %w[no-early-resolve], Acemq::Mutants::REQUESTER & %w[no-early-resolve classic-dlq]
    assert_equal "native-only", Acemq::Mutants.check!("native-only", :requester)
    assert_equal "no-strip", Acemq::Mutants.check!("no-strip", :responder)
    assert_nil Acemq::Mutants.check!(nil, :responder)
    assert_raises(Acemq::ConfigurationError) { Acemq::Mutants.check!("no-strip", :requester) }
    assert_raises(Acemq::ConfigurationError) { Acemq::Mutants.check!("bogus", :responder) }
  end
end
