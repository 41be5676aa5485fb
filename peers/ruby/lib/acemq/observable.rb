# frozen_string_literal: true

module Acemq
  # Callbacks a user registers for what happens inside a requester or responder:
  #   responder.on(:handled) { |event| ... }
  # A callback that raises is logged and never disturbs the message flow.
  module Observable
    def on(event, &block)
      (@callbacks ||= Hash.new { |h, k| h[k] = [] })[event] << block
      self
    end

    private

    def emit(event, **fields)
      return unless @callbacks&.key?(event)

      @callbacks[event].each do |callback|
        callback.call(fields)
      rescue StandardError => e
        warn "acemq: #{event} callback raised #{e.class}: #{e.message}"
      end
    end
  end

  # A value one thread hands to another, waited for with a timeout.
  class Slot
    def initialize
      @mutex = Mutex.new
      @ready = ConditionVariable.new
      @filled = false
    end

    # Returns false when the slot already held a value.
    def fill(value)
      @mutex.synchronize do
        return false if @filled

        @value = value
        @filled = true
        @ready.broadcast
        true
      end
    end

    # [true, value] once filled, [false, nil] when the timeout passed first.
    def wait(timeout)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      @mutex.synchronize do
        until @filled
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          return [false, nil] if left <= 0

          @ready.wait(@mutex, left)
        end
        [true, @value]
      end
    end
  end
end
