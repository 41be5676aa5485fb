using System.Text.Json;
using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>The error type the protocol's <c>fail</c> behaviour raises, so the failure text is the same in every language.</summary>
internal sealed class ScenarioFailure(string message) : Exception(message);

/// <summary>The echo body: what the handler saw, so the harness checks wire facts the same way in every language.</summary>
internal static class Echo
{
    /// <param name="alwaysCorrelationId">Protocol 3: <c>correlationId</c> is present, null when the request body has none.</param>
    public static JsonObject Body(string responder, JsonElement request, RequestContext context, bool alwaysCorrelationId)
    {
        var echo = new JsonObject
        {
            ["echo"] = JsonSerializer.SerializeToNode(request),
            ["responder"] = responder,
            ["peer"] = PeerHost.PeerName,
        };
        if (request.ValueKind == JsonValueKind.Object && request.TryGetProperty("correlationId", out var correlationId))
        {
            echo["correlationId"] = JsonSerializer.SerializeToNode(correlationId);
        }
        else if (alwaysCorrelationId)
        {
            echo["correlationId"] = null;
        }

        echo["seen"] = Seen(context);
        return echo;
    }

    public static JsonObject Seen(RequestContext context) => new()
    {
        ["message_id"] = context.MessageId,
        ["correlation_id"] = context.CorrelationId,
        ["reply_to"] = context.ReplyTo,
        ["reply_to_source"] = context.ReplyToSource == ReplyToSource.Header ? "header" : "native",
        ["headers"] = new JsonArray(context.Headers.Keys.Order(StringComparer.Ordinal).Select(h => (JsonNode?)h).ToArray()),
        ["attempt"] = context.Attempt,
    };
}
