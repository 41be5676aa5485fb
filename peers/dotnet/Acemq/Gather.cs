namespace Acemq;

/// <summary>How a gather ended.</summary>
internal enum GatherEnd
{
    /// <summary>The expected count arrived (SG-5) or, without a count, the timeout elapsed (SG-7).</summary>
    Resolved,

    /// <summary>A count was given and not reached by the timeout (SG-6).</summary>
    Shortfall,
}

/// <summary>The pending entry of one gather, keyed by its requestMessageId.</summary>
internal interface IPendingGather
{
    string RequestMessageId { get; }

    /// <summary>Increases with every gather opened: the smallest is the oldest pending one.</summary>
    long Sequence { get; }

    /// <summary>Adds a reply body; false when the gather has already ended (the reply is Unmatched).</summary>
    bool Offer(byte[] body);
}

/// <summary>
/// Collects the replies of one gather in arrival order and decides when and how it ends.
/// Pure state: the caller supplies the replies and says when the timeout elapsed.
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

    public bool Offer(byte[] body)
    {
        // Decoded before taking the lock: a body that is not a T is not a reply to this gather.
        T reply;
        try
        {
            reply = JsonCodec.Decode<T>(body);
        }
        catch (ReplyDecodeException)
        {
            return false;
        }

        return Add(reply);
    }

    public bool Add(T reply)
    {
        lock (_gate)
        {
            if (_ended.Task.IsCompleted)
            {
                return false;
            }

            _replies.Add(reply);

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
    /// The timeout elapsed: resolve, or report a shortfall when a count was not reached.
    /// True when this ended the gather, false when it had already ended (count reached, failed).
    /// </summary>
    public bool TimeoutElapsed()
    {
        lock (_gate)
        {
            var shortfall = ExpectedReplyCount is { } expected && _replies.Count < expected;
            return _ended.TrySetResult(shortfall ? GatherEnd.Shortfall : GatherEnd.Resolved);
        }
    }

    public void Fail(Exception error)
    {
        lock (_gate)
        {
            _ended.TrySetException(error);
        }
    }
}
