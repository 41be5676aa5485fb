using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>Turns a responder's hooks into protocol event lines.</summary>
internal sealed class ResponderEvents(string responder, Output output) : IResponderObserver
{
    public void Handling(RequestContext request) => output.Write(new JsonObject
    {
        ["event"] = "handled",
        ["responder"] = responder,
        ["message_id"] = request.MessageId,
        ["attempt"] = request.Attempt,
        ["seen"] = Echo.Seen(request),
    });

    public void Replied(RequestContext request, string? failure) => output.Write(new JsonObject
    {
        ["event"] = "replied",
        ["responder"] = responder,
        ["message_id"] = request.MessageId,
        ["failure"] = failure,
    });

    public void ReplyFailed(RequestContext request, Exception error) => output.Write(new JsonObject
    {
        ["event"] = "reply_failed",
        ["responder"] = responder,
        ["message_id"] = request.MessageId,
        ["attempt"] = request.Attempt,
        ["error"] = error.Message,
    });

    public void DeadLettered(string? messageId, string reason) => output.Write(new JsonObject
    {
        ["event"] = "dead_lettered",
        ["responder"] = responder,
        ["message_id"] = messageId,
        ["reason"] = reason,
    });

    public void Unanswerable(string? messageId) => output.Write(new JsonObject
    {
        ["event"] = "unanswerable",
        ["responder"] = responder,
        ["message_id"] = messageId,
    });

    public void Error(string message) => Output.Log(message);
}

/// <summary>Turns a requester's hooks into protocol event lines.</summary>
internal sealed class RequesterEvents(string requester, Output output) : IRequesterObserver
{
    public void Unmatched(string? correlationId) => output.Write(new JsonObject
    {
        ["event"] = "unmatched",
        ["requester"] = requester,
        ["correlation_id"] = correlationId,
    });
}
