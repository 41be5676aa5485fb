# frozen_string_literal: true

require "json"
require "securerandom"

module Acemq
  # One scatter-gather in progress: the replies that arrived for one requestMessageId.
  class Gathering
    # How a wait ended: replies in arrival order; ended: :count (the count was reached),
    # :timeout, :closed (the requester was closed) or :lost (its connection was lost, see
    # #lost_reason); complete: the count was reached, or there was none to reach.
    Ending = Struct.new(:replies, :ended, :complete)

    attr_reader :request_id, :correlation_id, :expected

    # timeout: seconds from now (the publish) to the gather's end (SG-9). early: resolve as
    # soon as the count is reached (SG-5), else wait out the timeout. restart: every reply
    # kept starts the timeout again (what SG-9.1 forbids; only a non-default policy).
    def initialize(request_id, correlation_id, expected, timeout, on_reply = nil, early: true, restart: false)
      @request_id = request_id
      @correlation_id = correlation_id
      @expected = expected
      @timeout = timeout
      @deadline = now + timeout
      @early = early
      @restart = restart
      @on_reply = on_reply
      @replies = []
      @mutex = Mutex.new
      @changed = ConditionVariable.new
      @closed = false
      @lost = nil
      @ended = nil
    end

    # Adds a reply and returns true, or returns false when the gathering has ended (count
    # reached, timeout passed, closed) though its requester has not removed it yet. Decided
    # under the lock the wait ends under, so a reply is either in the result or refused, for
    # the caller to count Unmatched (SG-8.1): never added to a finished gather and lost.
    def add(reply)
      @mutex.synchronize do
        return false if ending

        @replies << reply
        @deadline = now + @timeout if @restart
        # Before the wait can see the reply: the gather never returns with a call still to come.
        @on_reply&.call(reply)
        @changed.broadcast
        true
      end
    end

    def close
      @mutex.synchronize do
        @closed = true
        @changed.broadcast
      end
    end

    # Why the requester's connection was lost, once it was.
    def lost_reason = @mutex.synchronize { @lost }

    # The requester's connection was lost: no reply can reach the gather any more (RR-20.1).
    def lose(reason)
      @mutex.synchronize do
        @lost = reason
        @changed.broadcast
      end
    end

    # Waits until the count is reached (SG-5), the timeout passes or the gathering is
    # closed; returns an Ending.
    def wait
      @mutex.synchronize do
        @changed.wait(@mutex, @deadline - now) until ending
        Ending.new(@replies.dup, @ended, @expected.nil? || @replies.size >= @expected)
      end
    end

    private

    # Under @mutex: how the gathering ended (kept once decided), nil while it is open.
    def ending
      @ended ||= if @closed then :closed
                 elsif @lost then :lost
                 elsif @early && @expected && @replies.size >= @expected then :count
                 elsif now >= @deadline then :timeout
                 end
    end

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Scatter-gather on a Requester's reply queue (the SG rules).
  #
  #   quotes = requester.send_request_multi({ sku: "SKU-1" }, endpoint: "pricing",
  #                                         expected_reply_count: 3, timeout: 5)
  #
  # With expected_reply_count: returns as soon as that many replies arrived, raises
  # RequestTimeoutError (#partial_replies) on a shortfall. Without: returns whatever
  # arrived when the timeout passes. A returned publish (nothing routed it) raises
  # PublishReturned at once; closing the requester raises RequesterClosed at once. A gather
  # never counts in timed_out. type, when given, is every message's AMQP type property.
  module Gather
    # How many ended gathers a requester remembers, to tell a late gather reply (SG-8) from a request's (RR-8).
    ENDED_GATHERS_KEPT = 1024
    UNDECODABLE = Object.new.freeze
    private_constant :ENDED_GATHERS_KEPT, :UNDECODABLE

    # Publishes expected_reply_count copies (one without a count) to the endpoint queue:
    # a queue hands each message to one of its competing consumers (SG-2).
    def send_request_multi(body, endpoint:, expected_reply_count: nil, timeout: nil,
                           correlation_id: nil, type: nil, request_id: SecureRandom.uuid)
      # SG-2.1: one copy without a count; none (a loop up to an absent count) is the policy's other value.
      copies = expected_reply_count || @policy.multi_copies_without_count
      copies = 1 if @policy.multi_copies == :one # then one message reaches one worker
      # What SG-7.1 forbids: the copies sent taken as the count, resolved once each was answered.
      expected_reply_count ||= [copies, 1].max if @policy.gather_missing_count == :copies
      gather(body, "", endpoint, copies, expected_reply_count, timeout, correlation_id, type, request_id, nil)
    end

    # Publishes once to a fanout exchange; on_reply is called per reply, in arrival order.
    def publish_request(body, exchange:, expected_reply_count: nil, timeout: nil,
                        correlation_id: nil, type: nil, request_id: SecureRandom.uuid, &on_reply)
      # SG-2.2: one message; the policy's other value publishes it twice.
      gather(body, exchange, "", @policy.publish_copies, expected_reply_count, timeout, correlation_id, type, request_id, on_reply)
    end

    private

    def gather(body, exchange, routing_key, copies, expected, timeout, correlation_id, type, request_id, on_reply)
      timeout ||= default_timeout
      # SG-1: the copies carry the requestMessageId as correlation_id when none is given.
      correlation_id ||= request_id if @policy.gather_default_correlation == :request_message_id
      expected ||= 1 if @policy.gather_missing_count == :one # SG-7: no count means the whole budget
      gathering = Gathering.new(request_id, correlation_id, expected, timeout, on_reply,
                                early: @policy.gather_resolves_early, restart: @policy.gather_deadline == :restart_per_reply)
      payload = JSON.generate(body)
      call(timeout) do
        with_reply_address do |address|
          register { @gathers[request_id] = gathering }
          begin
            copies.times do |copy|
              # SG-1: every copy carries the gather's id (distinct: only the first does).
              message_id = copy.positive? && @policy.gather_copy_ids == :distinct ? SecureRandom.uuid : request_id
              publish_checked(@policy.honour_gather_returns, payload, exchange, routing_key, address,
                              message_id: message_id, correlation_id: correlation_id, headers: {}, type: type)
            end
            ending = gathering.wait
          ensure
            # From here on a reply for this gather is Unmatched (SG-8).
            @lock.synchronize { end_gathering(request_id) }
          end
          finish_gather(ending, request_id, expected, gathering)
        end
      end
    end

    # Under @lock: no longer pending, remembered as ended (bounded) so its late replies are
    # known as a gather's (SG-8).
    def end_gathering(request_id)
      @gathers.delete(request_id)
      @ended_gathers[request_id] = true
      @ended_gathers.shift while @ended_gathers.size > ENDED_GATHERS_KEPT
    end

    # A gather ended by close raises RequesterClosed, by a lost connection ConnectionLost; a
    # shortfall RequestTimeoutError (SG-6).
    def finish_gather(ending, request_id, expected, gathering)
      raise RequesterClosed if ending.ended == :closed
      raise ConnectionLost, gathering.lost_reason if ending.ended == :lost

      # Only requests count in timed_out (RR-9); counting gathers is the policy's other value.
      @lock.synchronize { @timed_out += 1 } if ending.ended == :timeout && @policy.count_gather_timeouts
      return ending.replies if ending.complete || @policy.gather_shortfall == :resolve

      raise RequestTimeoutError.new(request_id, ending.replies, expected)
    end

    # SG-4: replies go to the gather named by responseMessageId; false when none is waiting.
    def deliver_to_gather(headers, correlation_id, body)
      key = if @policy.gather_demux_by == :correlation_id
              correlation_id # what SG-4 forbids: a bus responder may copy a business id there
            else
              Headers.text(headers[Headers::RESPONSE_MESSAGE_ID])
            end
      gathering = @lock.synchronize { @gathers[key] || stray_gathering(correlation_id) }
      return false unless gathering

      if headers.key?(Headers::ERROR) && @policy.gather_failure_reply == :drop
        # SG-10: a failure reply is not an answer: kept out of the gather and its count.
        # Its own counter field, apart from SG-8's.
        count_unmatched(headers, correlation_id, counted: @policy.count_gather_failures)
      elsif (reply = gather_reply(headers, body)).equal?(UNDECODABLE)
        count_unmatched(headers, correlation_id) # kept out of the result (SG-8's choice)
      elsif !gathering.add(reply)
        # SG-8.1: the gather ended (count or timeout) before its requester removed it.
        count_unmatched(headers, correlation_id, counted: @policy.count_gather_unmatched)
      end
      true
    end

    # The decoded body; nil for a failure reply (kept by the policy's :keep), UNDECODABLE
    # for a body that is not JSON.
    def gather_reply(headers, body)
      return nil if headers.key?(Headers::ERROR)

      JSON.parse(Headers.text(body))
    rescue JSON::ParserError
      UNDECODABLE
    end

    # SG-8: a reply for no pending gather is Unmatched. The policy's other value gives one
    # that names no pending gather (and no pending request) to the oldest gather. Under @lock.
    def stray_gathering(correlation_id)
      return nil unless @policy.gather_stray_reply == :oldest_gather && !@pending.key?(correlation_id)

      @gathers.each_value.first
    end
  end
end
