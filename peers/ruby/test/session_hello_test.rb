# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "stringio"
require "tmpdir"
require "acemq_peer/session"

# hello's offer by protocol version; its TLS part: the capability, and a tls that cannot
# work refused at hello.
class SessionHelloTest < Minitest::Test
  def setup
    @session = AcemqPeer::Session.new(StringIO.new, StringIO.new, Logger.new(File::NULL))
  end

  def hello(**fields)
    @session.send(:hello, { "protocols" => [1, 2], "amqp_url" => "amqps://u:p@127.0.0.1:5671/" }.merge(fields))
  end

  def test_version_4_names_the_policy_members_as_knobs_and_no_catalogue_name
    answer = hello("protocols" => [1, 2, 3, 4])
    assert_equal 4, answer[:protocol]
    assert_equal({ requester: Acemq::Internal::RequesterPolicy.members.map(&:to_s),
                   responder: Acemq::Internal::ResponderPolicy.members.map(&:to_s) }, answer[:knobs])
    assert_equal({ "narrow_int_header" => [true] }, answer[:unreachable])
    refute answer.key?(:profiles)
    refute answer.key?(:mutants)
  end

  # An older version names profiles and mutants: this adapter knows none but the binding as it ships.
  def test_an_older_version_offers_the_binding_as_it_ships
    answer = hello("protocols" => [1, 2, 3])
    assert_equal [3, ["current"], []], answer.values_at(:protocol, :profiles, :mutants)
    refute answer.key?(:knobs)
  end

  def test_tls_is_a_capability
    assert_equal %w[request respond gather tls load], hello[:capabilities]
  end

  def test_a_tls_that_cannot_work_fails_hello
    assert_raises(ArgumentError) { hello("tls" => {}) }
    error = assert_raises(Acemq::ConnectionSettingsError) { hello("tls" => { "ca_file" => File.join(Dir.tmpdir, "no-such-ca.pem") }) }
    assert_includes error.message, "cannot read the CA file"
  end
end
