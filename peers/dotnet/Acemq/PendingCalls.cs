namespace Acemq;

/// <summary>A reply as it arrived, before it is decoded.</summary>
internal sealed record Reply(byte[] Body, string? Error, string? CorrelationId)
{
    /// <summary>The first header that is neither acemq-error nor responseMessageId, if any.</summary>
    public string? UnknownHeader { get; init; }
}

/// <summary>The last <c>capacity</c> ids added, for a lookup of "was this one of ours".</summary>
internal sealed class RecentIds(int capacity)
{
    private readonly object _gate = new();
    private readonly HashSet<string> _ids = new(StringComparer.Ordinal);
    private readonly Queue<string> _order = new();

    public void Add(string id)
    {
        lock (_gate)
        {
            if (!_ids.Add(id))
            {
                return;
            }

            _order.Enqueue(id);
            if (_order.Count > capacity)
            {
                _ids.Remove(_order.Dequeue());
            }
        }
    }

    public bool Contains(string id)
    {
        lock (_gate)
        {
            return _ids.Contains(id);
        }
    }
}

/// <summary>
/// The calls waiting for a reply on one reply queue, matched by correlation id. Kept in
/// send order too, for a policy that matches replies to the oldest waiter (breaks RR-8).
/// </summary>
internal sealed class PendingCalls
{
    private readonly object _gate = new();
    private readonly Dictionary<string, TaskCompletionSource<Reply>> _byId = new(StringComparer.Ordinal);
    private readonly List<string> _order = [];

    public TaskCompletionSource<Reply> Add(string messageId)
    {
        var waiter = new TaskCompletionSource<Reply>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_gate)
        {
            _byId.Add(messageId, waiter);
            _order.Add(messageId);
        }

        return waiter;
    }

    /// <summary>Removes a call; false when it had already been answered or removed.</summary>
    public bool Remove(string messageId)
    {
        lock (_gate)
        {
            _order.Remove(messageId);
            return _byId.Remove(messageId);
        }
    }

    /// <summary>Takes the call this correlation id answers, if it is still waiting.</summary>
    public TaskCompletionSource<Reply>? TakeMatching(string? correlationId)
    {
        if (correlationId is null)
        {
            return null;
        }

        lock (_gate)
        {
            if (!_byId.Remove(correlationId, out var waiter))
            {
                return null;
            }

            _order.Remove(correlationId);
            return waiter;
        }
    }

    /// <summary>Takes whoever has waited longest, whatever the reply correlates to (breaks RR-8).</summary>
    public TaskCompletionSource<Reply>? TakeOldest()
    {
        lock (_gate)
        {
            if (_order.Count == 0)
            {
                return null;
            }

            var oldest = _order[0];
            _order.RemoveAt(0);
            _byId.Remove(oldest, out var waiter);
            return waiter;
        }
    }

    public int Count
    {
        get
        {
            lock (_gate)
            {
                return _byId.Count;
            }
        }
    }

    /// <summary>Ends every waiting call with <paramref name="error"/>.</summary>
    public void FailAll(Exception error)
    {
        List<TaskCompletionSource<Reply>> waiters;
        lock (_gate)
        {
            waiters = [.. _byId.Values];
            _byId.Clear();
            _order.Clear();
        }

        foreach (var waiter in waiters)
        {
            waiter.TrySetException(error);
        }
    }
}

/// <summary>
/// Counts the calls running on a requester, so that disposing it can wait until every one
/// has ended (RR-9.5: the close returns after its pending calls).
/// </summary>
internal sealed class CallsInFlight
{
    private readonly object _gate = new();
    private int _count;
    private TaskCompletionSource? _idle;

    public void Enter()
    {
        lock (_gate)
        {
            _count++;
        }
    }

    public void Exit()
    {
        TaskCompletionSource? idle = null;
        lock (_gate)
        {
            if (--_count == 0)
            {
                (idle, _idle) = (_idle, null);
            }
        }

        idle?.TrySetResult();
    }

    /// <summary>Completes once no call is running (at once when none is).</summary>
    public Task WhenIdleAsync()
    {
        lock (_gate)
        {
            if (_count == 0)
            {
                return Task.CompletedTask;
            }

            _idle ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            return _idle.Task;
        }
    }
}
