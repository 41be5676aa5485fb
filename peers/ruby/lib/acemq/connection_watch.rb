# frozen_string_literal: true

require "bunny"

module Acemq
  # What the requesters, responders and publishers on one Bunny session hear of its
  # connection: that it was lost (at once, with the broker's reason) and that Bunny's
  # automatic recovery brought it back (channels, queues, bindings and consumers recovered).
  #
  # Bunny keeps the Session object across a recovery but tells nobody of the loss itself,
  # and has a single callback slot for a finished recovery (the application's), so the
  # watch is attached to the session. It applies to a session with automatic recovery,
  # which Connection.open turns on; a session without it reports a loss to its
  # session_error_handler only, as Bunny does.
  class ConnectionWatch
    # A requester's, responder's or publisher's interest. recover false: this session stays
    # down once lost (a policy; one such subscriber keeps the whole session down).
    # lost is called with the reason and whether Bunny is recovering; recovered with nothing.
    Subscription = Struct.new(:watch, :recover, :lost, :recovered) do
      def cancel = watch.unsubscribe(self)
    end

    ATTACHING = Mutex.new
    private_constant :ATTACHING

    # Prepended to a watched session's singleton class. Bunny 2.19 enters its recovery in
    # handle_network_failure, for a failed socket and (recover_from_connection_close) for a
    # connection.close from the broker alike, from the reader loop or from a thread whose
    # write failed, and maybe from more than one at once; it calls
    # notify_of_recovery_completion once the channels are recovered.
    module Signals
      def acemq_watch = @acemq_watch ||= ConnectionWatch.new

      def handle_network_failure(exception)
        case acemq_watch.lost(exception)
        when :recover then super
        when :stay_down then acemq_stay_down(exception)
        end
      end

      def notify_of_recovery_completion
        super
        acemq_watch.recovered
      end

      private

      # What Bunny does when it does not recover: the connection ends (status closed, so its
      # reader loop stops quietly; no heartbeats; consumer threads stopped as a recovery
      # would stop them) and the session's error handler is told why.
      def acemq_stay_down(exception)
        @status_mutex.synchronize { @status = :closed }
        maybe_shutdown_heartbeat_sender
        shut_down_all_consumer_work_pools!
        close_transport
        @session_error_handler.raise(exception)
      end
    end

    # The watch of session (any Bunny::Session), attached on first use.
    def self.of(session)
      ATTACHING.synchronize do
        session.singleton_class.prepend(Signals) unless session.singleton_class.include?(Signals)
        session.acemq_watch
      end
    end

    # The broker's code and text where it closed the connection, else the network error.
    def self.reason(error)
      close = error.respond_to?(:connection_close) ? error.connection_close : nil
      close ? "#{close.reply_code} #{close.reply_text}" : "#{error.class.name}: #{error.message}"
    end

    def initialize
      @lock = Mutex.new
      @subscriptions = []
      @state = :open # :recovering, :down
    end

    def subscribe(recover: true, lost: nil, recovered: nil)
      Subscription.new(self, recover, lost, recovered).tap { |s| @lock.synchronize { @subscriptions << s } }
    end

    def unsubscribe(subscription)
      @lock.synchronize { @subscriptions.delete(subscription) }
    end

    # The session's connection was lost: :recover (Bunny recovers; again while it is
    # recovering), :stay_down (the first notice, and a subscriber does not recover) or nil
    # (already down). Subscribers hear of the first notice only, before Bunny's recovery starts.
    def lost(error)
      subscriptions, state = @lock.synchronize do
        return @state == :recovering ? :recover : nil unless @state == :open

        @state = @subscriptions.all?(&:recover) ? :recovering : :down
        [@subscriptions.dup, @state]
      end
      reason = self.class.reason(error)
      subscriptions.each { |s| notify(s.lost, reason, state == :recovering) }
      state == :recovering ? :recover : :stay_down
    end

    # Bunny's recovery finished: the connection, channels, queues and consumers are back.
    def recovered
      subscriptions = @lock.synchronize do
        @state = :open
        @subscriptions.dup
      end
      subscriptions.each { |s| notify(s.recovered) }
    end

    private

    def notify(callback, *args)
      callback&.call(*args)
    rescue StandardError => e
      warn "acemq: connection watch: #{e.class}: #{e.message}"
    end
  end
  private_constant :ConnectionWatch
end
