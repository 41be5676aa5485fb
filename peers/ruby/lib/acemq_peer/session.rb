# frozen_string_literal: true

require "json"
require "securerandom"
require "bunny"
require "acemq"
require "acemq/_internal"
require_relative "knobs"
require_relative "load"
require_relative "outcome"
require_relative "raw"

module AcemqPeer
  # The error the `fail` behaviour raises, so the failure text is the same in every language.
  class ScenarioFailure < StandardError; end

  # Serves one peer-protocol session (docs/peer-protocol.md, versions 1 to 5): commands
  # on input, one JSON line per answer or event on output, the log elsewhere.
  class Session
    # 3: type, the closed outcome, unmatched with both ids; 4: policy values instead of
    # profile and mutant names, and a responder without events; 5: each role's connection
    # named and on a list of nodes, recovered by Bunny, the connection_lost outcome and the
    # recovered event.
    PROTOCOLS = [1, 2, 3, 4, 5].freeze
    # From this version on a binding role's connection recovers (RR-20).
    RECOVERY_PROTOCOL = 5
    NAME = "ruby"
    DRAIN_SECONDS = 10
    # How long requester.close waits for the answers of the calls its close ended.
    ANSWER_GRACE = 5
    # A command's key (a symbol: never a JSON field) naming the requester its answer is owed to.
    OWED = :owed_to

    OPS = {
      "hello" => :hello,
      "requester.open" => :requester_open,
      "requester.close" => :requester_close,
      "request" => :request,
      "gather" => :gather,
      "responder.start" => :responder_start,
      "responder.stop" => :responder_stop,
      "counters" => :counters,
      "load" => :load,
      "shutdown" => :shutdown
    }.freeze

    def initialize(input, output, log)
      @input = input
      @output = output
      @log = log
      @write_lock = Mutex.new
      @state_lock = Mutex.new
      @requesters = {}
      @responders = {}
      @connections = {}
      @threads = []
      @amqp_url = nil
      @ca_file = nil
      @protocol = nil
      @answers = OwedAnswers.new
    end

    def run
      @input.each_line do |line|
        line = line.strip
        next if line.empty?

        command = parse(line)
        next unless command

        @threads << Thread.new { dispatch(command) }
        @threads.select!(&:alive?)
      end
      drain
      close_all
    end

    private

    # Commands already read still get their answers, within a bound.
    def drain
      deadline = now + DRAIN_SECONDS
      @threads.each { |thread| thread.join([deadline - now, 0].max) }
    end

    def parse(line)
      command = JSON.parse(line)
      return command if command.is_a?(Hash) && command["id"].is_a?(Integer)

      @log.error("not a command: #{line}")
      nil
    rescue JSON::ParserError => e
      @log.error("unreadable line (#{e.message}): #{line}")
      nil
    end

    def dispatch(command)
      id = command["id"]
      op = command["op"]
      handler = OPS[op]
      raise ArgumentError, "unknown op #{op.inspect}" unless handler
      raise ArgumentError, "#{op} is protocol 2; this session speaks 1" if op == "load" && @protocol == 1

      result = send(handler, command)
      write({ id: id, ok: true }.merge(result || {}))
      finish if op == "shutdown"
    rescue Acemq::Error, ArgumentError, KeyError, Bunny::Exception, Timeout::Error, SystemCallError => e
      @log.warn("#{op} #{id}: #{e.class}: #{e.message}")
      write({ id: id, ok: false, error: "#{e.class.name.split('::').last}: #{e.message}" })
    rescue StandardError => e
      @log.error("#{op} #{id}: #{e.class}: #{e.message}\n#{e.backtrace&.first(5)&.join("\n")}")
      write({ id: id, ok: false, error: "#{e.class}: #{e.message}" })
    ensure
      # The answer of a call that ended is out: its requester's close may answer now.
      @answers.paid(command[OWED]) if command&.key?(OWED)
    end

    # The highest version both sides speak; a bare `protocol: 1` hello (or none) is version 1.
    def hello(command)
      offered = command["protocols"] || [command.fetch("protocol", 1)]
      protocol = (offered & PROTOCOLS).max
      raise ArgumentError, "this peer speaks protocols #{PROTOCOLS.join(', ')}, not #{offered.inspect}" unless protocol

      url = command.fetch("amqp_url")
      ca_file = tls_ca_file(command, url)
      @protocol = protocol
      @amqp_url = url
      @ca_file = ca_file
      {
        protocol: protocol, peer: NAME, language: "Ruby",
        binding: "acemq-ruby #{Acemq::VERSION}", client: "bunny #{Bunny::VERSION}",
        # TLS is additive to every version: every connection this session opens goes through connect.
        capabilities: protocol >= 2 ? %w[request respond gather tls load] : %w[request respond gather tls]
      }.merge(offer(protocol))
    end

    # Version 4 names the knobs the adapter can set; older versions name profiles and
    # mutants, which this adapter no longer knows: it offers the binding as it ships.
    def offer(protocol)
      return { knobs: Knobs.names, unreachable: Knobs::UNREACHABLE } if protocol >= 4

      { profiles: ["current"], mutants: [] }
    end

    # hello's tls.ca_file (nil on a plain run), checked now (with the URL's scheme) so a
    # bad one fails hello, not every later command.
    def tls_ca_file(command, url)
      tls = command["tls"] or return nil
      ca_file = tls.is_a?(Hash) && tls["ca_file"]
      raise ArgumentError, "hello's tls needs a ca_file" unless ca_file.is_a?(String) && !ca_file.empty?

      Acemq::Connection.tls_options(url, ca_file)
      ca_file
    end

    def requester_open(command)
      name = command.fetch("name")
      requester = open_requester(name, command)
      requester.on(:unmatched) do |e|
        event("unmatched", requester: name, correlation_id: e[:correlation_id], response_message_id: e[:response_message_id])
      end
      recovery_events(:requester, name, requester)
      @state_lock.synchronize { @requesters[name] = requester }
      { reply_queue: requester.reply_queue }
    end

    # A requester on a connection of its own, with the command's policy values ("profile"
    # and "mutant" are only for the harness's log).
    def open_requester(name, command)
      policy = Knobs.requester_policy(command["policy"])
      claim_name(name)
      claimed = true
      requester = Acemq::Internal::Requester.new(connect(name, :requester, command), policy)
      requester.on(:channel_closed) { |e| lost(:requester, name, e[:reason]) }
      requester.open
    rescue StandardError
      release(name) if claimed
      raise
    end

    def requester_close(command)
      name = command.fetch("name")
      requester = @state_lock.synchronize { @requesters.delete(name) } or raise ArgumentError, "no requester #{name.inspect}"
      # The binding's close returns once every pending call has ended; their answers are
      # written before this one.
      requester.close
      @answers.await(name, ANSWER_GRACE)
      release(name)
      {}
    end

    def request(command)
      name = command.fetch("requester")
      requester = find(@requesters, name)
      raise ArgumentError, "missing field \"body\"" unless command.key?("body")

      id = command["message_id"] || SecureRandom.uuid
      options = { exchange: command["exchange"] || "", routing_key: command.fetch("routing_key"), message_id: id }
      # Absent stays absent: the binding's own defaults apply (RR-9's 30 s above all).
      %w[correlation_id headers type].each { |key| options[key.to_sym] = command[key] if command.key?(key) }
      options[:timeout] = seconds(command["timeout_ms"]) if command.key?("timeout_ms")
      started = now
      outcome = owing(command, name) do
        { outcome: "reply", reply: requester.request(command["body"], **options) }
      rescue StandardError => e
        CallOutcome.of_request(e, protocol: @protocol.to_i) or raise # anything else is a refusal (ok: false)
      end
      outcome.merge(request_id: id, elapsed_ms: elapsed_ms(started))
    end

    def gather(command)
      name = command.fetch("requester")
      requester = find(@requesters, name)
      id = SecureRandom.uuid
      options = { request_id: id }
      %w[expected_reply_count correlation_id type].each { |key| options[key.to_sym] = command[key] if command.key?(key) }
      options[:timeout] = seconds(command["timeout_ms"]) if command.key?("timeout_ms")
      mode = command.fetch("mode", "multi")
      raise ArgumentError, "unknown gather mode #{mode.inspect}" unless %w[multi publish].include?(mode)

      started = now
      outcome = owing(command, name) do
        replies = if mode == "multi"
                    requester.send_request_multi(command["body"], endpoint: command.fetch("endpoint"), **options)
                  else
                    requester.publish_request(command["body"], exchange: command.fetch("exchange"), **options)
                  end
        { outcome: "replies", replies: replies }
      rescue StandardError => e
        CallOutcome.of_gather(e, protocol: @protocol.to_i) or raise
      end
      outcome.merge(request_id: id, elapsed_ms: elapsed_ms(started))
    end

    # Runs a binding call; from its end (whatever it raised) until dispatch has written the
    # command's answer, the answer is owed, and requester.close of that requester waits for it.
    def owing(command, requester_name)
      yield
    ensure
      @answers.owe(requester_name)
      command[OWED] = requester_name
    end

    def responder_start(command)
      name = command.fetch("name")
      build = build_responder(name, command)
      claim_name(name)
      claimed = true
      responder = build.call(connect(name, :responder, command, recover: command.fetch("client", "binding") == "binding"))
      # Registered before start, so counters reads find it while a backlog is consumed.
      @state_lock.synchronize { @responders[name] = responder }
      responder.start
      {}
    rescue StandardError
      if claimed
        @state_lock.synchronize { @responders.delete(name) }
        release(name)
      end
      raise
    end

    # Checks the command and returns a builder taking the connection.
    def build_responder(name, command)
      queue = command.fetch("queue")
      bind = command["bind"] && { exchange: command["bind"].fetch("exchange"), routing_key: command["bind"]["routing_key"] || "" }
      case command.fetch("client", "binding")
      when "raw" then ->(connection) { Raw::Responder.new(connection, queue: queue, bind: bind) }
      when "binding" then binding_responder(name, command, queue, bind)
      else raise ArgumentError, "responder client must be binding or raw, not #{command['client'].inspect}"
      end
    end

    def binding_responder(name, command, queue, bind)
      behavior = command["behavior"] || { "reply" => "echo" }
      check_behavior(behavior)
      policy = Knobs.responder_policy(command["policy"])
      options = { queue: queue, bind: bind }
      options[:max_attempts] = command["max_attempts"] if command.key?("max_attempts")
      events = command["events"] != false
      lambda do |connection|
        responder = Acemq::Internal::Responder.new(connection, policy, **options) { |request| behave(name, behavior, request) }
        recovery_events(:responder, name, responder)
        observe(name, responder, events: events)
      end
    end

    def check_behavior(behavior)
      case behavior["reply"]
      when "echo" then nil
      when "fail"
        raise ArgumentError, "behavior fail needs an error_message string" unless behavior["error_message"].is_a?(String)
      else raise ArgumentError, "unknown behavior reply #{behavior['reply'].inspect}"
      end
    end

    def responder_stop(command)
      name = command.fetch("name")
      responder = @state_lock.synchronize { @responders.delete(name) } or raise ArgumentError, "no responder #{name.inspect}"
      responder.stop
      release(name)
      {}
    end

    def counters(command)
      name = command.fetch("of")
      requester, responder = @state_lock.synchronize { [@requesters[name], @responders[name]] }
      if responder.is_a?(Raw::Responder)
        { counters: {} }
      elsif responder
        { counters: { answered: responder.answered, unanswerable: responder.unanswerable } }
      elsif requester
        { counters: { timed_out: requester.timed_out, unmatched: requester.unmatched } }
      else
        raise ArgumentError, "no requester or responder #{name.inspect}"
      end
    end

    # Opens its own requester (binding: with the command's policy; raw: bare Bunny) and
    # closes it at the end, whatever happened.
    def load(command)
      run = Load.new(command)
      name = "load-#{command['id']}-#{SecureRandom.hex(3)}"
      requester = if command["client"] == "raw"
                    claim_name(name)
                    claimed = true
                    Raw::Requester.new(connect(name, :requester, command, recover: false)).open
                  else
                    open_requester(name, command).tap { claimed = true }
                  end
      { load: run.run(requester) }
    ensure
      requester&.close
      release(name) if claimed
    end

    def shutdown(_command)
      {}
    end

    def finish
      close_all
      exit!(0)
    end

    # The handler behind every responder: echo or fail, after an optional delay.
    def behave(name, behavior, request)
      delay = behavior["delay_ms"].to_i
      sleep(delay / 1000.0) if delay.positive?
      raise ScenarioFailure, behavior["error_message"] if behavior["reply"] == "fail"

      body = request.body
      correlation_id = body.is_a?(Hash) ? body["correlationId"] : nil
      { echo: body, responder: name, peer: NAME, correlationId: correlation_id, seen: seen(request) }
    end

    def seen(request)
      {
        message_id: request.message_id, correlation_id: request.correlation_id,
        reply_to: request.reply_to, reply_to_source: request.reply_to_source.to_s,
        headers: request.headers.keys.sort, attempt: request.attempt
      }
    end

    # The binding's events as protocol events. With events false (version 4, for a load)
    # only a lost connection is reported: a fault the harness must still hear of, once,
    # where the others come for every request.
    def observe(name, responder, events: true)
      responder.on(:channel_closed) { |e| lost(:responder, name, e[:reason]) }
      return responder unless events

      responder.on(:handled) do |e|
        request = e[:request]
        event("handled", responder: name, message_id: request.message_id, attempt: request.attempt, seen: seen(request))
      end
      %i[replied reply_failed dead_lettered unanswerable].each do |kind|
        responder.on(kind) { |e| event(kind.to_s, responder: name, **e) }
      end
      responder
    end

    # One connection per requester or responder, so closing one takes its reply queue along;
    # binding and raw clients alike, with hello's TLS settings. Version 5: under the
    # command's connection_name, on its amqp_urls (else hello's amqp_url), and a binding's
    # connection recovers (Acemq::Connection.open's default), which the binding reports
    # (recovery_events). Before version 5, and for a raw client, no recovery of either kind:
    # a lost connection is reported (connection_lost) by Bunny's session error handler.
    def connect(name, role, command, recover: true)
      url = @amqp_url or raise ArgumentError, "hello has not given an amqp_url"
      if @protocol.to_i >= RECOVERY_PROTOCOL
        urls = urls_of(command) || [url]
        connection_name = command["connection_name"] || "acemq-ruby #{name}"
      else
        urls = [url]
        connection_name = "acemq-ruby #{name}"
        recover = false
      end
      errors = SessionErrors.new(@log) { |reason| lost(role, name, reason) unless recover }
      options = recover ? {} : { automatically_recover: false, recover_from_connection_close: false }
      connection = Acemq::Connection.open(urls, ca_file: @ca_file, logger: @log, connection_name: connection_name,
                                                session_error_handler: errors, **options)
      @state_lock.synchronize { @connections[name] = connection }
    end

    # A command's amqp_urls (version 5), checked; nil when absent.
    def urls_of(command)
      urls = command["amqp_urls"] or return nil
      unless urls.is_a?(Array) && !urls.empty? && urls.all? { |u| u.is_a?(String) && !u.empty? }
        raise ArgumentError, "amqp_urls must be a non-empty list of URLs, not #{urls.inspect}"
      end

      urls
    end

    # Version 5: a binding role's connection lost (once per loss, with the binding's reason)
    # and back (consuming again). Only a recovering connection makes the binding report them.
    def recovery_events(role, name, binding)
      binding.on(:connection_lost) { |e| lost(role, name, e[:reason]) }
      binding.on(:recovered) { event("recovered", role => name) }
    end

    # Version 2: the broker or the network ended a connection or channel we did not close.
    def lost(role, name, reason)
      return unless @protocol.to_i >= 2

      event("connection_lost", role => name, reason: reason.to_s)
    end

    def claim_name(name)
      @state_lock.synchronize do
        raise ArgumentError, "name #{name.inspect} is already in use" if @connections.key?(name) || @requesters.key?(name) || @responders.key?(name)

        @connections[name] = nil
      end
    end

    def release(name)
      connection = @state_lock.synchronize { @connections.delete(name) }
      connection.close if connection&.open?
    rescue StandardError => e
      @log.warn("closing #{name}: #{e.class}: #{e.message}")
    end

    def find(registry, name)
      @state_lock.synchronize { registry[name] } or raise ArgumentError, "no requester #{name.inspect}"
    end

    def close_all
      requesters, responders, names = @state_lock.synchronize { [@requesters.values, @responders.values, @connections.keys] }
      responders.each(&:stop)
      requesters.each(&:close)
      names.each { |name| release(name) }
    rescue StandardError => e
      @log.warn("closing: #{e.class}: #{e.message}")
    end

    def event(name, **fields)
      write({ event: name }.merge(fields))
    end

    def write(message)
      message[:error] = Acemq::Headers.text(message[:error]) if message[:error]
      line = JSON.generate(message)
      @write_lock.synchronize do
        @output.write(line, "\n")
        @output.flush
      end
    end

    def seconds(timeout_ms)
      raise ArgumentError, "timeout_ms must be a number >= 0, not #{timeout_ms.inspect}" unless timeout_ms.is_a?(Numeric) && timeout_ms >= 0

      timeout_ms / 1000.0
    end

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    def elapsed_ms(started) = ((now - started) * 1000).round
  end

  # Answers of ended calls not yet written, per requester name, so a requester's close is
  # answered after the calls it ended. A call still waiting in the binding owes nothing yet.
  class OwedAnswers
    def initialize
      @lock = Mutex.new
      @changed = ConditionVariable.new
      @owed = Hash.new(0)
    end

    def owe(name)
      @lock.synchronize { @owed[name] += 1 }
    end

    def paid(name)
      @lock.synchronize do
        @owed[name] -= 1
        @owed.delete(name) unless @owed[name].positive?
        @changed.broadcast
      end
    end

    def await(name, grace)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + grace
      @lock.synchronize do
        while @owed.key?(name)
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          break if left <= 0

          @changed.wait(@lock, left)
        end
      end
    end
  end

  # Bunny raises connection failures into the session's creating thread by default; a
  # command thread is the wrong place for them, so they are logged and reported instead
  # (the block decides: a recovering binding reports its losses itself).
  class SessionErrors
    def initialize(log, &on_lost)
      @log = log
      @on_lost = on_lost
    end

    def raise(error)
      @log.error("connection: #{error.class}: #{error.message}")
      @on_lost&.call(SessionErrors.reason(error))
    end

    # The AMQP reply code and text where the broker sent them, else the client's message.
    def self.reason(error)
      close = error.respond_to?(:connection_close) ? error.connection_close : nil
      close ? "#{close.reply_code} #{close.reply_text}" : error.message
    end
  end
end
