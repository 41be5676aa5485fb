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
  # :unanswerable, and :channel_closed (reason) when the broker closes the consumer's channel.
  class Responder
    include Observable

    DEFAULT_MAX_ATTEMPTS = Headers::DEFAULT_MAX_ATTEMPTS
    # Handler threads and prefetch: each waits for its reply's confirm before acking (RR-14,
    # RR-15), so this bounds the replies in flight; 32, as the Go and .NET bindings.
    DEFAULT_CONCURRENCY = 32
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
    end

    def answered = @lock.synchronize { @answered }
    def unanswerable = @lock.synchronize { @unanswerable }

    def start
      @policy = @policy.freeze
      # On stop, handlers still running get STOP_GRACE to finish; what they leave
      # unacknowledged goes back to the queue when the channel closes.
      @channel = @connection.create_channel(nil, @concurrency, false, STOP_GRACE)
      @channel.on_error { |_channel, close| emit(:channel_closed, reason: "#{close.reply_code} #{close.reply_text}") }
      @channel.prefetch(@concurrency)
      # RR-17: both durable quorum queues, declared before the consumer.
      request_queue = @channel.queue(@queue, durable: true, arguments: { "x-queue-type" => "quorum" })
      @channel.queue(dlq, durable: true, arguments: { "x-queue-type" => @policy.dlq_queue_type.to_s })
      request_queue.bind(@bind[:exchange], routing_key: @bind[:routing_key].to_s) if @bind
      @publisher = ConfirmedPublisher.new(@connection)
      @consumer = request_queue.subscribe(manual_ack: true) { |info, props, body| handle(info, props, body) }
      self
    end

    def stop
      # After the broker closed the connection there is nothing left to cancel or close.
      return unless @connection.open?

      @consumer&.cancel
      @publisher&.close
      @channel.close if @channel&.open?
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    def dlq = "#{@queue}.dlq"

    # The attempts made at a request whose reply cannot be delivered.
    def max_attempts = @max_attempts || @policy.default_max_attempts

    private

    def handle(info, props, body)
      headers = Headers.normalize(props.headers)
      message_id = Headers.text(props.message_id)
      address, source = Headers.reply_address(headers, props.reply_to, @policy.read_order)
      return accept_unanswerable(info, props, body, message_id) unless address

      request = Request.new(
        message_id: message_id, correlation_id: Headers.text(props.correlation_id),
        reply_to: address, reply_to_source: source, attempt: Headers.attempt(headers, @policy.attempt_base),
        headers: @policy.strip_engine_headers ? Headers.strip_private(headers) : headers
      )
      result = begin
        reject_strict_header_types(headers)
        request.body = decode_request(body)
        emit(:handled, request: request)
        [:ok, JSON.generate(@handler.call(request))]
      rescue MalformedRequest => e
        # Dropping it (acked, nothing sent, nothing dead-lettered) is the policy's other value.
        return @channel.ack(info.delivery_tag) if @policy.malformed_request == :drop

        [:failed, Headers.failure_text(e)]
      rescue StandardError => e
        [:failed, Headers.failure_text(e)]
      end
      if result.first == :ok
        answer(info, props, body, request, result.last)
      else
        fail_request(info, props, body, request, result.last)
      end
    rescue StandardError => e
      # Never leave a delivery unsettled: it goes back to the queue for another attempt.
      warn "acemq: responder #{@queue}: #{e.class}: #{e.message}"
      safely_requeue(info)
    end

    # A body that is not JSON fails the request before the handler runs, as a handler
    # failure would: a failure reply, then the DLQ (RR-10, RR-11).
    def decode_request(body)
      JSON.parse(Headers.text(body))
    rescue JSON::ParserError => e
      raise MalformedRequest, e.message
    end

    # RR-15: counted before the reply leaves, taken back if it does not arrive.
    def answer(info, props, body, request, payload)
      timing = @policy.answered_timing
      exists = counters_exist?
      counted = exists && !timing.after_confirm?
      count_answered(1) if counted
      begin
        publish_reply(request, payload, {})
      rescue PublishFailed => e
        count_answered(-1) if counted && @policy.rollback_answered
        return retry_or_dead_letter(info, props, body, request, "#{Headers::UNDELIVERABLE_REPLY}#{e.message}", e.message)
      end
      count_answered_later(timing.delay) if exists && timing.after_confirm?
      emit(:replied, message_id: request.message_id, failure: nil)
      @channel.ack(info.delivery_tag)
    end

    # RR-10, RR-11: the failure goes back to the caller, then the request to the DLQ once.
    # A failure reply that cannot be delivered goes to RR-14's retries like any reply.
    def fail_request(info, props, body, request, failure)
      # Before RR-10 a failure sent nothing back: the retry policy had the request.
      return retry_request(info, props, body, request, failure) if @policy.handler_failure == :retry

      counted = @policy.count_failures_answered
      count_answered(1) if counted
      begin
        publish_reply(request, "", Headers::ERROR => failure)
      rescue PublishFailed => e
        # Unchecked (what RR-14 forbids): the failure reply is taken as sent whatever became of it.
        unless @policy.failure_reply_delivery == :unchecked
          count_answered(-1) if counted
          return retry_or_dead_letter(info, props, body, request, "#{Headers::UNDELIVERABLE_REPLY}#{e.message}", e.message)
        end
      end
      emit(:replied, message_id: request.message_id, failure: failure)
      if @policy.dead_letter_failures
        dead_letter_and_ack(info, props, body, failure)
      else
        @channel.ack(info.delivery_tag)
      end
    end

    # RR-14: requeue until the last attempt, then dead-letter; never ack into nowhere.
    def retry_or_dead_letter(info, props, body, request, reason, error)
      emit(:reply_failed, message_id: request.message_id, attempt: request.attempt, error: error)
      if @policy.undeliverable_reply == :ack # what RR-14 forbids: acknowledged into nowhere
        @channel.ack(info.delivery_tag)
      else
        retry_request(info, props, body, request, reason)
      end
    end

    def retry_request(info, props, body, request, reason)
      if Headers.retry_decision(request.attempt, max_attempts) == :dead_letter
        dead_letter_and_ack(info, props, body, reason)
      else
        # Bunny's nack does not requeue unless told to.
        @channel.nack(info.delivery_tag, false, true)
      end
    end

    # RR-12: nothing to reply to, so count it and accept it.
    def accept_unanswerable(info, props, body, message_id)
      @lock.synchronize { @unanswerable += 1 }
      if @policy.unanswerable == :dead_letter
        dead_letter_and_ack(info, props, body, "Unanswerable: the request names no reply address")
      else
        @channel.ack(info.delivery_tag)
      end
      emit(:unanswerable, message_id: message_id)
    end

    # RR-4: default exchange, reply address as routing key, both correlation fields.
    def publish_reply(request, payload, headers)
      # SG-3: without responseMessageId a gatherer cannot demultiplex.
      if request.message_id && @policy.response_message_id
        headers = headers.merge(Headers::RESPONSE_MESSAGE_ID => request.message_id)
      end
      # RR-4.2: the request's message_id, not its correlation_id.
      correlation_id = @policy.reply_correlation_from == :message_id ? request.message_id : request.correlation_id
      properties = { correlation_id: correlation_id, content_type: Headers::CONTENT_TYPE,
                     headers: headers, persistent: false }
      @publisher.publish(payload, exchange: "", routing_key: request.reply_to, **properties.compact)
    end

    # RR-11's choice: published by the responder so the reason is ours, not "rejected".
    # A dead-letter that fails raises, and handle requeues the request.
    def dead_letter_and_ack(info, props, body, reason)
      headers = (props.headers || {}).merge(Headers::DEAD_LETTER_REASON => reason)
      properties = { message_id: props.message_id, correlation_id: props.correlation_id,
                     reply_to: props.reply_to, type: props.type, content_type: props.content_type,
                     headers: headers, persistent: true }
      @publisher.publish(body, exchange: "", routing_key: dlq, **properties.compact)
      @channel.ack(info.delivery_tag)
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

    # The count of an answer made only after its reply was confirmed, and later still.
    def count_answered_later(delay)
      return count_answered(1) unless delay.positive?

      Thread.new do
        sleep delay
        count_answered(1)
      end
    end

    def safely_requeue(info)
      @channel.nack(info.delivery_tag, false, true)
    rescue StandardError => e
      warn "acemq: responder #{@queue}: could not requeue: #{e.class}: #{e.message}"
    end
  end
end
