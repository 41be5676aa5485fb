# frozen_string_literal: true

require "json"
require_relative "outcome"
require_relative "raw"

module AcemqPeer
  # The `load` command: the peer measures its own binding (or bare Bunny), so the figure
  # is the binding's and not the protocol pipe's. Nothing is written per request.
  class Load
    ERROR_SAMPLES = 5
    PAD_OVERHEAD = JSON.generate({ pad: "" }).bytesize

    def initialize(command)
      @client = command.fetch("client")
      raise ArgumentError, "load client must be binding or raw, not #{@client.inspect}" unless %w[binding raw].include?(@client)

      @requests = positive(command, "requests", 0)
      @in_flight = positive(command, "in_flight", 1)
      @warmup = positive(command, "warmup", 0, required: false)
      @body_bytes = positive(command, "body_bytes", 0)
      @timeout_s = positive(command, "timeout_ms", 1) / 1000.0
      @exchange = command["exchange"] || ""
      @routing_key = command.fetch("routing_key")
      @body = { pad: "x" * [@body_bytes - PAD_OVERHEAD, 0].max }
    end

    # requester: an opened Acemq::Requester for "binding", a Raw::Requester for "raw".
    def run(requester)
      measure = @client == "raw" ? method(:raw_phase) : method(:binding_phase)
      measure.call(requester, @warmup) if @warmup.positive?
      started = Clock.us
      outcome = measure.call(requester, @requests)
      answer(outcome, (Clock.us - started) / 1000.0)
    end

    private

    def positive(command, key, minimum, required: true)
      value = required ? command.fetch(key) : command.fetch(key, 0)
      raise ArgumentError, "#{key} must be an integer >= #{minimum}, not #{value.inspect}" unless value.is_a?(Integer) && value >= minimum

      value
    end

    def raw_phase(requester, count)
      requester.run(count, in_flight: @in_flight, timeout_s: @timeout_s, exchange: @exchange,
                           routing_key: @routing_key, payload: JSON.generate(@body))
    end

    # The binding's call blocks, so in_flight threads each take the next request.
    def binding_phase(requester, count)
      outcome = Raw::Requester::Outcome.new([], 0, 0, [])
      lock = Mutex.new
      next_index = 0
      workers = Array.new([@in_flight, count].min) do
        Thread.new do
          latencies = []
          loop do
            taken = lock.synchronize { next_index < count && (next_index += 1) }
            break unless taken

            started = Clock.us
            begin
              requester.request(@body, exchange: @exchange, routing_key: @routing_key, timeout: @timeout_s)
              latencies << Clock.us - started
            rescue StandardError => e
              # A timeout in whatever shape the binding raises it, as the request command tells it.
              timed_out = CallOutcome.of_request(e)&.fetch(:outcome) == "timeout"
              lock.synchronize do
                if timed_out
                  outcome.timeouts += 1
                else
                  outcome.errors += 1
                  outcome.error_samples << "#{e.class.name.split('::').last}: #{e.message}" if outcome.error_samples.size < ERROR_SAMPLES
                end
              end
            end
          end
          lock.synchronize { outcome.latencies_us.concat(latencies) }
        end
      end
      workers.each(&:join)
      outcome
    end

    def answer(outcome, duration_ms)
      completed = outcome.latencies_us.size
      {
        client: @client, requests: @requests, completed: completed, errors: outcome.errors,
        timeouts: outcome.timeouts, in_flight: @in_flight, body_bytes: @body_bytes,
        duration_ms: duration_ms.round(1),
        rate_per_s: duration_ms.positive? ? (completed * 1000.0 / duration_ms).round(1) : 0.0,
        latency_us: Load.latency(outcome.latencies_us), error_samples: outcome.error_samples
      }
    end

    # Nearest-rank percentiles over the completed requests; zeros when none completed.
    def self.latency(values)
      return { min: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 } if values.empty?

      sorted = values.sort
      rank = ->(p) { sorted[(p / 100.0 * sorted.size).ceil.clamp(1, sorted.size) - 1] }
      { min: sorted.first, mean: (sorted.sum.to_f / sorted.size).round(1), p50: rank.call(50),
        p90: rank.call(90), p99: rank.call(99), max: sorted.last }
    end
  end
end
