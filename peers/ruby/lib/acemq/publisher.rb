# frozen_string_literal: true

require "bunny"

module Acemq
  # Mandatory, confirmed publishing on a channel of its own (RR-13), many publishes
  # outstanding at once.
  #
  # For an unroutable mandatory message RabbitMQ sends basic.return and then basic.ack,
  # so an ack alone proves nothing. A return carries no delivery tag, but it carries the
  # message: it is tied to the oldest unconfirmed publish with the same exchange, routing
  # key, message_id and correlation_id. Bunny's reader thread handles a channel's frames in
  # the broker's order, so that publish is still unconfirmed when its return is seen.
  # Publishes that look alike route alike, so which of several identical ones is marked
  # does not matter. Each publish waits only for its own confirm.
  #
  # A lost connection (RR-20) ends every publish still unconfirmed at once with
  # ConnectionLost: its confirm will never come. Until Bunny has recovered the session a
  # publish raises ConnectionLost too. After a recovery the publisher takes a new channel:
  # Bunny 2.19 recovers a confirm channel with an offset on its delivery tags that its own
  # multiple-ack arithmetic does not apply, so a multiple ack would confirm nothing.
  class ConfirmedPublisher
    CONFIRM_TIMEOUT = 15
    # Bunny does not wake confirm waiters when the broker closes the channel: a waiter
    # looks at the channel this often.
    CLOSED_POLL = 0.05

    # One publish the broker has not confirmed yet. outcome: nil, :ack, :nack or :lost;
    # returned: the return's "code text", set by the reader thread before the ack;
    # lost: the reason its connection was lost.
    Unconfirmed = Struct.new(:tag, :identity, :lane, :outcome, :returned, :settled, :lost)

    # A confirm-mode channel and what was published on it, oldest first (delivery tag order).
    Lane = Struct.new(:channel, :unconfirmed, :exchanges)

    # Bunny 2.19.0 reads its set of unconfirmed tags for a multiple ack (Set#min) outside
    # the lock that guards the set, so a publish racing that ack fails with "can't add a
    # new key into hash during iteration" (ruby-amqp/bunny#635, fixed after 2.19.0). With
    # many publishes outstanding the race is common, so that read takes the lock too.
    # In 2.19.0 that read is the set's only Set#min, made outside the lock, so even a plain
    # Mutex (a connection's mutex_impl) is not taken twice. Later versions compute the range without it.
    module LockedMin
      AFFECTED = "2.19.0"

      def self.guard(channel)
        return unless Bunny::VERSION == AFFECTED

        set = channel.instance_variable_get(:@unconfirmed_set)
        lock = channel.instance_variable_get(:@unconfirmed_set_mutex)
        set.extend(self).instance_variable_set(:@acemq_lock, lock) if set.is_a?(Set) && lock
      end

      def min(...) = @acemq_lock.synchronize { super }
    end

    # A returned publish raises PublishReturned; what a return means to a call is the caller's.
    def initialize(connection)
      @connection = connection
      # Taking a delivery tag and sending the frames happen together, in tag order. Only
      # the send is serialised, never the wait for a confirm.
      @order = Mutex.new
      # Guards the lanes' unconfirmed publishes, which Bunny's reader thread settles. Never
      # held while calling into Bunny: Bunny calls the confirm callback under a lock of its own.
      @state = Mutex.new
      @lane = nil
      @stale = nil # a channel from before a recovery, closed once a new one is opened
      @lost = nil  # why the connection is down, until Bunny has recovered it
      @watch = ConnectionWatch.of(connection).subscribe(lost: method(:connection_lost), recovered: method(:connection_recovered))
    end

    # Raises PublishReturned, PublishFailed (nack, closed channel) or ShortStringTooLong.
    # Mandatory unless told (RR-13); a reply to a direct reply-to address is not (RR-14.5).
    def publish(payload, exchange:, routing_key:, mandatory: true, **properties)
      Headers.check_short_strings!(properties)
      identity = identity_of(exchange, routing_key, properties[:message_id], properties[:correlation_id])
      entry = @order.synchronize { send_confirmed(payload, exchange, routing_key, identity, properties.merge(mandatory: mandatory)) }
      await(entry)
    rescue Bunny::ConnectionClosedError, Bunny::NetworkFailure => e
      # The connection went between the check and the send: nothing was sent.
      raise ConnectionLost, @state.synchronize { @lost } || "#{e.class.name}: #{e.message}"
    rescue Bunny::Exception, Timeout::Error => e
      raise PublishFailed, "#{e.class.name.split('::').last}: #{e.message}"
    end

    def close
      @watch.cancel
      # A channel of a connection the broker closed cannot be closed: Bunny would try to recover.
      @order.synchronize { [@lane&.channel, @stale].compact.each { |channel| channel.close if channel.open? && @connection.open? } }
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    private

    # What a return and the publish it belongs to share. Text, as the broker's copy comes
    # back as binary strings.
    def identity_of(exchange, routing_key, message_id, correlation_id)
      [Headers.text(exchange.to_s), Headers.text(routing_key.to_s), Headers.text(message_id), Headers.text(correlation_id)]
    end

    # Under @order: registers the publish under the tag Bunny will give it, then sends it.
    def send_confirmed(payload, exchange, routing_key, identity, properties)
      lane = open_lane
      watch_returns(lane, exchange)
      channel = lane.channel
      entry = Unconfirmed.new(channel.next_publish_seq_no, identity, lane, nil, nil, ConditionVariable.new)
      @state.synchronize { lane.unconfirmed[entry.tag] = entry }
      begin
        channel.basic_publish(payload, exchange, routing_key, { mandatory: true }.merge(properties))
      rescue StandardError
        forget(entry)
        raise
      end
      entry
    end

    def await(entry)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + CONFIRM_TIMEOUT
      @state.synchronize do
        until entry.outcome
          failure = waiting_failure(entry, deadline)
          if failure
            entry.lane.unconfirmed.delete(entry.tag)
            raise PublishFailed, failure
          end

          entry.settled.wait(@state, CLOSED_POLL)
        end
      end
      raise ConnectionLost, entry.lost if entry.outcome == :lost
      raise PublishReturned, "returned: #{entry.returned}" if entry.returned
      raise PublishFailed, "nacked by the broker" if entry.outcome == :nack
    end

    # The connection watch, before Bunny's recovery starts: every publish still waiting ends.
    def connection_lost(reason, _recovering)
      @state.synchronize do
        @lost = reason
        next unless @lane

        @lane.unconfirmed.each_value do |entry|
          entry.outcome = :lost
          entry.lost = reason
          entry.settled.signal
        end
        @lane.unconfirmed.clear
        @stale = @lane.channel
        @lane = nil
      end
    end

    def connection_recovered
      @state.synchronize { @lost = nil }
    end

    # A new channel for a closed one: what was outstanding on the old one fails by itself
    # (its waiters see the old channel closed). None while the connection is down: a
    # channel opened while Bunny recovers would be opened a second time by the recovery.
    def open_lane
      return @lane if @lane&.channel&.open?

      lost = @state.synchronize { @lost }
      raise ConnectionLost, lost if lost

      close_stale
      channel = @connection.create_channel
      lane = Lane.new(channel, {}, {})
      channel.confirm_select(->(tag, multiple, nack) { on_confirm(lane, tag, multiple, nack) })
      LockedMin.guard(channel)
      @lane = lane
    end

    # The channel Bunny recovered for a lane given up at the loss.
    def close_stale
      @stale&.close if @stale&.open?
    rescue Bunny::Exception, Timeout::Error
      nil
    ensure
      @stale = nil
    end

    # Bunny hands a return only to the exchange object of that name in the channel's cache.
    # A named exchange is never declared here: the caller's topology is the caller's.
    def watch_returns(lane, name)
      return if lane.exchanges.key?(name)

      channel = lane.channel
      exchange = channel.find_exchange(name) ||
                 (name.empty? ? channel.default_exchange : Bunny::Exchange.new(channel, :direct, name, no_declare: true))
      exchange.on_return { |info, props, _body| on_return(lane, info, props) }
      lane.exchanges[name] = exchange
    end

    # The reader thread, before the ack of the publish returned.
    def on_return(lane, info, props)
      identity = identity_of(info.exchange, info.routing_key, props.message_id, props.correlation_id)
      returned = "#{info.reply_code} #{Headers.text(info.reply_text)}"
      @state.synchronize do
        entry = lane.unconfirmed.each_value.find { |e| !e.returned && e.identity == identity }
        entry.returned = returned if entry
      end
    end

    # The reader thread. Bunny splits a multiple ack into one call per tag; a multiple
    # one is honoured all the same. A tag no longer waited for (given up) is ignored.
    def on_confirm(lane, tag, multiple, nack)
      @state.synchronize do
        tags = multiple ? lane.unconfirmed.each_key.take_while { |t| t <= tag } : [tag]
        tags.each do |t|
          entry = lane.unconfirmed.delete(t) or next
          entry.outcome = nack ? :nack : :ack
          entry.settled.signal
        end
      end
    end

    # Why a publish still unconfirmed is given up, or nil to wait on.
    def waiting_failure(entry, deadline)
      channel = entry.lane.channel
      return "channel closed: #{channel_error(channel)}" if channel.closed?

      "no confirm within #{CONFIRM_TIMEOUT}s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= deadline
    end

    def forget(entry)
      @state.synchronize { entry.lane.unconfirmed.delete(entry.tag) }
    end

    def channel_error(channel)
      error = channel.instance_variable_get(:@last_channel_error)
      error ? error.message : "closed"
    end
  end
end
