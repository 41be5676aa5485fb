using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>
/// Reads commands and runs each on its own task, so a pending request never delays
/// another command's answer.
/// </summary>
internal sealed class PeerHost(Output output)
{
    public const string PeerName = "dotnet";
    private const int Protocol = 1;

    private readonly ConcurrentDictionary<string, Requester> _requesters = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, Responder> _responders = new(StringComparer.Ordinal);
    private readonly SemaphoreSlim _connecting = new(1, 1);
    private string? _amqpUrl;
    private Mq? _mq;

    public async Task<int> RunAsync(Stream stdin)
    {
        using var reader = new StreamReader(stdin, new UTF8Encoding(false));
        while (await reader.ReadLineAsync().ConfigureAwait(false) is { } line)
        {
            if (string.IsNullOrWhiteSpace(line))
            {
                continue;
            }

            JsonObject command;
            try
            {
                command = JsonNode.Parse(line)?.AsObject() ?? throw new JsonException("not an object");
            }
            catch (Exception e)
            {
                Output.Log($"unreadable command line ({e.Message}): {line}");
                continue;
            }

            _ = Task.Run(() => DispatchAsync(command));
        }

        Output.Log("stdin closed: closing everything");
        await CloseAllAsync().ConfigureAwait(false);
        return 0;
    }

    private async Task DispatchAsync(JsonObject command)
    {
        var id = command["id"] is JsonValue idValue && idValue.TryGetValue<long>(out var n) ? n : (long?)null;
        var op = Text(command, "op");
        if (id is null)
        {
            Output.Log($"command without an integer id ignored: {command.ToJsonString()}");
            return;
        }

        JsonObject answer;
        try
        {
            var result = op switch
            {
                "hello" => Hello(command),
                "requester.open" => await OpenRequesterAsync(command).ConfigureAwait(false),
                "requester.close" => await CloseRequesterAsync(command).ConfigureAwait(false),
                "request" => await RequestAsync(command).ConfigureAwait(false),
                "gather" => await GatherAsync(command).ConfigureAwait(false),
                "responder.start" => await StartResponderAsync(command).ConfigureAwait(false),
                "responder.stop" => await StopResponderAsync(command).ConfigureAwait(false),
                "counters" => Counters(command),
                "shutdown" => new JsonObject(),
                _ => throw new ArgumentException($"unknown op '{op}'"),
            };
            answer = new JsonObject { ["id"] = id, ["ok"] = true };
            foreach (var (key, value) in result.ToArray())
            {
                result.Remove(key);
                answer[key] = value;
            }
        }
        catch (Exception e)
        {
            Output.Log($"command {id} ({op}) refused: {e}");
            answer = new JsonObject { ["id"] = id, ["ok"] = false, ["error"] = Describe(e) };
        }

        output.Write(answer);
        if (op == "shutdown")
        {
            await CloseAllAsync().ConfigureAwait(false);
            Environment.Exit(0);
        }
    }

    private JsonObject Hello(JsonObject command)
    {
        if (command["protocol"] is JsonValue protocol && protocol.GetValue<long>() != Protocol)
        {
            throw new ArgumentException($"this peer speaks protocol {Protocol}, not {protocol}");
        }

        _amqpUrl = Text(command, "amqp_url") ?? _amqpUrl;
        return new JsonObject
        {
            ["protocol"] = Protocol,
            ["peer"] = PeerName,
            ["language"] = "C#",
            ["binding"] = $"acemq-dotnet {Mq.Version}",
            ["client"] = Mq.ClientVersion,
            ["profiles"] = Strings(Profiles.All),
            ["mutants"] = Strings(Mutants.All),
            ["capabilities"] = Strings(["request", "respond", "gather"]),
        };
    }

    private async Task<JsonObject> OpenRequesterAsync(JsonObject command)
    {
        var name = Required(command, "name");
        var options = new RequesterOptions
        {
            Profile = Profiles.Parse(Text(command, "profile")),
            Mutant = Mutants.Parse(Text(command, "mutant")),
            Observer = new RequesterEvents(name, output),
        };
        if (_requesters.ContainsKey(name))
        {
            throw new ArgumentException($"a requester named '{name}' is already open");
        }

        var mq = await ConnectAsync().ConfigureAwait(false);
        var requester = await mq.RequesterAsync(options).ConfigureAwait(false);
        if (!_requesters.TryAdd(name, requester))
        {
            await requester.DisposeAsync().ConfigureAwait(false);
            throw new ArgumentException($"a requester named '{name}' is already open");
        }

        return new JsonObject { ["reply_queue"] = requester.ReplyQueue };
    }

    private async Task<JsonObject> CloseRequesterAsync(JsonObject command)
    {
        var name = Required(command, "name");
        if (!_requesters.TryRemove(name, out var requester))
        {
            throw new ArgumentException($"no requester named '{name}'");
        }

        await requester.DisposeAsync().ConfigureAwait(false);
        return [];
    }

    private async Task<JsonObject> RequestAsync(JsonObject command)
    {
        var requester = FindRequester(command);
        var options = new RequestOptions
        {
            MessageId = Acemq.Wire.NewMessageId(),
            Timeout = Milliseconds(command, "timeout_ms"),
            Headers = ExtraHeaders(command),
        };
        var body = Body(command);
        var started = Stopwatch.GetTimestamp();
        var answer = new JsonObject();
        try
        {
            var reply = await requester.RequestAsync<JsonElement, JsonElement>(
                Text(command, "exchange") ?? "", Required(command, "routing_key"), body, options).ConfigureAwait(false);
            answer["outcome"] = "reply";
            answer["reply"] = JsonSerializer.SerializeToNode(reply);
        }
        catch (RequestTimedOutException)
        {
            answer["outcome"] = "timeout";
        }
        catch (ResponderFailedException e)
        {
            answer["outcome"] = "responder_failed";
            answer["failure"] = e.Failure;
        }
        catch (ReplyDecodeException e)
        {
            answer["outcome"] = "decode_error";
            answer["error"] = e.Message;
        }

        answer["request_id"] = options.MessageId;
        answer["elapsed_ms"] = Elapsed(started);
        return answer;
    }

    private async Task<JsonObject> GatherAsync(JsonObject command)
    {
        var requester = FindRequester(command);
        var mode = Text(command, "mode") ?? "multi";
        var options = new GatherOptions
        {
            RequestMessageId = Acemq.Wire.NewMessageId(),
            Endpoint = mode == "multi" ? Required(command, "endpoint") : null,
            Exchange = mode == "publish" ? Required(command, "exchange") : null,
            CorrelationId = Text(command, "correlation_id"),
            ExpectedReplyCount = command["expected_reply_count"] is JsonValue count ? (int)count.GetValue<double>() : null,
            Timeout = Milliseconds(command, "timeout_ms"),
        };

        // The protocol names no message type; the AMQP `type` property carries this unless given.
        var type = Text(command, "type") ?? "GatherRequest";
        var body = Body(command);
        var started = Stopwatch.GetTimestamp();
        var answer = new JsonObject();
        try
        {
            var replies = mode switch
            {
                "multi" => await requester.SendRequestMultiAsync<JsonElement, JsonElement>(type, body, options).ConfigureAwait(false),
                "publish" => await requester.PublishRequestAsync<JsonElement, JsonElement>(type, body, onReply: null, options).ConfigureAwait(false),
                _ => throw new ArgumentException($"unknown gather mode '{mode}' (multi or publish)"),
            };
            answer["outcome"] = "replies";
            answer["replies"] = Replies(replies);
        }
        catch (RequestTimeoutException e)
        {
            answer["outcome"] = "timeout_with_partial";
            answer["replies"] = Replies(e.PartialRepliesAs<JsonElement>());
        }

        answer["request_id"] = options.RequestMessageId;
        answer["elapsed_ms"] = Elapsed(started);
        return answer;
    }

    private async Task<JsonObject> StartResponderAsync(JsonObject command)
    {
        var name = Required(command, "name");
        var queue = Required(command, "queue");
        var behavior = command["behavior"] as JsonObject ?? [];
        var kind = Text(behavior, "reply") ?? "echo";
        if (kind is not ("echo" or "fail"))
        {
            throw new ArgumentException($"unknown behavior reply '{kind}' (echo or fail)");
        }

        var errorMessage = Text(behavior, "error_message") ?? "failure";
        var delay = Milliseconds(behavior, "delay_ms") ?? TimeSpan.Zero;
        var bindings = new List<Binding>();
        if (command["bind"] is JsonObject bind)
        {
            bindings.Add(new Binding(Required(bind, "exchange"), Text(bind, "routing_key") ?? ""));
        }

        var options = new ResponderOptions
        {
            Profile = Profiles.Parse(Text(command, "profile")),
            Mutant = Mutants.Parse(Text(command, "mutant")),
            MaxAttempts = command["max_attempts"] is JsonValue attempts ? (int)attempts.GetValue<double>() : 3,
            Bindings = bindings,
            Observer = new ResponderEvents(name, output),
        };
        if (_responders.ContainsKey(name))
        {
            throw new ArgumentException($"a responder named '{name}' is already started");
        }

        async Task<JsonObject> Handle(JsonElement request, RequestContext context, CancellationToken ct)
        {
            if (delay > TimeSpan.Zero)
            {
                await Task.Delay(delay, ct).ConfigureAwait(false);
            }

            if (kind == "fail")
            {
                throw new ScenarioFailure(errorMessage);
            }

            return Echo.Body(name, request, context);
        }

        var mq = await ConnectAsync().ConfigureAwait(false);
        var responder = await mq.RespondAsync<JsonElement, JsonObject>(queue, Handle, options).ConfigureAwait(false);
        if (!_responders.TryAdd(name, responder))
        {
            await responder.DisposeAsync().ConfigureAwait(false);
            throw new ArgumentException($"a responder named '{name}' is already started");
        }

        return [];
    }

    private async Task<JsonObject> StopResponderAsync(JsonObject command)
    {
        var name = Required(command, "name");
        if (!_responders.TryRemove(name, out var responder))
        {
            throw new ArgumentException($"no responder named '{name}'");
        }

        await responder.DisposeAsync().ConfigureAwait(false);
        return [];
    }

    private JsonObject Counters(JsonObject command)
    {
        var name = Required(command, "of");
        JsonObject counters;
        if (_responders.TryGetValue(name, out var responder))
        {
            counters = new JsonObject { ["answered"] = responder.Answered, ["unanswerable"] = responder.Unanswerable };
        }
        else if (_requesters.TryGetValue(name, out var requester))
        {
            counters = new JsonObject { ["timed_out"] = requester.TimedOut, ["unmatched"] = requester.Unmatched };
        }
        else
        {
            throw new ArgumentException($"no requester or responder named '{name}'");
        }

        return new JsonObject { ["counters"] = counters };
    }

    private async Task<Mq> ConnectAsync()
    {
        if (_mq is { } connected)
        {
            return connected;
        }

        await _connecting.WaitAsync().ConfigureAwait(false);
        try
        {
            if (_mq is null)
            {
                var url = _amqpUrl ?? throw new InvalidOperationException("no amqp_url yet: send hello first");
                _mq = await Mq.ConnectAsync(new Uri(url), $"acemq-interop peer {PeerName}").ConfigureAwait(false);
            }

            return _mq;
        }
        finally
        {
            _connecting.Release();
        }
    }

    private async Task CloseAllAsync()
    {
        var closing = _requesters.Values.Select(r => r.DisposeAsync().AsTask())
            .Concat(_responders.Values.Select(r => r.DisposeAsync().AsTask()))
            .ToList();
        _requesters.Clear();
        _responders.Clear();
        try
        {
            await Task.WhenAll(closing).WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            if (_mq is not null)
            {
                await _mq.DisposeAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            }
        }
        catch (Exception e)
        {
            Output.Log($"closing: {e.Message}");
        }
    }

    private Requester FindRequester(JsonObject command)
    {
        var name = Required(command, "requester");
        return _requesters.TryGetValue(name, out var requester)
            ? requester
            : throw new ArgumentException($"no requester named '{name}'");
    }

    private static JsonElement Body(JsonObject command) =>
        command["body"] is { } body ? JsonSerializer.SerializeToElement(body) : JsonSerializer.SerializeToElement<object?>(null);

    /// <summary>Optional extra request headers: strings are sent as long strings, numbers as 64-bit integers or doubles.</summary>
    private static IReadOnlyDictionary<string, object?>? ExtraHeaders(JsonObject command)
    {
        if (command["headers"] is not JsonObject headers)
        {
            return null;
        }

        var table = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var (name, value) in headers)
        {
            table[name] = value?.GetValueKind() switch
            {
                JsonValueKind.String => value.GetValue<string>(),
                JsonValueKind.Number when value.AsValue().TryGetValue<long>(out var l) => l,
                JsonValueKind.Number => value.GetValue<double>(),
                JsonValueKind.True => true,
                JsonValueKind.False => false,
                _ => value?.ToJsonString(),
            };
        }

        return table;
    }

    private static JsonArray Replies(IEnumerable<JsonElement> replies) =>
        new(replies.Select(r => JsonSerializer.SerializeToNode(r)).ToArray());

    private static JsonArray Strings(IEnumerable<string> values) => new(values.Select(v => (JsonNode?)v).ToArray());

    private static string? Text(JsonObject command, string field) =>
        command[field] is JsonValue value && value.GetValueKind() == JsonValueKind.String ? value.GetValue<string>() : null;

    private static string Required(JsonObject command, string field) =>
        Text(command, field) ?? throw new ArgumentException($"'{field}' is required");

    private static TimeSpan? Milliseconds(JsonObject command, string field) =>
        command[field] is JsonValue value && value.GetValueKind() == JsonValueKind.Number
            ? TimeSpan.FromMilliseconds(value.GetValue<double>())
            : null;

    private static long Elapsed(long started) => (long)Stopwatch.GetElapsedTime(started).TotalMilliseconds;

    private static string Describe(Exception e) => e switch
    {
        AcemqException or ArgumentException => e.Message,
        ObjectDisposedException disposed => $"{disposed.ObjectName} closed while the command was pending",
        _ => $"{e.GetType().Name}: {e.Message}",
    };
}
