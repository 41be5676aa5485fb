# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "openssl"
require "socket"
require "tmpdir"
require "fileutils"

# Acemq::Connection's TLS settings against a local TLS listener that completes the
# handshake and hangs up: enough to see whether the client trusted the certificate.
class ConnectionTest < Minitest::Test
  def setup
    @dir = Dir.mktmpdir("acemq-tls-test")
    @ca, @ca_key = authority("ca")
    @ca_file = write_pem("ca.pem", @ca)
    @servers = []
  end

  def teardown
    @servers.each(&:close)
    FileUtils.remove_entry(@dir)
  end

  def test_the_chain_is_verified_against_the_ca_file_only
    port = listener(server_certificate("127.0.0.1"))
    other, = authority("other")
    error = assert_raises(Acemq::ConnectionFailed) { connect(port, write_pem("other.pem", other)) }
    assert_match(/\ATLS connection to 127\.0\.0\.1:#{port} failed: .*certificate verify failed/, error.message)
    refute_includes error.message, "secret"
    # The right CA gets past TLS; the listener then hangs up in the AMQP handshake.
    error = assert_raises(StandardError) { connect(port, @ca_file) }
    refute_kind_of Acemq::ConnectionFailed, error
    refute_kind_of OpenSSL::SSL::SSLError, error
  end

  def test_the_host_name_is_verified
    port = listener(server_certificate("127.0.0.2"))
    error = assert_raises(Acemq::ConnectionFailed) { connect(port, @ca_file) }
    assert_match(/hostname .*127\.0\.0\.1.* does not match/, error.message)
  end

  def test_settings_that_cannot_work_are_refused
    error = assert_raises(Acemq::ConnectionSettingsError) { Acemq::Connection.tls_options("amqp://u:p@127.0.0.1/", @ca_file) }
    assert_includes error.message, "amqps://"
    empty = File.join(@dir, "empty.pem").tap { |path| File.write(path, "no certificate\n") }
    error = assert_raises(Acemq::ConnectionSettingsError) { Acemq::Connection.tls_options("amqps://u:p@127.0.0.1/", empty) }
    assert_includes error.message, "holds no PEM certificate"
    error = assert_raises(Acemq::ConnectionSettingsError) { Acemq::Connection.tls_options("amqps://u:p@127.0.0.1/", File.join(@dir, "none.pem")) }
    assert_includes error.message, "cannot read the CA file"
  end

  # RR-20: the nodes of one cluster, tried in the order given (Bunny shuffles them unless told).
  def test_a_list_of_urls_is_one_session_on_every_node_in_order
    urls = (1..5).map { |n| "amqp://g:p@n#{n}:567#{n}/v" }
    settings, = Acemq::Connection.settings(urls)
    assert_equal [%w[g p v], false], [settings.values_at(:user, :pass, :vhost), settings.key?(:host)]
    session = Bunny.new(settings, Acemq::Connection::RECOVERY.merge(logger: Logger.new(File::NULL)))
    assert_equal (1..5).map { |n| "n#{n}:567#{n}" }, session.instance_variable_get(:@addresses)
    assert_equal ["amqp://g:p@n1/v"], Acemq::Connection.settings(["amqp://g:p@n1/v"])
    error = assert_raises(Acemq::ConnectionSettingsError) { Acemq::Connection.settings(%w[amqp://g:p@n1/v amqp://g:x@n2/v]) }
    refute_includes error.message, "x@"
    assert_raises(Acemq::ConnectionSettingsError) { Acemq::Connection.open([]) }
  end

  private

  def connect(port, ca_file)
    Acemq::Connection.open("amqps://guest:secret@127.0.0.1:#{port}/", ca_file: ca_file, logger: Logger.new(File::NULL),
                                                                      automatically_recover: false, connection_timeout: 5)
  end

  def authority(name)
    key = OpenSSL::PKey::EC.generate("prime256v1")
    cert = certificate(name, key, key) do |c, ext|
      c.add_extension(ext.create_extension("basicConstraints", "CA:TRUE", true))
      c.add_extension(ext.create_extension("keyUsage", "keyCertSign", true))
    end
    [cert, key]
  end

  def server_certificate(ip)
    key = OpenSSL::PKey::EC.generate("prime256v1")
    cert = certificate("broker", key, @ca_key, issuer: @ca) do |c, ext|
      c.add_extension(ext.create_extension("subjectAltName", "DNS:localhost,IP:#{ip}"))
      c.add_extension(ext.create_extension("extendedKeyUsage", "serverAuth"))
    end
    [cert, key]
  end

  def certificate(name, key, signing_key, issuer: nil)
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = rand(1 << 62)
    cert.subject = OpenSSL::X509::Name.parse("/CN=#{name}")
    cert.issuer = issuer ? issuer.subject : cert.subject
    cert.public_key = key
    cert.not_before = Time.now - 3600
    cert.not_after = Time.now + 3600
    ext = OpenSSL::X509::ExtensionFactory.new(issuer || cert, cert)
    yield cert, ext
    cert.sign(signing_key, OpenSSL::Digest.new("SHA256"))
  end

  def write_pem(name, cert)
    File.join(@dir, name).tap { |path| File.write(path, cert.to_pem) }
  end

  def listener((cert, key))
    context = OpenSSL::SSL::SSLContext.new
    context.cert = cert
    context.key = key
    tcp = TCPServer.new("127.0.0.1", 0)
    server = OpenSSL::SSL::SSLServer.new(tcp, context)
    server.start_immediately = false
    @servers << server
    Thread.new do
      loop do
        socket = server.accept
        Thread.new do
          socket.accept
        rescue OpenSSL::SSL::SSLError, SystemCallError
          nil
        ensure
          socket.close
        end
      end
    rescue IOError, SystemCallError
      nil
    end
    tcp.addr[1]
  end
end
