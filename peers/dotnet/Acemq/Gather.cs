using System.Diagnostics;

namespace Acemq;

/// <summary>How a gather ended.</summary>
internal enum GatherEnd
{
    /// <summary>The expected count arrived (SG-5) or, without a count, the timeout elapsed (SG-7).</summary>
    Resolved,

    /// <summary>A count was given and not reached by the timeout (SG-6).</summary>
    Shortfall,
}

/// <summary>What became of a reply offered to a gather.</summary>
internal enum Offered
{
    /// <summary>Added to the gather's replies.</summary>
    Kept,

    /// <summary>The gather had ended (count reached, deadline passed, failed): a reply for no pending gather (SG-8.1).</summary>
    Ended,

    /// <summary>The body is not a reply of the gather's type.</summary>
    NotAReply,

    /// <summary>A failure reply the gather, still pending, kept out (SG-10.1).</summary>
    FailureDropped,
}

/// <summary>The pending entry of one gather, keyed by its requestMessageId.</summary>
internal interface IPendingGather
{
    string RequestMessageId { get; }

    /// <summary>Increases with every gather opened: the smallest is the oldest pending one.</summary>
    long Sequence { get; }

    /// <summary>Adds a reply body, unless the gather has already ended.</summary>
    Offered Offer(byte[] body);

    /// <summary>A reply carrying acemq-error: kept out of a pending gather, or under <paramref name="keep"/> added as a null reply.</summary>
    Offered OfferFailure(bool keep);
}

/// <summary>
/// Collects the replies of one gather in arrival order and decides when and how it ends.
/// Pure state: the caller supplies the replies, the clock (Stopwatch timestamps) and says
/// when it woke up for the deadline. Whether the gather is still open is decided under the
/// same lock that adds a reply, so a reply that comes once the count was reached or the
/// deadline passed is refused (and counted Unmatched) even before the requester has
/// removed the gather from its table.
/// </summary>
internal sealed class PendingGather<T>(
    string requestMessageId, int? expectedReplyCount, Action<T>? onReply, RequesterPolicy? policy = null)
    : IPendingGather
{
    private static long s_opened;

    private readonly RequesterPolicy _policy = policy ?? RequesterPolicy.Default;
    private readonly object _gate = new();
    private readonly List<T> _replies = [];
    private readonly TaskCompletionSource<GatherEnd> _ended = new(TaskCreationOptions.RunContinuationsAsynchronously);
    // Set once armed; until then the gather has no deadline of its own.
    private TimeSpan? _timeout;
    private long _deadline = long.MaxValue;
    private bool _endedAtDeadline;

    public string RequestMessageId { get; } = requestMessageId;

    public long Sequence { get; } = Interlocked.Increment(ref s_opened);

    // No count means "until the timeout" (SG-7), unless the policy takes it as 1.
    public int? ExpectedReplyCount { get; } =
        expectedReplyCount ?? ((policy ?? RequesterPolicy.Default).GatherMissingCount == GatherMissingCount.One ? 1 : null);

    public Task<GatherEnd> Ended => _ended.Task;

    public IReadOnlyList<T> Replies
    {
        get
        {
            lock (_gate)
            {
                return [.. _replies];
            }
        }
    }

    /// <summary>When the gather ends unless its count ends it first (a Stopwatch timestamp).</summary>
    public long Deadline
    {
        get
        {
            lock (_gate)
            {
                return _deadline;
            }
        }
    }

    /// <summary>Whether it ended at its deadline (a shortfall, or a gather without a count resolving), not by its count.</summary>
    public bool EndedAtDeadline
    {
        get
        {
            lock (_gate)
            {
                return _endedAtDeadline;
            }
        }
    }

    /// <summary>Starts the clock: the gather ends <paramref name="timeout"/> after <paramref name="now"/> (SG-9.1).</summary>
    public void Arm(TimeSpan timeout, long now)
    {
        lock (_gate)
        {
            _timeout = timeout;
            _deadline = After(now, timeout);
        }
    }

    public Offered Offer(byte[] body)
    {
        // Decoded before taking the lock: a body that is not a T is not a reply to this gather.
        T reply;
        try
        {
            reply = JsonCodec.Decode<T>(body);
        }
        catch (ReplyDecodeException)
        {
            return Offered.NotAReply;
        }

        return Add(reply) ? Offered.Kept : Offered.Ended;
    }

    public Offered OfferFailure(bool keep)
    {
        if (keep)
        {
            // Breaks SG-10.1: a failure counts as an answer, one that says nothing.
            return Add(NullReply()) ? Offered.Kept : Offered.Ended;
        }

        lock (_gate)
        {
            return IsOpen(Stopwatch.GetTimestamp()) ? Offered.FailureDropped : Offered.Ended;
        }
    }

    public bool Add(T reply) => Add(reply, Stopwatch.GetTimestamp());

    public bool Add(T reply, long now)
    {
        lock (_gate)
        {
            if (!IsOpen(now))
            {
                return false;
            }

            _replies.Add(reply);
            if (_policy.GatherDeadline == GatherDeadline.RestartPerReply && _timeout is { } timeout)
            {
                // Breaks SG-9.1: every reply buys the gather a whole timeout more.
                _deadline = After(now, timeout);
            }

            // Called under the lock so that callbacks see replies in arrival order.
            onReply?.Invoke(reply);
            // A reached count resolves at once (SG-5) unless the policy leaves it to the timeout.
            if (ExpectedReplyCount is { } expected && _replies.Count >= expected && _policy.GatherResolvesEarly)
            {
                _ended.TrySetResult(GatherEnd.Resolved);
            }
        }

        return true;
    }

    /// <summary>
    /// The caller woke for the deadline: ends the gather if <paramref name="now"/> is past it.
    /// False when the deadline has not come (a timer that fired early, or a deadline a reply moved).
    /// </summary>
    public bool ExpireAt(long now)
    {
        lock (_gate)
        {
            return !IsOpen(now);
        }
    }

    /// <summary>
    /// The timeout elapsed, whatever the deadline says: resolve, or report a shortfall when a
    /// count was not reached. True when this ended the gather, false when it had already ended.
    /// </summary>
    public bool TimeoutElapsed()
    {
        lock (_gate)
        {
            return EndAtDeadline();
        }
    }

    public void Fail(Exception error)
    {
        lock (_gate)
        {
            _ended.TrySetException(error);
        }
    }

    /// <summary>Under the lock: whether replies are still taken at <paramref name="now"/>; a passed deadline ends the gather here.</summary>
    private bool IsOpen(long now)
    {
        if (_ended.Task.IsCompleted)
        {
            return false;
        }

        if (now < _deadline)
        {
            return true;
        }

        EndAtDeadline();
        return false;
    }

    private bool EndAtDeadline()
    {
        var shortfall = ExpectedReplyCount is { } expected && _replies.Count < expected;
        if (!_ended.TrySetResult(shortfall ? GatherEnd.Shortfall : GatherEnd.Resolved))
        {
            return false;
        }

        _endedAtDeadline = true;
        return true;
    }

    /// <summary>What a failure reply kept under a defective policy holds: the type's null (JSON null).</summary>
    private static T NullReply()
    {
        try
        {
            return JsonCodec.Decode<T>("null"u8);
        }
        catch (ReplyDecodeException)
        {
            return default!;
        }
    }

    /// <summary>A Stopwatch timestamp <paramref name="timeout"/> after <paramref name="now"/>, saturating far in the future.</summary>
    private static long After(long now, TimeSpan timeout)
    {
        var ticks = timeout.TotalSeconds * Stopwatch.Frequency;
        return ticks >= long.MaxValue - (double)now ? long.MaxValue : now + (long)Math.Max(0, ticks);
    }
}
