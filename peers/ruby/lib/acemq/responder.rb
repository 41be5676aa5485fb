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
  # :unanswerable.
  class Responder
    include Observable

    DEFAULT_MAX_ATTEMPTS = 3
    # answered-after-publish: wide enough that the suite catches it every time.
    MUTANT_DELAY = 1.0
    STOP_GRACE = 5

    attr_reader :queue, :profile, :mutant

    def initialize(connection, queue:, bind: nil, max_attempts: DEFAULT_MAX_ATTEMPTS,
                   profile: "current", mutant: nil, concurrency: 8, &handler)
      raise ArgumentError, "a handler block is required" unless handler

      @connection = connection
      @queue = queue
      @bind = bind
      @max_attempts = max_attempts
      @profile = Profile.fetch(profile)
      @mutant = Mutants.check!(mutant, :responder)
      @concurrency = concurrency
      @handler = handler
      @lock = Mutex.new
      # RR-16: the counters exist before anything is consumed.
      @answered = 0
      @unanswerable = 0
      @lazy_counters_made = false # only for the counters-after-subscribe mutant
    end

    def answered = @lock.synchronize { @answered }
    def unanswerable = @lock.synchronize { @unanswerable }

    def start
      # On stop, handlers still running get STOP_GRACE to finish; what they leave
      # unacknowledged goes back to the queue when the channel closes.
      @channel = @connection.create_channel(nil, @concurrency, false, STOP_GRACE)
      @channel.prefetch(@concurrency)
      quorum = { durable: true, arguments: { "x-queue-type" => "quorum" } }
      request_queue = @channel.queue(@queue, quorum)
      # classic-dlq mutant: breaks RR-17 with a classic dead-letter queue.
      dlq_options = @mutant == "classic-dlq" ? { durable: true, arguments: { "x-queue-type" => "classic" } } : quorum
      @channel.queue(dlq, dlq_options)
      request_queue.bind(@bind[:exchange], routing_key: @bind[:routing_key].to_s) if @bind
      @publisher = ConfirmedPublisher.new(@connection)
      @consumer = request_queue.subscribe(manual_ack: true) { |info, props, body| handle(info, props, body) }
      self
    end

    def stop
      @consumer&.cancel
      @publisher&.close
      @channel&.close if @channel&.open?
    rescue Bunny::Exception, Timeout::Error
      nil
    end

    def dlq = "#{@queue}.dlq"

    private

    def handle(info, props, body)
      headers = Headers.normalize(props.headers)
      message_id = Headers.text(props.message_id)
      order = @mutant == "native-first" ? %i[native header] : @profile.read_order
      address, source = Headers.reply_address(headers, props.reply_to, order)
      return accept_unanswerable(info, props, body, message_id) unless address

      request = Request.new(
        message_id: message_id, correlation_id: Headers.text(props.correlation_id),
        reply_to: address, reply_to_source: source, attempt: Headers.attempt(headers),
        headers: @mutant == "no-strip" ? headers : Headers.strip_private(headers)
      )
      result = begin
        reject_strict_header_types(headers)
        request.body = JSON.parse(Headers.text(body))
        emit(:handled, request: request)
        [:ok, JSON.generate(@handler.call(request))]
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

    # RR-15: counted before the reply leaves, taken back if it does not arrive.
    def answer(info, props, body, request, payload)
      counted = @mutant != "answered-after-publish" && !lazy_counter_first_delivery?
      count_answered(1) if counted
      begin
        publish_reply(request, payload, {})
      rescue PublishFailed => e
        count_answered(-1) if counted && @mutant != "no-rollback"
        return retry_or_dead_letter(info, props, body, request, e)
      end
      if @mutant == "answered-after-publish"
        Thread.new { sleep MUTANT_DELAY; count_answered(1) }
      end
      emit(:replied, message_id: request.message_id, failure: nil)
      @channel.ack(info.delivery_tag)
    end

    # RR-10, RR-11: the failure goes back to the caller, then the request to the DLQ once.
    def fail_request(info, props, body, request, failure)
      count_answered(1) if @mutant == "counts-failures"
      begin
        publish_reply(request, "", Headers::ERROR => failure)
      rescue PublishFailed => e
        count_answered(-1) if @mutant == "counts-failures"
        return retry_or_dead_letter(info, props, body, request, e)
      end
      emit(:replied, message_id: request.message_id, failure: failure)
      if @mutant == "no-dlq-on-failure"
        @channel.ack(info.delivery_tag)
      else
        dead_letter_and_ack(info, props, body, failure)
      end
    end

    # RR-14: requeue until the last attempt, then dead-letter; never ack into nowhere.
    def retry_or_dead_letter(info, props, body, request, error)
      emit(:reply_failed, message_id: request.message_id, attempt: request.attempt, error: error.message)
      if @mutant == "acks-undeliverable" # breaks RR-14: acknowledged into nowhere
        @channel.ack(info.delivery_tag)
      elsif request.attempt >= @max_attempts
        dead_letter_and_ack(info, props, body, "UndeliverableReply: #{error.message}")
      else
        # Bunny's nack does not requeue unless told to.
        @channel.nack(info.delivery_tag, false, true)
      end
    end

    # RR-12: nothing to reply to, so count it and accept it.
    def accept_unanswerable(info, props, body, message_id)
      @lock.synchronize { @unanswerable += 1 }
      if @mutant == "dead-letter-unanswerable"
        dead_letter_and_ack(info, props, body, "Unanswerable: the request names no reply address")
      else
        @channel.ack(info.delivery_tag)
      end
      emit(:unanswerable, message_id: message_id)
    end

    # RR-4: default exchange, reply address as routing key, both correlation fields.
    def publish_reply(request, payload, headers)
      # no-response-message-id mutant: breaks SG-3, so a gatherer cannot demultiplex.
      if request.message_id && @mutant != "no-response-message-id"
        headers = headers.merge(Headers::RESPONSE_MESSAGE_ID => request.message_id)
      end
      # correlation-from-correlation-id mutant: breaks RR-4 by copying the wrong property.
      correlation_id = @mutant == "correlation-from-correlation-id" ? request.correlation_id : request.message_id
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

    # strict-header-types mutant: breaks WF-1 (and RR-5) by failing a request over a header
    # type other clients legitimately write, before the handler runs.
    def reject_strict_header_types(headers)
      return unless @mutant == "strict-header-types"

      name = Headers.strict_type_violation(headers)
      raise MalformedHeader, name if name
    end

    def count_answered(delta)
      @lock.synchronize { @answered += delta }
    end

    # counters-after-subscribe mutant (RR-16): a counter made lazily, once the first
    # delivery has been handled, never counts that delivery.
    def lazy_counter_first_delivery?
      return false unless @mutant == "counters-after-subscribe"

      @lock.synchronize do
        next false if @lazy_counters_made

        @lazy_counters_made = true
      end
    end

    def safely_requeue(info)
      @channel.nack(info.delivery_tag, false, true)
    rescue StandardError => e
      warn "acemq: responder #{@queue}: could not requeue: #{e.class}: #{e.message}"
    end
  end
end
