# frozen_string_literal: true

require "json"
require "bunny"

module Acemq
  # What a handler is given: the decoded body and what the binding read off the wire.
  Request = Struct.new(:body, :message_id, :correlation_id, :reply_to, :reply_to_source,
                       :headers, :attempt, keyword_init: true)

  # Consumes a durable quorum request queue and replies to each request's reply address.
  #
  #   responder = Acemq::Responder.new(connection, queue: "pricing.requests") { |request| quote(request.body) }
  #   responder.start
  #
  # The handler's return value is the JSON reply; an exception is sent back as acemq-error
  # (RR-10). Events (see Observable#on): :handled, :replied, :reply_failed, :dead_lettered,
  # :unanswerable, :channel_closed (reason) when the broker closes the consumer's channel,
  # :connection_lost (reason) and :recovered once Bunny's automatic recovery has the
  # connection back, both queues declared again and the consumer consuming again (RR-20.2).
  # A request taken and not yet settled when the connection is lost is not acked: the
  # broker delivers it again, as its next attempt (RR-20.4). The counters carry on.
  class Responder
    include Observable

    DEFAULT_MAX_ATTEMPTS = Headers::DEFAULT_MAX_ATTEMPTS
    # Handler threads and prefetch: each waits for its reply's confirm before acking (RR-14,
    # RR-15), so this bounds the replies in flight; 32, as the Go and .NET bindings.
    DEFAULT_CONCURRENCY = 32
    # How long stop waits for requests whose handler has returned to be settled.
    STOP_GRACE = 5

    attr_reader :queue

    # max_attempts: RR-14's attempts at an undeliverable reply (nil: the spec's 3).
    def initialize(connection, queue:, bind: nil, max_attempts: nil, concurrency: DEFAULT_CONCURRENCY, &handler)
      raise ArgumentError, "a handler block is required" unless handler

      @connection = connection
      @queue = queue
      @bind = bind
      @max_attempts = max_attempts
      @policy = ResponderPolicy::DEFAULT
      @concurrency = concurrency
      @handler = handler
      @lock = Mutex.new
      # RR-16: the counters exist before anything is consumed.
      @answered = 0
      @unanswerable = 0
      @first_answer_seen = false
      # stop: no new request is taken once stopping; settling counts the requests past
      # their handler not yet settled (acked, requeued or dead-lettered), which stop waits
      # for; abandoning (after that wait) makes a handler that returns later leave its
      # request unsettled, for the broker to requeue.
      @stopping = false
      @abandoning = false
      @settling = 0
      @settled = ConditionVariable.new
    end

    def answered = @lock.synchronize { @answered }
    def unanswerable = @lock.synchronize { @unanswerable }

    def start
      @policy = @policy.freeze
      # No shutdown timeout for the consumer threads: Bunny's cancel would wait for the
      # first idle thread, not for the answered requests; stop does its own wait.
      @channel = @connection.create_channel(nil, @concurrency, false, nil)
      @channel.on_error { |_channel, close| emit(:channel_closed, reason: "#{close.reply_code} #{close.reply_text}") }
      @channel.prefetch(@concurrency)
      # RR-17: both durable quorum queues, declared before the consumer.
      request_queue = declare_request_queue
      @channel.queue(dlq, durable: true, arguments: { "x-queue-type" => @policy.dlq_queue_type.to_s })
      request_queue.bind(@bind[:exchange], routing_key: @bind[:routing_key].to_s) if @bind
      @publisher = ConfirmedPublisher.new(@connection)
      @consumer = request_queue.subscribe(manual_ack: true) { |info, props, body| handle(info, props, body) }
      # Bunny's recovery declares both queues again, binds and consumes again on this channel.
      @watch = ConnectionWatch.of(@connection).subscribe(recover: @policy.recover_connection,
                                                         lost: ->(reason, _recovering) { emit(:connection_lost, reason: reason) },
                                                         recovered: -> { emit(:recovered, queue: @queue) })
      self
    end

    # Cancels the consumer, waits (at most STOP_GRACE) until every request whose handler
    # has returned is settled, then closes. Closing first would put a request whose reply
    # is already with its caller (its confirm, then its ack, still on the way) back on the
    # queue, for the next responder to answer a second time. Handlers still running are
    # abandoned: their requests, and the deliveries not yet started, go back to the queue
    # when the channel closes.
    def stop
      @lock.synchronize { @stopping = true }
      @watch&.cancel
      # After the broker closed the connection there is nothing left to cancel or close.
      return unless @connection.open?

      cancel_consumer
      await_settled(STOP_GRACE)
      @publisher&.close
      @channel.close if @channel&.open? && @connection.open?
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    def dlq = "#{@queue}.dlq"

    # The attempts made at a request whose reply cannot be delivered.
    def max_attempts = @max_attempts || @policy.default_max_attempts

    private

    # The policy's request_queue: :quorum declares it durable quorum (RR-17.1);
    # :classic_if_missing (what RR-17.1 forbids) takes an existing queue as it is and
    # declares a missing one classic. The passive probe runs on a channel of its own:
    # a 404 closes the channel it was asked on.
    def declare_request_queue
      return @channel.queue(@queue, durable: true, arguments: { "x-queue-type" => "quorum" }) if @policy.request_queue == :quorum

      probe = @connection.create_channel
      begin
        probe.queue(@queue, passive: true)
        probe.close
        @channel.queue(@queue, passive: true)
      rescue Bunny::NotFound
        @channel.queue(@queue, durable: true)
      end
    end

    def handle(info, props, body)
      # A delivery that reaches its thread after stop began is left for the broker to requeue.
      return if @lock.synchronize { @stopping }

      # What RR-20.4 forbids: the request acked before its handler ran, gone if the connection is lost.
      @channel.ack(info.delivery_tag) if @policy.ack_timing == :on_delivery

      headers = Headers.normalize(props.headers)
      message_id = Headers.text(props.message_id)
      address, source = Headers.reply_address(address_headers(headers), props.reply_to, @policy.read_order)
      return settling { accept_unanswerable(info, props, body, message_id) } unless address

      request = Request.new(
        message_id: message_id, correlation_id: Headers.text(props.correlation_id),
        reply_to: address, reply_to_source: source, attempt: Headers.attempt(headers, @policy.attempt_base),
        headers: handler_headers(headers)
      )
      result = begin
        reject_strict_header_types(headers)
        request.body = decode_request(body)
        emit(:handled, request: request)
        [:ok, JSON.generate(@handler.call(request))]
      rescue MalformedRequest => e
        # Dropping it (acked, nothing sent, nothing dead-lettered) is the policy's other value.
        # The failure reply without the dead-letter (:reply_only) is what RR-19.2 forbids too.
        case @policy.malformed_request
        when :drop then [:drop]
        when :reply_only then [:failed_no_dlq, Headers.failure_text(e)]
        else [:failed, Headers.failure_text(e)]
        end
      rescue MalformedHeader => e
        [:failed, Headers.failure_text(e)]
      rescue StandardError => e
        [:failed, Headers.failure_text(e, qualified: @policy.error_type_name == :qualified)]
      end
      settling do
        case result.first
        when :ok then answer(info, props, body, request, result.last)
        when :drop then ack(info)
        when :failed_no_dlq then fail_request(info, props, body, request, result.last, dead_letter: false)
        else fail_request(info, props, body, request, result.last)
        end
      end
    rescue StandardError => e
      # Never leave a delivery unsettled: it goes back to the queue for another attempt.
      warn "acemq: responder #{@queue}: #{e.class}: #{e.message}"
      safely_requeue(info)
    end

    # Runs the settling of a request (reply, then ack / nack / dead-letter) counted, so stop
    # can wait for it; after stop's wait it is abandoned instead (the broker requeues it).
    def settling
      abandoned = @lock.synchronize do
        @settling += 1 unless @abandoning
        @abandoning
      end
      return if abandoned

      begin
        yield
      ensure
        @lock.synchronize do
          @settling -= 1
          @settled.broadcast if @settling.zero?
        end
      end
    end

    def await_settled(grace)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + grace
      @lock.synchronize do
        while @settling.positive?
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          break if left <= 0

          @settled.wait(@lock, left)
        end
        unless @settling.zero?
          warn "acemq: responder #{@queue}: stopping with #{@settling} request(s) unsettled after #{grace}s"
        end
        @abandoning = true
      end
    end

    def cancel_consumer
      @consumer&.cancel
    rescue Bunny::Exception, Timeout::Error => e
      warn "acemq: responder #{@queue}: cancelling the consumer: #{e.class}: #{e.message}"
    end

    # RR-2: a byte-array acemq-reply-to is read as UTF-8 like a long string; taking it as
    # absent (then reading reply_to, RR-3) is the policy's other value.
    def address_headers(headers)
      return headers unless @policy.bytes_address == :ignore && headers[Headers::REPLY_TO].is_a?(ReceivedByteArray)

      headers.reject { |name, _| name == Headers::REPLY_TO }
    end

    # RR-5: the handler sees every header but the engine's own x-acemq-* ones; the spec's
    # headers (acemq-reply-to, any acemq-*) are the request's and stay. Hiding those too is
    # the policy's other value.
    def handler_headers(headers)
      headers = Headers.strip_private(headers, @policy.strip_prefix.to_s) if @policy.strip_engine_headers
      headers = Headers.strip_private(headers, Headers::SPEC_PREFIX) unless @policy.pass_spec_headers
      headers
    end

    # A body that is not JSON fails the request before the handler runs, as a handler
    # failure would: a failure reply, then the DLQ (RR-10, RR-11).
    def decode_request(body)
      JSON.parse(Headers.text(body))
    rescue JSON::ParserError => e
      raise MalformedRequest, e.message
    end

    # RR-15: counted before the reply leaves, taken back if it does not arrive. Counting
    # on the confirm (the policy's other value) needs no rollback: a failed publish was
    # never counted.
    def answer(info, props, body, request, payload)
      after_confirm = @policy.answered_timing == :after_confirm
      exists = counters_exist?
      counted = exists && !after_confirm
      count_answered(1) if counted
      begin
        publish_reply(request, payload, {})
      rescue PublishFailed => e
        # RR-14.5: a direct reply-to reply is at most once: counted, acked, never retried.
        unless at_most_once?(request)
          count_answered(-1) if counted && @policy.rollback_answered
          return retry_or_dead_letter(info, props, body, request, "#{Headers::UNDELIVERABLE_REPLY}#{e.message}", e.message)
        end
      end
      count_answered(1) if exists && after_confirm
      emit(:replied, message_id: request.message_id, failure: nil)
      ack(info)
    end

    # RR-10, RR-11: the failure goes back to the caller, then the request to the DLQ once.
    # A failure reply that cannot be delivered goes to RR-14's retries like any reply.
    def fail_request(info, props, body, request, failure, dead_letter: true)
      # Before RR-10 a failure sent nothing back: the retry policy had the request.
      return retry_request(info, props, body, request, failure) if @policy.handler_failure == :retry

      counted = @policy.count_failures_answered
      count_answered(1) if counted
      # RR-10.1: the body is empty; the error as a JSON body is the policy's other value.
      payload = @policy.failure_body == :json ? JSON.generate({ error: failure }) : ""
      begin
        publish_reply(request, payload, Headers::ERROR => failure)
      rescue PublishFailed => e
        # Unchecked (what RR-14 forbids): the failure reply is taken as sent whatever became of it.
        # RR-14.5: a failure reply to a direct reply-to address is at most once too.
        unless @policy.failure_reply_delivery == :unchecked || at_most_once?(request)
          count_answered(-1) if counted
          return retry_or_dead_letter(info, props, body, request, "#{Headers::UNDELIVERABLE_REPLY}#{e.message}", e.message)
        end
      end
      emit(:replied, message_id: request.message_id, failure: failure)
      # What RR-11.2 forbids: the failed request requeued (handled and answered again) until its last attempt.
      if @policy.retry_failures
        retry_request(info, props, body, request, failure)
      elsif @policy.dead_letter_failures && dead_letter
        dead_letter_and_ack(info, props, body, failure)
      else
        ack(info)
      end
    end

    # RR-14: requeue until the last attempt, then dead-letter; never ack into nowhere.
    def retry_or_dead_letter(info, props, body, request, reason, error)
      emit(:reply_failed, message_id: request.message_id, attempt: request.attempt, error: error)
      if @policy.undeliverable_reply == :ack # what RR-14 forbids: acknowledged into nowhere
        ack(info)
      else
        retry_request(info, props, body, request, reason, last_ack: @policy.last_attempt == :ack)
      end
    end

    # last_ack: the policy's last_attempt: :ack (what RR-14.2 forbids) acks the last attempt
    # at an undeliverable reply instead of dead-lettering it.
    def retry_request(info, props, body, request, reason, last_ack: false)
      if Headers.retry_decision(request.attempt, max_attempts) == :dead_letter
        return ack(info) if last_ack

        dead_letter_and_ack(info, props, body, reason)
      else
        requeue(info)
      end
    end

    # RR-12: nothing to reply to, so count it and accept it.
    def accept_unanswerable(info, props, body, message_id)
      # Not counting it (only the event) is the policy's other value.
      @lock.synchronize { @unanswerable += 1 } if @policy.count_unanswerable
      if @policy.unanswerable == :dead_letter
        dead_letter_and_ack(info, props, body, "Unanswerable: the request names no reply address")
      else
        ack(info)
      end
      emit(:unanswerable, message_id: message_id)
    end

    # RR-14.5: a reply to RabbitMQ's direct reply-to (amq.rabbitmq.reply-to.<token>) is sent
    # once without mandatory: 3.10 to 4.1 return every such reply, delivered or not, 4.2 none.
    def at_most_once?(request)
      request.reply_to.start_with?(Headers::DIRECT_REPLY_TO_PREFIX) && @policy.direct_reply_to == :at_most_once
    end

    # RR-4, SG-3: the request's id is its message_id, or its correlation_id when it has none.
    def request_id(request) = Headers.request_id(request.message_id, request.correlation_id)

    # RR-4.2: the request's id; its correlation_id or its message_id alone is what RR-4.2 forbids.
    def reply_correlation_id(request, id)
      case @policy.reply_correlation_from
      when :correlation_id then request.correlation_id
      when :message_id then request.message_id
      else id
      end
    end

    # RR-4: default exchange, reply address as routing key, both correlation fields.
    def publish_reply(request, payload, headers)
      id = request_id(request)
      # SG-3: without responseMessageId a gatherer cannot demultiplex.
      headers = headers.merge(Headers::RESPONSE_MESSAGE_ID => id) if id && @policy.response_message_id
      correlation_id = reply_correlation_id(request, id)
      # RR-4.3: application/json; none is the policy's other value.
      content_type = @policy.reply_content_type == :none ? nil : Headers::CONTENT_TYPE
      properties = { correlation_id: correlation_id, content_type: content_type,
                     headers: headers, persistent: false }
      @publisher.publish(payload, exchange: "", routing_key: request.reply_to, mandatory: !at_most_once?(request),
                                  **properties.compact)
    end

    # RR-11's choice: published by the responder so the reason is ours, not "rejected".
    # A dead-letter that fails raises, and handle requeues the request.
    def dead_letter_and_ack(info, props, body, reason)
      headers = (props.headers || {}).merge(Headers::DEAD_LETTER_REASON => reason)
      properties = { message_id: props.message_id, correlation_id: props.correlation_id,
                     reply_to: props.reply_to, type: props.type, content_type: props.content_type,
                     headers: headers, persistent: true }
      # What RR-11.4 forbids: a copy without the request's correlation_id and reply_to.
      properties = properties.merge(correlation_id: nil, reply_to: nil) if @policy.dead_letter_copy == :id_and_headers
      @publisher.publish(body, exchange: "", routing_key: dlq, **properties.compact)
      ack(info)
      emit(:dead_lettered, message_id: Headers.text(props.message_id), reason: reason)
    end

    # A strict reader (what WF-1 and RR-5 forbid) fails a request over a header type other
    # clients legitimately write, before the handler runs.
    def reject_strict_header_types(headers)
      return unless @policy.header_types == :strict

      name = Headers.strict_type_violation(headers)
      raise MalformedHeader, name if name
    end

    def count_answered(delta)
      @lock.synchronize { @answered += delta }
    end

    # RR-16: true from the start. Counters made lazily (counters_created:
    # :after_first_delivery) come to exist as the first answer is handled, which is lost.
    def counters_exist?
      return true if @policy.counters_created == :before_subscribe

      @lock.synchronize { @first_answer_seen.tap { @first_answer_seen = true } }
    end

    # Settling a request (RR-14): acked, or requeued for its next attempt. Once acked on
    # delivery (ack_timing: :on_delivery) there is nothing left to settle: a requeue cannot
    # happen and the request is gone.
    def ack(info)
      @channel.ack(info.delivery_tag) unless @policy.ack_timing == :on_delivery
    end

    def requeue(info)
      # Bunny's nack does not requeue unless told to.
      @channel.nack(info.delivery_tag, false, true) unless @policy.ack_timing == :on_delivery
    end

    def safely_requeue(info)
      requeue(info)
    rescue StandardError => e
      warn "acemq: responder #{@queue}: could not requeue: #{e.class}: #{e.message}"
    end
  end
end
