# frozen_string_literal: true

require "json"
require "securerandom"
require "bunny"

module Acemq
  # Sends requests and waits for their replies on one reply queue (RR-6).
  #
  #   requester = Acemq::Requester.open(connection)
  #   quote = requester.request({ sku: "A-1" }, exchange: "pricing", routing_key: "quote.requested")
  #
  # Raises RequestTimedOut, ResponderFailed or DecodeError for the outcomes of a call,
  # RequesterClosed when the requester is closed while the call is pending (at once),
  # ConnectionLost when its connection is lost while the call is pending (at once, RR-20),
  # PublishFailed when the broker did not take the request (PublishReturned: nothing
  # routed it), ShortStringTooLong (RR-18).
  # Events (see Observable#on): :unmatched with correlation_id and response_message_id;
  # :channel_closed with reason when the broker closes the reply queue's channel;
  # :connection_lost with reason; :recovered with reply_queue (the new one) once Bunny's
  # automatic recovery has the connection back and the new reply queue consumed.
  #
  # Across a lost connection (a session with Bunny's automatic recovery, as
  # Connection.open makes): the pending calls end, a call made while Bunny recovers waits
  # for the recovery (within its timeout), and later calls name the new server-named reply
  # queue Bunny declared in place of the one that went with the connection. The counters
  # carry on.
  class Requester
    include Observable
    include Gather

    # Seconds; a call given no timeout waits this long (RR-9).
    DEFAULT_TIMEOUT = RequesterPolicy::DEFAULT.default_timeout_ms / 1000
    # How long close waits for pending calls to end; each ends as soon as its publish is
    # confirmed, which the publisher bounds.
    CLOSE_GRACE = ConfirmedPublisher::CONFIRM_TIMEOUT + 1
    # Where a type goes when it is not the type property (only a non-default policy puts it there).
    TYPE_HEADER = "type"
    # The headers a reply is expected to carry (RR-5.3: any other is ignored).
    KNOWN_REPLY_HEADERS = [Headers::ERROR, Headers::RESPONSE_MESSAGE_ID].freeze
    # Headers a strict reader still lets by: the broker's and clients' own (RabbitMQ.Client 7
    # puts x-dotnet-pub-seq-no on every message it publishes with confirms).
    CLIENT_HEADER_PREFIX = "x-"
    # request_deadline: :late arms a request's timer at this many timeouts.
    LATE_DEADLINE = 1.5
    # What a pending call's slot is filled with when its connection is lost.
    Lost = Struct.new(:reason)
    private_constant :TYPE_HEADER, :KNOWN_REPLY_HEADERS, :CLIENT_HEADER_PREFIX, :LATE_DEADLINE, :Lost

    def self.open(connection, **options)
      new(connection, **options).open
    end

    # default_timeout: seconds for a call given no timeout (nil: the spec's 30 s, RR-9).
    # publisher: anything with ConfirmedPublisher#publish's signature (tests pass a fake).
    def initialize(connection, default_timeout: nil, publisher: nil)
      @connection = connection
      @publisher = publisher
      @policy = RequesterPolicy::DEFAULT
      @default_timeout = default_timeout
      @lock = Mutex.new
      @declare_lock = Mutex.new
      @pending = {}  # message_id => Slot, oldest first
      @gathers = {}  # requestMessageId => Gathering
      @ended_gathers = {} # requestMessageIds of gathers that ended, oldest first (bounded): SG-8's replies
      @timed_out = 0
      @unmatched = 0
      @calls = 0     # calls between their start and their end, for close
      @calls_ended = ConditionVariable.new
      @closed = false
      @connection_state = :open # :recovering (Bunny is at it), :down (it will not)
      @lost_reason = nil
      @connection_changed = ConditionVariable.new
    end

    # Declares and consumes the reply queue; the policy is fixed from here on.
    def open
      @policy = @policy.freeze
      @channel = @connection.create_channel
      # The broker closing this channel ends the reply consumer: the user should know.
      @channel.on_error { |_channel, close| emit(:channel_closed, reason: "#{close.reply_code} #{close.reply_text}") }
      @reply = declare_reply_queue(@channel)
      @reply_queue = Headers.text(@reply.name)
      @publisher ||= ConfirmedPublisher.new(@connection)
      @watch = ConnectionWatch.of(@connection).subscribe(recover: @policy.recover_connection,
                                                         lost: method(:connection_lost),
                                                         recovered: method(:connection_recovered))
      self
    end

    # The reply queue's name, the one Bunny declared in its place after a recovery.
    def reply_queue = @lock.synchronize { @reply_queue }

    def timed_out = @lock.synchronize { @timed_out }
    def unmatched = @lock.synchronize { @unmatched }

    # The timeout, in seconds, of a call given none.
    def default_timeout = @default_timeout || @policy.default_timeout_ms / 1000.0

    # Sends body as JSON and returns the decoded reply. type, when given, is the message's
    # AMQP type property (a short string, RR-18).
    def request(body, routing_key:, exchange: "", timeout: nil, message_id: SecureRandom.uuid,
                correlation_id: message_id, headers: {}, type: nil)
      timeout ||= default_timeout
      # RR-8.4: correlation_id = message_id, so a responder that echoes it answers this call.
      correlation_id = nil if @policy.request_correlation_id == :none # what RR-8.4 forbids
      slot = Slot.new
      call(timeout) do
        with_reply_address do |address|
          register { @pending[message_id] = slot }
          begin
            publish_checked(@policy.honour_returns, JSON.generate(body), exchange, routing_key, address,
                            message_id: message_id, correlation_id: correlation_id, headers: headers, type: type)
          rescue StandardError
            @lock.synchronize { @pending.delete(message_id) }
            raise
          end
          settle(message_id, slot, timeout)
        end
      end
    end

    # Ends every pending call at once with RequesterClosed and returns once they all have
    # ended; then the reply queue goes with its channel. A call made after close raises
    # RequesterClosed.
    def close
      ending = @lock.synchronize do
        @closed = true
        @connection_changed.broadcast # a call waiting for a recovery ends too
        next false unless @policy.pending_at_close == :end_closed

        @pending.each_value { |slot| slot.fill(:closed) }
        @pending.clear
        @gathers.each_value(&:close)
        true
      end
      await_calls(CLOSE_GRACE) if ending
      @watch&.cancel
      @publisher&.close
      @channel.close if @channel&.open? && @connection.open?
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    private

    # Counts the call from its start to its end, so close can wait for it. A call made while
    # the connection is being recovered waits for it, at most timeout.
    def call(timeout)
      @lock.synchronize do
        raise RequesterClosed if @closed

        await_connection(timeout)
        @calls += 1
      end
      begin
        yield
      ensure
        @lock.synchronize do
          @calls -= 1
          @calls_ended.broadcast if @calls.zero?
        end
      end
    end

    # Registers a waiting call under @lock, unless close or a lost connection came first.
    def register
      @lock.synchronize do
        raise RequesterClosed if @closed
        raise ConnectionLost, @lost_reason unless @connection_state == :open

        yield
      end
    end

    # Under @lock: returns once the connection is open; raises ConnectionLost when it stays
    # down, or is still being recovered after timeout seconds, RequesterClosed when the
    # requester is closed meanwhile.
    def await_connection(timeout)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      while @connection_state == :recovering && !@closed
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        break if left <= 0

        @connection_changed.wait(@lock, left)
      end
      raise RequesterClosed if @closed
      raise ConnectionLost, @lost_reason unless @connection_state == :open
    end

    # The connection watch, before Bunny's recovery starts (on its reader thread). RR-20.1:
    # the reply queue went with the connection, so every pending call and gather ends at
    # once; waiting out their timeouts is the policy's other value.
    def connection_lost(reason, recovering)
      @lock.synchronize do
        @connection_state = recovering ? :recovering : :down
        @lost_reason = reason
        if @policy.on_connection_lost == :end_lost
          lost = Lost.new(reason)
          @pending.each_value { |slot| slot.fill(lost) }
          @pending.clear
          @gathers.each_value { |gathering| gathering.lose(reason) }
        end
      end
      emit(:connection_lost, reason: reason)
    end

    # Bunny recovered the channel, declared a new server-named reply queue and consumes it.
    def connection_recovered
      queue = @lock.synchronize do
        @reply_queue = Headers.text(@reply.name)
        @connection_state = :open
        @connection_changed.broadcast
        @reply_queue
      end
      emit(:recovered, reply_queue: queue)
    end

    def await_calls(grace)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + grace
      @lock.synchronize do
        while @calls.positive?
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          break if left <= 0

          @calls_ended.wait(@lock, left)
        end
      end
    end

    def settle(message_id, slot, timeout)
      # RR-9.6: the timeout bounds the wait; giving up half a timeout later is the policy's other value.
      got, reply = slot.wait(@policy.request_deadline == :late ? timeout * LATE_DEADLINE : timeout)
      unless got
        # A reply that raced the timeout still wins; after this point it is Unmatched.
        removed = @lock.synchronize do
          @pending.delete(message_id).tap { @timed_out += 1 if _1 && @policy.count_timeouts }
        end
        if removed
          # What RR-9 forbids: a silence passed off as an answer (null), though still counted.
          return nil if @policy.timeout_outcome == :null_reply

          raise RequestTimedOut.new(message_id, timeout)
        end

        # The reply thread (or close) took the entry and is about to fill the slot.
        _, reply = slot.wait(5)
      end
      raise RequesterClosed if reply == :closed
      raise ConnectionLost, reply.reason if reply.is_a?(Lost)

      decode_reply(message_id, reply)
    end

    def decode_reply(message_id, reply)
      headers, body = reply
      # RR-5.3: a header the requester does not know is ignored; failing over it is the policy's other value.
      if @policy.unknown_reply_headers == :fail && (unknown = unknown_reply_headers(headers)).any?
        raise DecodeError.new(message_id, "unexpected reply headers: #{unknown.join(', ')}")
      end

      # RR-10: the error header is read before the body is decoded.
      if @policy.read_error_header && headers.key?(Headers::ERROR)
        raise ResponderFailed.new(message_id, Headers.text(headers[Headers::ERROR]).to_s)
      end

      JSON.parse(Headers.text(body))
    rescue JSON::ParserError => e
      raise DecodeError.new(message_id, e.message)
    end

    # What a strict reader (the policy's :fail) would not know: neither ours nor an x- one.
    def unknown_reply_headers(headers)
      (headers.keys - KNOWN_REPLY_HEADERS).reject { |name| name.start_with?(CLIENT_HEADER_PREFIX) }
    end

    def declare_reply_queue(channel)
      # Classic by explicit request (RR-7): a server's default may be quorum, which
      # refuses exclusive and auto-delete queues.
      arguments = @policy.explicit_reply_queue_type ? { "x-queue-type" => "classic" } : {}
      queue = channel.queue("", exclusive: @policy.exclusive_reply_queue, auto_delete: true, durable: false, arguments: arguments)
      queue.subscribe(manual_ack: false) { |_info, props, body| on_reply(props, body) }
      queue
    end

    # RR-6: one reply queue for every call. A queue per call (the policy's other value)
    # stays consumed, so a late reply is still Unmatched, until the requester closes.
    def with_reply_address
      return yield(reply_queue) unless @policy.reply_queue_per_request

      # A Bunny channel runs one synchronous method at a time.
      address = @declare_lock.synchronize { Headers.text(declare_reply_queue(@channel).name) }
      yield address
    end

    # RR-13: a returned publish raises PublishReturned, which ends the call as refused;
    # honour false takes the broker's ack alone as delivery (what RR-13 forbids): the call waits.
    def publish_checked(honour, ...)
      publish(...)
    rescue PublishReturned
      raise if honour
    end

    def publish(payload, exchange, routing_key, address, message_id:, correlation_id:, headers:, type: nil)
      headers = headers.dup
      properties = { message_id: message_id, correlation_id: correlation_id,
                     content_type: Headers::CONTENT_TYPE, persistent: true }
      # The type is the AMQP type property; a header of that name is the policy's other value.
      if @policy.type_carrier == :header
        headers[TYPE_HEADER] = type if type
      else
        properties[:type] = type
      end
      # RR-1, RR-2: the address twice, the header as a long string.
      if @policy.write_header_address
        headers[Headers::REPLY_TO] = @policy.header_address_as_bytes ? ByteArray.new(address) : address
      end
      properties[:reply_to] = native_address(address) if @policy.write_native_address
      properties[:headers] = headers unless headers.empty?
      # RR-18: the publisher refuses a long short string; truncating sends 255 bytes instead.
      properties = Headers.truncate_short_strings(properties) if @policy.long_short_string == :truncate
      @publisher.publish(payload, exchange: exchange, routing_key: routing_key, **properties.compact)
    end

    # RR-1.3: the same address in both. A stale name, or an empty string (present, zero
    # length: Bunny sends "" as set; only nil leaves the property out), is the policy's other
    # values.
    def native_address(address)
      case @policy.native_address
      when :stale then "#{address}.stale"
      when :empty then ""
      else address
      end
    end

    def on_reply(props, body)
      headers = Headers.normalize(props.headers)
      correlation_id = Headers.text(props.correlation_id)
      return if deliver_to_gather(headers, correlation_id, body)
      # RR-19: an undecodable reply ends its call; dropping it leaves the call waiting.
      return count_unmatched(headers, correlation_id) if @policy.undecodable_reply == :drop && undecodable?(headers, body)

      slot = @lock.synchronize do
        # RR-8: by correlation id; the oldest waiter is the policy's wrong alternative.
        key = @policy.match_replies_by == :oldest_waiter ? @pending.keys.first : correlation_id
        # What RR-8.3 forbids: a reply nobody waits for given to the oldest call still waiting.
        @pending.delete(key) || (@policy.unmatched_reply == :oldest_waiter ? @pending.shift&.last : nil)
      end
      if slot
        slot.fill([headers, body])
      else
        count_unmatched(headers, correlation_id, counted: counts_unmatched?(headers, correlation_id))
      end
    end

    # A reply for no pending call is a gather's (SG-8) while a gather is pending or when it
    # names a gather that ended; a request's (RR-8) otherwise. Each has its policy field.
    def counts_unmatched?(headers, correlation_id)
      gather_reply = @lock.synchronize do
        @gathers.any? || [Headers.text(headers[Headers::RESPONSE_MESSAGE_ID]), correlation_id].any? { @ended_gathers.key?(_1) }
      end
      gather_reply ? @policy.count_gather_unmatched : @policy.count_unmatched
    end

    def undecodable?(headers, body)
      return false if headers.key?(Headers::ERROR)

      JSON.parse(Headers.text(body))
      false
    rescue JSON::ParserError
      true
    end

    # The event names the reply by both ids it may carry (nil when absent), for request and
    # gather replies alike.
    # counted false: only the event (what RR-8.2 and SG-8.1 forbid, by policy).
    def count_unmatched(headers, correlation_id, counted: true)
      @lock.synchronize { @unmatched += 1 } if counted
      emit(:unmatched, correlation_id: correlation_id,
                       response_message_id: Headers.text(headers[Headers::RESPONSE_MESSAGE_ID]))
    end
  end
end
