using System.Diagnostics;
using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>What a <c>load</c> command asks for.</summary>
internal sealed record LoadSpec(string Client, int Requests, int InFlight, int BodyBytes, int Warmup)
{
    /// <summary>The request body: <c>{"pad": "xxx..."}</c> of about <see cref="BodyBytes"/> bytes.</summary>
    public PadBody Body { get; } = new(new string('x', Math.Max(0, BodyBytes - """{"pad":""}""".Length)));
}

/// <summary>Serialised camelCase: <c>{"pad": ...}</c>.</summary>
internal sealed record PadBody(string Pad);

/// <summary>
/// Runs a load with at most <c>in_flight</c> calls outstanding and measures each call in
/// the peer. The loop does nothing per call but the call, a timestamp and a slot write.
/// </summary>
internal static class Load
{
    private const int MaxErrorSamples = 5;

    /// <summary>One call; a <see cref="TimeoutException"/> counts as a timeout, anything else as an error.</summary>
    public delegate Task Call();

    public static async Task<JsonObject> RunAsync(LoadSpec spec, Call call)
    {
        await PhaseAsync(spec.Warmup, spec.InFlight, call).ConfigureAwait(false);
        var started = Stopwatch.GetTimestamp();
        var measured = await PhaseAsync(spec.Requests, spec.InFlight, call).ConfigureAwait(false);
        var wall = Stopwatch.GetElapsedTime(started);

        var latencies = measured.Latencies.AsSpan(0, measured.Completed).ToArray();
        Array.Sort(latencies);
        return new JsonObject
        {
            ["client"] = spec.Client,
            ["requests"] = spec.Requests,
            ["completed"] = measured.Completed,
            ["errors"] = measured.Errors,
            ["timeouts"] = measured.Timeouts,
            ["in_flight"] = spec.InFlight,
            ["body_bytes"] = spec.BodyBytes,
            ["duration_ms"] = Math.Round(wall.TotalMilliseconds, 1),
            ["rate_per_s"] = wall > TimeSpan.Zero ? Math.Round(measured.Completed / wall.TotalSeconds, 1) : 0,
            ["latency_us"] = new JsonObject
            {
                ["min"] = latencies.Length > 0 ? latencies[0] : 0,
                ["mean"] = latencies.Length > 0 ? Math.Round(latencies.Average(), 1) : 0,
                ["p50"] = NearestRank(latencies, 50),
                ["p90"] = NearestRank(latencies, 90),
                ["p99"] = NearestRank(latencies, 99),
                ["max"] = latencies.Length > 0 ? latencies[^1] : 0,
            },
            ["error_samples"] = new JsonArray(measured.Samples.Select(s => (JsonNode?)s).ToArray()),
        };
    }

    /// <summary>The nearest-rank percentile of sorted values: the smallest with at least p% at or below it.</summary>
    internal static long NearestRank(long[] sorted, int percent) =>
        sorted.Length == 0 ? 0 : sorted[Math.Max(0, (int)Math.Ceiling(percent / 100.0 * sorted.Length) - 1)];

    private sealed class Phase(int count)
    {
        public readonly long[] Latencies = new long[count];
        public readonly List<string> Samples = [];
        public int Completed;
        public int Errors;
        public int Timeouts;
        public int Next = -1;
    }

    private static async Task<Phase> PhaseAsync(int count, int inFlight, Call call)
    {
        var phase = new Phase(count);
        var workers = Enumerable.Range(0, Math.Clamp(inFlight, 1, Math.Max(1, count)))
            .Select(_ => Task.Run(() => WorkAsync(phase, count, call)));
        await Task.WhenAll(workers).ConfigureAwait(false);
        return phase;
    }

    private static async Task WorkAsync(Phase phase, int count, Call call)
    {
        while (Interlocked.Increment(ref phase.Next) < count)
        {
            var started = Stopwatch.GetTimestamp();
            try
            {
                await call().ConfigureAwait(false);
                var micros = (long)Stopwatch.GetElapsedTime(started).TotalMicroseconds;
                phase.Latencies[Interlocked.Increment(ref phase.Completed) - 1] = micros;
            }
            catch (Exception e) when (e is TimeoutException or RequestTimedOutException)
            {
                Interlocked.Increment(ref phase.Timeouts);
            }
            catch (Exception e)
            {
                Interlocked.Increment(ref phase.Errors);
                lock (phase.Samples)
                {
                    if (phase.Samples.Count < MaxErrorSamples)
                    {
                        phase.Samples.Add($"{e.GetType().Name}: {e.Message}");
                    }
                }
            }
        }
    }
}
