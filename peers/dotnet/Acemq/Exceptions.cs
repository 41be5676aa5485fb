namespace Acemq;

/// <summary>Base of the exceptions this library throws for request/reply outcomes.</summary>
public abstract class AcemqException(string message, Exception? inner = null) : Exception(message, inner)
{
    /// <summary>The <c>message_id</c> the request was sent with.</summary>
    public string? RequestId { get; init; }
}

/// <summary>No reply arrived in time. The request may still have been carried out.</summary>
public sealed class RequestTimedOutException(string requestId, TimeSpan timeout)
    : AcemqException($"no reply to request {requestId} within {timeout.TotalMilliseconds:0} ms")
{
    public TimeSpan Timeout { get; } = timeout;
}

/// <summary>The responder's handler failed and said so in the <c>acemq-error</c> header.</summary>
public sealed class ResponderFailedException(string failure)
    : AcemqException($"the responder failed: {failure}")
{
    /// <summary><c>{ExceptionType}: {message}</c>, as the responder wrote it.</summary>
    public string Failure { get; } = failure;
}

/// <summary>The reply body could not be decoded as the expected response type.</summary>
public sealed class ReplyDecodeException(string message, Exception inner) : AcemqException(message, inner);

/// <summary>The broker returned a mandatory publish: nothing was bound to receive it.</summary>
public sealed class UnroutableException(string exchange, string routingKey, string reason)
    : AcemqException($"the broker returned the message published to exchange '{exchange}' with routing key '{routingKey}': {reason}")
{
    public string Exchange { get; } = exchange;
    public string RoutingKey { get; } = routingKey;
}

/// <summary>
/// A gather with an expected reply count ended at its timeout with fewer replies.
/// The replies that did arrive are in <see cref="PartialReplies"/>, in arrival order.
/// </summary>
public sealed class RequestTimeoutException(string requestId, int expected, IReadOnlyList<object?> partialReplies)
    : AcemqException($"gather {requestId}: {partialReplies.Count} of {expected} replies before the timeout")
{
    public int ExpectedReplyCount { get; } = expected;
    public IReadOnlyList<object?> PartialReplies { get; } = partialReplies;

    /// <summary>The partial replies typed as the gather's response type.</summary>
    public IReadOnlyList<T> PartialRepliesAs<T>() => PartialReplies.Cast<T>().ToArray();
}

/// <summary>
/// The requester's connection was lost while the call was pending, or before its request was
/// confirmed (RR-20.1): its reply queue went with the connection, so no reply can reach it. The
/// requester recovers on its own; a later call is answered as before.
/// </summary>
public sealed class ConnectionLostException(string reason) : AcemqException($"connection lost: {reason}")
{
    /// <summary>The client's account of the loss, e.g. <c>320 CONNECTION_FORCED - Closed via management plugin</c>.</summary>
    public string Reason { get; } = reason;
}
