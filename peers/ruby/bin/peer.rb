#!/usr/bin/env ruby
# frozen_string_literal: true

# The acemq-interop peer: docs/peer-protocol.md on stdin/stdout, driving the acemq binding
# (lib/acemq) through lib/acemq_peer. Nothing but protocol lines goes to stdout; the log
# goes to stderr (ACEMQ_LOG_LEVEL=DEBUG for more).

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "logger"
require "acemq_peer/session"

protocol = $stdout
protocol.sync = true
# Whatever a library prints goes to the log: Bunny's recovery `puts` a queue it could not
# declare again, which would be a broken line of the protocol.
$stdout = $stderr
log = Logger.new($stderr, level: ENV.fetch("ACEMQ_LOG_LEVEL", "WARN"), progname: "acemq-ruby")
AcemqPeer::Session.new($stdin, protocol, log).run
exit!(0)
