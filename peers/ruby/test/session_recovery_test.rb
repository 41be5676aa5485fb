# frozen_string_literal: true

require_relative "test_helper"
require "logger"
require "stringio"
require "minitest/mock"
require "acemq_peer/session"

# Protocol 5 in the adapter (no broker): each role's connection as the command names it,
# recovering only from version 5 on; the binding's loss and recovery as events.
class SessionRecoveryTest < Minitest::Test
  REASON = "320 CONNECTION_FORCED - Closed via management plugin"

  def setup
    @out = StringIO.new
    @session = AcemqPeer::Session.new(StringIO.new, @out, Logger.new(File::NULL))
  end

  def hello(*protocols, **fields)
    @session.send(:hello, { "protocols" => protocols, "amqp_url" => "amqp://g:p@n1:5672/v" }.merge(fields.transform_keys(&:to_s)))
  end

  # [urls, options] Acemq::Connection.open was given for a role opened with command.
  def opened(command, **keywords)
    calls = []
    Acemq::Connection.stub(:open, ->(urls, **options) { calls << [urls, options]; Object.new }) do
      @session.send(:connect, "q", :requester, command, **keywords)
    end
    calls.first
  end

  def test_version_5_names_the_connection_and_lets_it_recover_on_the_nodes_given
    assert_equal 5, hello(1, 2, 3, 4, 5)[:protocol]
    urls, options = opened({ "connection_name" => "c0001.q", "amqp_urls" => %w[amqp://g:p@n2:5672/v amqp://g:p@n1:5672/v] })
    assert_equal %w[amqp://g:p@n2:5672/v amqp://g:p@n1:5672/v], urls
    assert_equal "c0001.q", options[:connection_name]
    refute options.key?(:automatically_recover), "Acemq::Connection.open's recovery applies"
    # No amqp_urls: hello's amqp_url.
    assert_equal [%w[amqp://g:p@n1:5672/v], "c0001.q"], opened({ "connection_name" => "c0001.q" }).then { |u, o| [u, o[:connection_name]] }
    # A raw client does not recover.
    assert_equal [false, false], opened({}, recover: false).last.values_at(:automatically_recover, :recover_from_connection_close)
    assert_raises(ArgumentError) { opened({ "amqp_urls" => [] }) }
  end

  def test_before_version_5_a_connection_neither_recovers_nor_reads_the_new_fields
    assert_equal 4, hello(1, 2, 3, 4)[:protocol]
    urls, options = opened({ "connection_name" => "c0001.q", "amqp_urls" => %w[amqp://g:p@n2:5672/v] })
    assert_equal [%w[amqp://g:p@n1:5672/v], "acemq-ruby q"], [urls, options[:connection_name]]
    assert_equal [false, false], options.values_at(:automatically_recover, :recover_from_connection_close)
  end

  def test_hello_5_reports_the_recovery_knobs
    knobs = hello(1, 2, 3, 4, 5)[:knobs]
    assert_includes knobs[:requester], "on_connection_lost"
    assert_includes knobs[:requester], "recover_connection"
    assert_includes knobs[:responder], "recover_connection"
    assert_includes knobs[:responder], "ack_timing"
  end

  def test_the_bindings_loss_and_recovery_are_the_connection_lost_and_recovered_events
    hello(1, 2, 3, 4, 5)
    build = @session.send(:build_responder, "r", { "name" => "r", "queue" => "svc", "policy" => { "recover_connection" => false } })
    responder = build.call(nil)
    assert_equal false, responder.instance_variable_get(:@policy).recover_connection
    responder.send(:emit, :connection_lost, reason: REASON)
    responder.send(:emit, :recovered, queue: "svc")
    assert_equal [{ "event" => "connection_lost", "responder" => "r", "reason" => REASON },
                  { "event" => "recovered", "responder" => "r" }], @out.string.lines.map { JSON.parse(_1) }
  end
end
