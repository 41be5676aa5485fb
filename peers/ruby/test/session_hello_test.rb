# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "stringio"
require "tmpdir"
require "acemq_peer/session"

# hello's TLS part: the capability, and a tls that cannot work refused at hello.
class SessionHelloTest < Minitest::Test
  def setup
    @session = AcemqPeer::Session.new(StringIO.new, StringIO.new, Logger.new(File::NULL))
  end

  def hello(**fields)
    @session.send(:hello, { "protocols" => [1, 2], "amqp_url" => "amqps://u:p@127.0.0.1:5671/" }.merge(fields))
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
