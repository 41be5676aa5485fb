using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>
/// Turns a responder's hooks into protocol event lines (connection_lost only from protocol 2
/// on, recovered from protocol 5 on). Without <paramref name="requestEvents"/> (protocol 4's
/// <c>events: false</c>) it writes none of the per-request events: handled, replied,
/// reply_failed, dead_lettered, unanswerable.
/// </summary>
internal sealed class ResponderEvents(
    string responder, Output output, bool connectionLost, bool requestEvents = true, bool recovered = false) : IResponderObserver
{
    public void ConnectionLost(string reason)
    {
        Output.Log($"responder {responder}: connection lost: {reason}");
        if (connectionLost)
        {
            output.Write(new JsonObject { ["event"] = "connection_lost", ["responder"] = responder, ["reason"] = reason });
        }
    }

    public void Recovered()
    {
        Output.Log($"responder {responder}: connection recovered, consuming again");
        if (recovered)
        {
            output.Write(new JsonObject { ["event"] = "recovered", ["responder"] = responder });
        }
    }

    public void Handling(RequestContext request) => Write(() => new JsonObject
    {
        ["event"] = "handled",
        ["responder"] = responder,
        ["message_id"] = request.MessageId,
        ["attempt"] = request.Attempt,
        ["seen"] = Echo.Seen(request),
    });

    public void Replied(RequestContext request, string? failure) => Write(() => new JsonObject
    {
        ["event"] = "replied",
        ["responder"] = responder,
        ["message_id"] = request.MessageId,
        ["failure"] = failure,
    });

    public void ReplyFailed(RequestContext request, Exception error) => Write(() => new JsonObject
    {
        ["event"] = "reply_failed",
        ["responder"] = responder,
        ["message_id"] = request.MessageId,
        ["attempt"] = request.Attempt,
        ["error"] = error.Message,
    });

    public void DeadLettered(string? messageId, string reason) => Write(() => new JsonObject
    {
        ["event"] = "dead_lettered",
        ["responder"] = responder,
        ["message_id"] = messageId,
        ["reason"] = reason,
    });

    public void Unanswerable(string? messageId) => Write(() => new JsonObject
    {
        ["event"] = "unanswerable",
        ["responder"] = responder,
        ["message_id"] = messageId,
    });

    /// <summary>A per-request event, built only when it is written.</summary>
    private void Write(Func<JsonObject> line)
    {
        if (requestEvents)
        {
            output.Write(line());
        }
    }

    public void Error(string message) => Output.Log(message);
}

/// <summary>Turns a requester's hooks into protocol event lines.</summary>
/// <remarks>From protocol 3 on, <c>unmatched</c> carries both ids a reply may have; from protocol 5 on, <c>recovered</c> is written.</remarks>
internal sealed class RequesterEvents(string requester, Output output, bool connectionLost, bool bothIds, bool recovered = false) : IRequesterObserver
{
    public void ConnectionLost(string reason)
    {
        Output.Log($"requester {requester}: connection lost: {reason}");
        if (connectionLost)
        {
            output.Write(new JsonObject { ["event"] = "connection_lost", ["requester"] = requester, ["reason"] = reason });
        }
    }

    public void Recovered()
    {
        Output.Log($"requester {requester}: connection recovered, consuming reply queue again");
        if (recovered)
        {
            output.Write(new JsonObject { ["event"] = "recovered", ["requester"] = requester });
        }
    }

    public void Unmatched(string? correlationId, string? responseMessageId)
    {
        var line = new JsonObject
        {
            ["event"] = "unmatched",
            ["requester"] = requester,
            ["correlation_id"] = correlationId,
        };
        if (bothIds)
        {
            line["response_message_id"] = responseMessageId;
        }

        output.Write(line);
    }
}
