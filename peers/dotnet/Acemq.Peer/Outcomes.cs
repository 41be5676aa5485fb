using System.Text.Json;
using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>
/// The binding's exceptions as the protocol's outcomes. The binding throws its own types, but
/// a task can hand them over wrapped (an AggregateException from <c>Wait</c>, <c>Result</c> or
/// <c>WhenAll</c>, an OperationCanceledException or any exception carrying one as its inner
/// exception): the cause is looked for through the wrapping, so that a timeout is always the
/// timeout outcome and never a refused command.
/// </summary>
internal static class Outcomes
{
    /// <summary>A request's outcome for <paramref name="error"/>; null when it is none (the command is refused).</summary>
    /// <param name="closedOutcome">Protocol 3: a call the requester's close ended is the <c>closed</c> outcome.</param>
    /// <param name="lostOutcome">Protocol 5: a call its lost connection ended is the <c>connection_lost</c> outcome (RR-20.1).</param>
    public static JsonObject? OfRequest(Exception error, bool closedOutcome, bool lostOutcome = false) => Cause(error) switch
    {
        RequestTimedOutException => new JsonObject { ["outcome"] = "timeout" },
        ResponderFailedException e => new JsonObject { ["outcome"] = "responder_failed", ["failure"] = e.Failure },
        ReplyDecodeException e => new JsonObject { ["outcome"] = "decode_error", ["error"] = e.Message },
        ObjectDisposedException when closedOutcome => new JsonObject { ["outcome"] = "closed" },
        ConnectionLostException e when lostOutcome => ConnectionLost(e),
        _ => null,
    };

    /// <summary>A gather's outcome for <paramref name="error"/>: a shortfall with the replies that came, or closed; null when it is none.</summary>
    public static JsonObject? OfGather(Exception error, bool closedOutcome, bool lostOutcome = false) => Cause(error) switch
    {
        RequestTimeoutException e => new JsonObject
        {
            ["outcome"] = "timeout_with_partial",
            ["replies"] = Replies(e.PartialRepliesAs<JsonElement>()),
        },
        ObjectDisposedException when closedOutcome => new JsonObject { ["outcome"] = "closed" },
        ConnectionLostException e when lostOutcome => ConnectionLost(e),
        _ => null,
    };

    /// <summary>The call ended because its requester's connection was lost; <c>reason</c> is the client's text.</summary>
    private static JsonObject ConnectionLost(ConnectionLostException e) =>
        new() { ["outcome"] = "connection_lost", ["reason"] = e.Reason };

    /// <summary>Replies as JSON; a null reply (JsonValueKind.Null) is JSON null.</summary>
    public static JsonArray Replies(IEnumerable<JsonElement> replies) =>
        new(replies.Select(r => JsonSerializer.SerializeToNode(r)).ToArray());

    /// <summary>
    /// The first outcome of the binding's (an AcemqException, or the ObjectDisposedException of
    /// a closed requester) in <paramref name="error"/> and what it wraps, outermost first; else the error itself.
    /// </summary>
    internal static Exception Cause(Exception error) =>
        Chain(error).FirstOrDefault(e => e is AcemqException or ObjectDisposedException) ?? error;

    private static IEnumerable<Exception> Chain(Exception error)
    {
        yield return error;
        IEnumerable<Exception> inner = error is AggregateException aggregate
            ? aggregate.InnerExceptions
            : error.InnerException is { } one ? [one] : [];
        foreach (var wrapped in inner.SelectMany(Chain))
        {
            yield return wrapped;
        }
    }
}
