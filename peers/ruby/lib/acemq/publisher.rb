# frozen_string_literal: true

require "bunny"

module Acemq
  # Mandatory, confirmed publishing on a channel of its own (RR-13).
  #
  # For an unroutable mandatory message RabbitMQ sends basic.return and then basic.ack,
  # so an ack alone proves nothing. Bunny dispatches returns only to an exchange object in
  # the channel's cache, and a return carries no delivery tag, so publishes are serialised:
  # with one message in flight, a return seen before its confirm is that message's.
  class ConfirmedPublisher
    CONFIRM_TIMEOUT = 15

    # ignore_returns: the ignores-returns mutant only.
    def initialize(connection, ignore_returns: false)
      @connection = connection
      @ignore_returns = ignore_returns
      @lock = Mutex.new          # one publish in flight
      @state = Mutex.new         # guards what the reader thread reports
      @changed = ConditionVariable.new
      @channel = nil
    end

    # Raises PublishReturned, PublishFailed (nack, closed channel) or ShortStringTooLong.
    def publish(payload, exchange:, routing_key:, **properties)
      Headers.check_short_strings!(properties)
      @lock.synchronize do
        channel = open_channel
        exchange_object(channel, exchange)
        seq = channel.next_publish_seq_no
        @state.synchronize do
          @returned = nil
          @outcome = nil
          @waiting_for = seq
        end
        channel.basic_publish(payload, exchange, routing_key, properties.merge(mandatory: true))
        await_confirm(channel)
      end
    rescue Bunny::Exception, Timeout::Error => e
      raise PublishFailed, "#{e.class.name.split('::').last}: #{e.message}"
    end

    def close
      @lock.synchronize { @channel&.close if @channel&.open? }
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    private

    def await_confirm(channel)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + CONFIRM_TIMEOUT
      @state.synchronize do
        until @outcome
          raise PublishFailed, "channel closed: #{channel_error(channel)}" if channel.closed?

          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          raise PublishFailed, "no confirm within #{CONFIRM_TIMEOUT}s" if left <= 0

          # Bunny does not wake confirm waiters when the broker closes the channel.
          @changed.wait(@state, [left, 0.05].min)
        end
        # ignores-returns mutant: breaks RR-13 by taking the ack alone as delivery.
        raise PublishReturned, "returned: #{@returned}" if @returned && !@ignore_returns
        raise PublishFailed, "nacked by the broker" if @outcome == :nack
      end
    end

    def open_channel
      return @channel if @channel&.open?

      channel = @connection.create_channel
      channel.confirm_select(method(:on_confirm))
      @channel = channel
    end

    # A named exchange is never declared here: the caller's topology is the caller's.
    def exchange_object(channel, name)
      exchange = channel.find_exchange(name) ||
                 (name.empty? ? channel.default_exchange : Bunny::Exchange.new(channel, :direct, name, no_declare: true))
      exchange.on_return { |info, _props, _body| on_return(info) }
      exchange
    end

    def on_return(info)
      @state.synchronize { @returned = "#{info.reply_code} #{Headers.text(info.reply_text)}" }
    end

    def on_confirm(tag, _multiple, nack)
      @state.synchronize do
        next unless @waiting_for && tag >= @waiting_for

        @outcome = nack ? :nack : :ack
        @changed.broadcast
      end
    end

    def channel_error(channel)
      error = channel.instance_variable_get(:@last_channel_error)
      error ? error.message : "closed"
    end
  end
end
