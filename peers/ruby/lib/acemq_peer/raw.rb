# frozen_string_literal: true

require "bunny"
require "securerandom"

module AcemqPeer
  # Bare Bunny, no acemq code: what this client can do at best on this broker.
  module Raw
    # An echo responder: a durable quorum queue consumed with manual acks and prefetch 64;
    # each request body goes back to its reply_to on the default exchange, correlated by
    # the request's message_id (else its correlation_id). No events, no counters.
    class Responder
      PREFETCH = 64

      def initialize(connection, queue:, bind: nil)
        @connection = connection
        @queue = queue
        @bind = bind
      end

      def start
        @channel = @connection.create_channel
        @channel.prefetch(PREFETCH)
        queue = @channel.queue(@queue, durable: true, arguments: { "x-queue-type" => "quorum" })
        queue.bind(@bind[:exchange], routing_key: @bind[:routing_key].to_s) if @bind
        @consumer = queue.subscribe(manual_ack: true) { |info, props, body| echo(info, props, body) }
        self
      end

      def stop
        return unless @connection.open?

        @consumer&.cancel
        @channel.close if @channel&.open?
      rescue Bunny::Exception, Timeout::Error
        nil
      end

      def counters = {}

      private

      def echo(info, props, body)
        if props.reply_to && !props.reply_to.empty?
          @channel.basic_publish(body, "", props.reply_to,
                                 correlation_id: props.message_id || props.correlation_id,
                                 content_type: props.content_type)
        end
        @channel.ack(info.delivery_tag)
      end
    end

    # A load through one channel and one server-named reply queue: at most in_flight
    # requests outstanding, matched to their start time by correlation_id.
    class Requester
      Outcome = Struct.new(:latencies_us, :timeouts, :errors, :error_samples)

      def initialize(connection)
        @connection = connection
        @lock = Mutex.new
        @freed = ConditionVariable.new
        @pending = {} # correlation_id => start (monotonic µs), oldest first
      end

      def open
        @channel = @connection.create_channel
        queue = @channel.queue("", exclusive: true, auto_delete: true, durable: false,
                                   arguments: { "x-queue-type" => "classic" })
        @reply_to = queue.name
        queue.subscribe(manual_ack: false) { |_info, props, _body| arrived(props.correlation_id, Clock.us) }
        self
      end

      def close
        @channel.close if @channel&.open? && @connection.open?
      rescue Bunny::Exception, Timeout::Error
        nil
      end

      # Sends count requests of payload; returns an Outcome once every one has ended.
      def run(count, in_flight:, timeout_s:, exchange:, routing_key:, payload:)
        @outcome = Outcome.new([], 0, 0, [])
        @timeout_us = (timeout_s * 1_000_000).round
        prefix = SecureRandom.hex(6)
        count.times do |n|
          wait_for_room(in_flight)
          send_one("#{prefix}-#{n}", exchange, routing_key, payload)
        end
        wait_for_room(1) # until nothing is outstanding
        @outcome
      end

      private

      def send_one(id, exchange, routing_key, payload)
        @lock.synchronize { @pending[id] = Clock.us }
        @channel.basic_publish(payload, exchange, routing_key, reply_to: @reply_to, correlation_id: id,
                                                               message_id: id, content_type: "application/json")
      rescue Bunny::Exception, IOError, SystemCallError => e
        @lock.synchronize do
          @pending.delete(id)
          @outcome.errors += 1
          @outcome.error_samples << "#{e.class.name.split('::').last}: #{e.message}" if @outcome.error_samples.size < 5
        end
      end

      def arrived(id, now)
        @lock.synchronize do
          started = @pending.delete(id) or return # a reply after its timeout
          @outcome.latencies_us << now - started
          @freed.signal
        end
      end

      # Waits until fewer than `room` requests are outstanding, expiring the overdue ones.
      def wait_for_room(room)
        @lock.synchronize do
          loop do
            expire_overdue
            break if @pending.size < room

            _, oldest = @pending.first
            @freed.wait(@lock, [(oldest + @timeout_us - Clock.us) / 1_000_000.0, 0.001].max)
          end
        end
      end

      # Under @lock: the pending hash is in send order, so the overdue ones come first.
      def expire_overdue
        now = Clock.us
        while (entry = @pending.first) && now - entry.last >= @timeout_us
          @pending.delete(entry.first)
          @outcome.timeouts += 1
        end
      end
    end
  end

  # Monotonic microseconds.
  module Clock
    def self.us = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
  end
end
