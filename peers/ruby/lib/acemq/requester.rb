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
  # PublishFailed when the broker did not take the request, ShortStringTooLong (RR-18).
  # Events (see Observable#on): :unmatched with correlation_id.
  class Requester
    include Observable
    include Gather

    DEFAULT_TIMEOUT = 30

    attr_reader :reply_queue, :profile, :mutant

    def self.open(connection, **options)
      new(connection, **options).open
    end

    # publisher: anything with ConfirmedPublisher#publish's signature (tests pass a fake).
    def initialize(connection, profile: "current", mutant: nil, default_timeout: DEFAULT_TIMEOUT, publisher: nil)
      @connection = connection
      @publisher = publisher
      @profile = Profile.fetch(profile)
      @mutant = Mutants.check!(mutant, :requester)
      @default_timeout = default_timeout
      @lock = Mutex.new
      @declare_lock = Mutex.new
      @pending = {}  # message_id => Slot, oldest first
      @gathers = {}  # requestMessageId => Gathering
      @timed_out = 0
      @unmatched = 0
    end

    def open
      @channel = @connection.create_channel
      @reply_queue = declare_reply_queue(@channel)
      @publisher ||= ConfirmedPublisher.new(@connection, ignore_returns: @mutant == "ignores-returns")
      self
    end

    def timed_out = @lock.synchronize { @timed_out }
    def unmatched = @lock.synchronize { @unmatched }

    # Sends body as JSON and returns the decoded reply.
    def request(body, routing_key:, exchange: "", timeout: @default_timeout,
                message_id: SecureRandom.uuid, correlation_id: message_id, headers: {})
      slot = Slot.new
      with_reply_address do |address|
        @lock.synchronize { @pending[message_id] = slot }
        begin
          publish(JSON.generate(body), exchange, routing_key, address,
                  message_id: message_id, correlation_id: correlation_id, headers: headers)
        rescue StandardError
          @lock.synchronize { @pending.delete(message_id) }
          raise
        end
        settle(message_id, slot, timeout)
      end
    end

    def close
      @lock.synchronize do
        @pending.each_value { |slot| slot.fill(:closed) }
        @gathers.each_value(&:close)
      end
      @publisher&.close
      @channel&.close if @channel&.open?
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    private

    def settle(message_id, slot, timeout)
      got, reply = slot.wait(timeout)
      unless got
        # A reply that raced the timeout still wins; after this point it is Unmatched.
        removed = @lock.synchronize do
          # timeouts-not-counted mutant: breaks RR-9 by not counting the timeout.
          @pending.delete(message_id).tap { @timed_out += 1 if _1 && @mutant != "timeouts-not-counted" }
        end
        raise RequestTimedOut.new(message_id, timeout) if removed

        # The reply thread took the entry and is about to fill the slot.
        _, reply = slot.wait(5)
      end
      raise Error, "requester closed" if reply == :closed

      decode_reply(message_id, reply)
    end

    def decode_reply(message_id, reply)
      headers, body = reply
      if @mutant != "ignores-error-header" && headers.key?(Headers::ERROR)
        raise ResponderFailed.new(message_id, Headers.text(headers[Headers::ERROR]).to_s)
      end

      JSON.parse(Headers.text(body))
    rescue JSON::ParserError => e
      raise DecodeError.new(message_id, e.message)
    end

    def declare_reply_queue(channel)
      # Classic by explicit request (RR-7): a server's default may be quorum, which
      # refuses exclusive and auto-delete queues.
      arguments = { "x-queue-type" => "classic" }
      arguments = {} if @mutant == "implicit-queue-type" # breaks RR-7: the server's default decides
      queue = channel.queue("", exclusive: true, auto_delete: true, durable: false, arguments: arguments)
      queue.subscribe(manual_ack: false) { |_info, props, body| on_reply(props, body) }
      Headers.text(queue.name)
    end

    # The queue-per-request mutant breaks RR-6 by declaring a queue for each call; the
    # queue stays consumed (a late reply is still Unmatched) until the requester closes.
    def with_reply_address
      return yield(@reply_queue) unless @mutant == "queue-per-request"

      # A Bunny channel runs one synchronous method at a time.
      address = @declare_lock.synchronize { declare_reply_queue(@channel) }
      yield address
    end

    def publish(payload, exchange, routing_key, address, message_id:, correlation_id:, headers:, type: nil)
      headers = headers.dup
      properties = { message_id: message_id, correlation_id: correlation_id, type: type,
                     content_type: Headers::CONTENT_TYPE, persistent: true }
      write_header = @profile.write_header && @mutant != "native-only"
      if write_header
        headers[Headers::REPLY_TO] = @mutant == "header-bytes" ? ByteArray.new(address) : address
      end
      properties[:reply_to] = address if @profile.write_native || @mutant == "native-only"
      properties[:headers] = headers unless headers.empty?
      properties = Headers.truncate_short_strings(properties) if @mutant == "truncates-short-strings"
      @publisher.publish(payload, exchange: exchange, routing_key: routing_key, **properties.compact)
    end

    def on_reply(props, body)
      headers = Headers.normalize(props.headers)
      correlation_id = Headers.text(props.correlation_id)
      return if deliver_to_gather(headers, correlation_id, body)
      # drops-undecodable mutant: breaks RR-19 by treating an undecodable reply as nobody's.
      return count_unmatched(correlation_id) if @mutant == "drops-undecodable" && undecodable?(headers, body)

      slot = @lock.synchronize do
        key = @mutant == "late-reply-to-next" ? @pending.keys.first : correlation_id
        @pending.delete(key)
      end
      if slot
        slot.fill([headers, body])
      else
        count_unmatched(correlation_id)
      end
    end

    def undecodable?(headers, body)
      return false if headers.key?(Headers::ERROR)

      JSON.parse(Headers.text(body))
      false
    rescue JSON::ParserError
      true
    end

    def count_unmatched(correlation_id)
      @lock.synchronize { @unmatched += 1 }
      emit(:unmatched, correlation_id: correlation_id)
    end
  end
end
