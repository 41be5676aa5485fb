namespace Acemq;

public sealed record RequesterOptions
{
    public IRequesterObserver? Observer { get; init; }

    /// <summary>The wire behaviour, resolved when the requester opens; only the conformance adapter sets another.</summary>
    internal RequesterPolicy Policy { get; init; } = RequesterPolicy.Default;
}

/// <summary>Per-call settings beyond the timeout.</summary>
public sealed record RequestOptions
{
    /// <summary>Defaults to <see cref="Requester.DefaultTimeout"/>.</summary>
    public TimeSpan? Timeout { get; init; }

    /// <summary>The request id (AMQP <c>message_id</c>); a fresh one when null. It is the idempotency key.</summary>
    public string? MessageId { get; init; }

    /// <summary>Extra application headers sent with the request.</summary>
    public IReadOnlyDictionary<string, object?>? Headers { get; init; }

    /// <summary>The message type, sent as the AMQP <c>type</c> property; none is sent when null.</summary>
    public string? Type { get; init; }
}

public sealed record GatherOptions
{
    /// <summary>The queue <see cref="Requester.SendRequestMultiAsync{TReq,TRes}"/> publishes to.</summary>
    public string? Endpoint { get; init; }

    /// <summary>The fanout exchange <see cref="Requester.PublishRequestAsync{TReq,TRes}"/> publishes to; the type name when null.</summary>
    public string? Exchange { get; init; }

    /// <summary>Resolve as soon as this many replies arrived; a shortfall at the timeout throws.</summary>
    public int? ExpectedReplyCount { get; init; }

    /// <summary>The budget of the gather; defaults to <see cref="Requester.DefaultTimeout"/>.</summary>
    public TimeSpan? Timeout { get; init; }

    /// <summary>The business correlation id shared by every copy; the requestMessageId when null.</summary>
    public string? CorrelationId { get; init; }

    /// <summary>The requestMessageId; a fresh one (<see cref="Wire.NewMessageId"/>) when null.</summary>
    public string? RequestMessageId { get; init; }
}

public sealed record Binding(string Exchange, string RoutingKey);

public sealed record ResponderOptions
{
    /// <summary>Attempts of the retry policy before a request is dead-lettered; 3 when null.</summary>
    public int? MaxAttempts { get; init; }

    /// <summary>
    /// Unacknowledged requests this responder holds, and handles, at once (the consumer runs that
    /// many deliveries concurrently); 1 handles one request at a time and shares a queue most
    /// evenly among competing responders.
    /// </summary>
    public ushort Prefetch { get; init; } = 32;

    /// <summary>Exchanges to bind the request queue to (the exchanges must exist).</summary>
    public IReadOnlyList<Binding> Bindings { get; init; } = [];

    public IResponderObserver? Observer { get; init; }

    /// <summary>The wire behaviour, resolved when the responder starts; only the conformance adapter sets another.</summary>
    internal ResponderPolicy Policy { get; init; } = ResponderPolicy.Default;
}

/// <summary>What a handler is told about the request it handles.</summary>
public sealed record RequestContext(
    string Queue,
    string? MessageId,
    string? CorrelationId,
    string ReplyTo,
    ReplyToSource ReplyToSource,
    IReadOnlyDictionary<string, object?> Headers,
    int Attempt);

/// <summary>Hooks into a requester, for logging and tests. Called on the reply consumer: keep them quick.</summary>
public interface IRequesterObserver
{
    /// <summary>A reply was counted Unmatched and dropped.</summary>
    void Unmatched(string? correlationId) { }

    /// <summary>
    /// A reply was counted Unmatched and dropped, with both ids it carried (either may be
    /// null): whether it was meant for a request or a gather is unknown once nothing matched.
    /// </summary>
    void Unmatched(string? correlationId, string? responseMessageId) => Unmatched(correlationId);

    /// <summary>The broker or the network closed the requester's connection or reply channel.</summary>
    void ConnectionLost(string reason) { }

    /// <summary>The connection is back after a loss and the requester's new reply queue is consumed (RR-20.3).</summary>
    void Recovered() { }
}

/// <summary>Hooks into a responder, for logging and tests. Called on its consumer: keep them quick.</summary>
public interface IResponderObserver
{
    /// <summary>The handler is about to run.</summary>
    void Handling(RequestContext request) { }

    /// <summary>A reply was confirmed and not returned; <paramref name="failure"/> is the <c>acemq-error</c> text, if any.</summary>
    void Replied(RequestContext request, string? failure) { }

    /// <summary>A reply publish was returned, nacked or lost with its channel.</summary>
    void ReplyFailed(RequestContext request, Exception error) { }

    /// <summary>The request was published to the dead-letter queue (confirmed) and acknowledged.</summary>
    void DeadLettered(string? messageId, string reason) { }

    /// <summary>A request with no reply address was counted and acknowledged.</summary>
    void Unanswerable(string? messageId) { }

    /// <summary>The broker or the network closed the responder's channel or connection.</summary>
    void ConnectionLost(string reason) { }

    /// <summary>The connection is back after a loss, the queues declared and consumed again (RR-20.2).</summary>
    void Recovered() { }

    /// <summary>Something went wrong that only a log can report.</summary>
    void Error(string message) { }
}
