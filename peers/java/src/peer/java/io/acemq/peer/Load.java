package io.acemq.peer;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One {@code load} run's bookkeeping, shared by the binding and the raw client: at most
 * {@code inFlight} requests outstanding, latency per request in nanoseconds, outcomes counted.
 * Nothing here writes a line or logs per request: the figures are the client's, not ours.
 */
final class Load {
    /** Starts request {@code index}; calls {@link Load#done} or {@link Load#failed} exactly once. */
    @FunctionalInterface
    interface Sender {
        void send(int index, long startedNanos, Load load) throws Exception;
    }

    private static final int ERROR_SAMPLES = 5;

    private final int requests;
    private final int inFlight;
    private final Semaphore slots;
    private final long[] latencyNanos;
    private final AtomicInteger completed = new AtomicInteger();
    private final AtomicInteger errors = new AtomicInteger();
    private final AtomicInteger timeouts = new AtomicInteger();
    private final List<String> errorSamples = new ArrayList<>();
    private CountDownLatch finished;

    private Load(int requests, int inFlight) {
        this.requests = requests;
        this.inFlight = inFlight;
        this.slots = new Semaphore(inFlight);
        this.latencyNanos = new long[requests];
    }

    /** A JSON body of about {@code bytes} bytes: {@code {"pad":"xxx..."}}. */
    static byte[] body(int bytes) {
        String pad = "x".repeat(Math.max(0, bytes - "{\"pad\":\"\"}".length()));
        return ("{\"pad\":\"" + pad + "\"}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Sends {@code warmup} unmeasured requests, then {@code requests} measured ones; the answer's {@code load}. */
    static JsonObject run(String client, int requests, int inFlight, int bodyBytes, int warmup, Sender sender)
            throws InterruptedException {
        if (warmup > 0) {
            new Load(warmup, inFlight).drive(sender);
        }
        Load measured = new Load(requests, inFlight);
        long started = System.nanoTime();
        measured.drive(sender);
        long wallNanos = System.nanoTime() - started;
        return measured.answer(client, bodyBytes, wallNanos);
    }

    private void drive(Sender sender) throws InterruptedException {
        finished = new CountDownLatch(requests);
        for (int i = 0; i < requests; i++) {
            slots.acquire();
            long startedNanos = System.nanoTime();
            try {
                sender.send(i, startedNanos, this);
            } catch (Exception e) {
                failed(e);
            }
        }
        finished.await();
    }

    /** Request {@code index} had its reply. */
    void done(int index, long startedNanos) {
        latencyNanos[index] = System.nanoTime() - startedNanos;
        completed.incrementAndGet();
        end();
    }

    void timedOut() {
        timeouts.incrementAndGet();
        end();
    }

    void failed(Throwable error) {
        errors.incrementAndGet();
        synchronized (errorSamples) {
            if (errorSamples.size() < ERROR_SAMPLES) {
                errorSamples.add(error.getClass().getSimpleName() + ": " + error.getMessage());
            }
        }
        end();
    }

    private void end() {
        slots.release();
        finished.countDown();
    }

    private JsonObject answer(String client, int bodyBytes, long wallNanos) {
        long[] sorted = Arrays.stream(latencyNanos).filter(nanos -> nanos > 0).sorted().toArray();
        JsonObject latency = new JsonObject();
        latency.addProperty("min", micros(sorted.length == 0 ? 0 : sorted[0]));
        latency.addProperty("mean", micros(sorted.length == 0 ? 0 : (long) Arrays.stream(sorted).average().orElse(0)));
        latency.addProperty("p50", micros(nearestRank(sorted, 50)));
        latency.addProperty("p90", micros(nearestRank(sorted, 90)));
        latency.addProperty("p99", micros(nearestRank(sorted, 99)));
        latency.addProperty("max", micros(sorted.length == 0 ? 0 : sorted[sorted.length - 1]));
        double durationMs = wallNanos / 1e6;
        JsonObject load = new JsonObject();
        load.addProperty("client", client);
        load.addProperty("requests", requests);
        load.addProperty("completed", completed.get());
        load.addProperty("errors", errors.get());
        load.addProperty("timeouts", timeouts.get());
        load.addProperty("in_flight", inFlight);
        load.addProperty("body_bytes", bodyBytes);
        load.addProperty("duration_ms", Math.round(durationMs * 10) / 10.0);
        load.addProperty("rate_per_s", durationMs <= 0 ? 0 : Math.round(completed.get() / (durationMs / 1000) * 10) / 10.0);
        load.add("latency_us", latency);
        JsonArray samples = new JsonArray();
        synchronized (errorSamples) {
            errorSamples.forEach(samples::add);
        }
        load.add("error_samples", samples);
        return load;
    }

    /** Nearest-rank percentile: the value at rank ceil(p/100 * n), 1-based. */
    static long nearestRank(long[] sorted, int percentile) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(percentile / 100.0 * sorted.length);
        return sorted[Math.max(1, Math.min(rank, sorted.length)) - 1];
    }

    private static long micros(long nanos) {
        return Math.round(nanos / 1000.0);
    }
}
