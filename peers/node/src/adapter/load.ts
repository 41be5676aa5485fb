// `load` (docs/peer-protocol.md, Version 2): the peer runs the requests itself and measures
// latency in process, so the figure is the client's and not the harness pipe's. The loop
// does nothing per request but the call and one clock read on each side of it.

import { performance } from 'node:perf_hooks';

export interface LoadSettings {
  requests: number;
  inFlight: number;
  warmup: number;
}

/** One request of the load; it rejects with a timeout the `isTimeout` test recognises. */
export type Call = () => Promise<unknown>;

export interface LoadFigures {
  requests: number;
  completed: number;
  errors: number;
  timeouts: number;
  duration_ms: number;
  rate_per_s: number;
  latency_us: { min: number; mean: number; p50: number; p90: number; p99: number; max: number };
  error_samples: string[];
}

const ERROR_SAMPLES = 5;

/** A JSON body of about `bytes` bytes: `{"pad":"xxx..."}`. */
export function padBody(bytes: number): { pad: string } {
  return { pad: 'x'.repeat(Math.max(0, bytes - '{"pad":""}'.length)) };
}

/** Nearest rank: the smallest value with at least p% of the values at or below it. */
export function nearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

/** Runs `count` calls with at most `inFlight` outstanding; `onDone` gets each latency (µs) or error. */
async function pump(call: Call, count: number, inFlight: number, onDone: (latencyUs: number | Error) => void): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      const start = performance.now();
      try {
        await call();
        onDone((performance.now() - start) * 1000);
      } catch (err) {
        onDone(err instanceof Error ? err : new Error(String(err)));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
}

export async function runLoad(call: Call, settings: LoadSettings, isTimeout: (err: Error) => boolean): Promise<LoadFigures> {
  await pump(call, settings.warmup, settings.inFlight, () => undefined);

  const latencies: number[] = [];
  let timeouts = 0;
  const failures: string[] = [];
  let errors = 0;
  const start = performance.now();
  await pump(call, settings.requests, settings.inFlight, (outcome) => {
    if (typeof outcome === 'number') latencies.push(outcome);
    else if (isTimeout(outcome)) timeouts++;
    else {
      errors++;
      if (failures.length < ERROR_SAMPLES) failures.push(`${outcome.name}: ${outcome.message}`);
    }
  });
  const durationMs = performance.now() - start;

  latencies.sort((a, b) => a - b);
  const us = (value: number) => Math.round(value);
  const mean = latencies.length === 0 ? 0 : latencies.reduce((sum, v) => sum + v, 0) / latencies.length;
  return {
    requests: settings.requests,
    completed: latencies.length,
    errors,
    timeouts,
    duration_ms: Math.round(durationMs * 10) / 10,
    rate_per_s: durationMs > 0 ? Math.round((latencies.length / durationMs) * 1000 * 10) / 10 : 0,
    latency_us: {
      min: us(latencies[0] ?? 0),
      mean: us(mean),
      p50: us(nearestRank(latencies, 50)),
      p90: us(nearestRank(latencies, 90)),
      p99: us(nearestRank(latencies, 99)),
      max: us(latencies[latencies.length - 1] ?? 0),
    },
    error_samples: failures,
  };
}
