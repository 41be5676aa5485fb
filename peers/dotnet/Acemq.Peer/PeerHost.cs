using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using RabbitMQ.Client;

namespace Acemq.Peer;

/// <summary>
/// Reads commands and runs each on its own task, so a pending request never delays
/// another command's answer.
/// </summary>
internal sealed class PeerHost(Output output)
{
    public const string PeerName = "dotnet";

    /// <summary>The protocol versions this peer speaks (docs/peer-protocol.md).</summary>
    private static readonly int[] Protocols = [1, 2, 3, 4, 5];

    /// <summary>From this version on, hello names policy knobs and commands carry policy values.</summary>
    private const int KnobsProtocol = 4;

    /// <summary>
    /// From this version on, each requester and responder has a connection of its own, named
    /// <c>connection_name</c>, to its <c>amqp_urls</c>; a call its lost connection ended is the
    /// <c>connection_lost</c> outcome, and a role whose connection is back writes <c>recovered</c>.
    /// </summary>
    private const int RecoveryProtocol = 5;

    private readonly ConcurrentDictionary<string, Requester> _requesters = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, Responder> _responders = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, Raw.Responder> _rawResponders = new(StringComparer.Ordinal);
    private readonly SemaphoreSlim _connecting = new(1, 1);

    // Protocol 5: the connection of each requester and responder, by its name, closed with it.
    private readonly ConcurrentDictionary<string, Mq> _roleConnections = new(StringComparer.Ordinal);
    private string? _amqpUrl;
    private IReadOnlyList<string> _amqpUrls = [];
    private MqTls? _tls;
    private Mq? _mq;
    private Task<IConnection>? _rawConnection;

    // The request and gather commands not answered yet, so that requester.close answers after
    // the calls its close ended (protocol 3).
    private readonly ConcurrentDictionary<long, PendingCommand> _pendingCommands = new();

    // Until hello says otherwise, version 1: no load, no connection_lost.
    private int _protocol = 1;

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

    internal async Task DispatchAsync(JsonObject command)
    {
        var id = command["id"] is JsonValue idValue && idValue.TryGetValue<long>(out var n) ? n : (long?)null;
        var op = Text(command, "op");
        if (id is null)
        {
            Output.Log($"command without an integer id ignored: {command.ToJsonString()}");
            return;
        }

        JsonObject answer;
        var pending = op is "request" or "gather" && Text(command, "requester") is { } owner ? new PendingCommand(owner) : null;
        if (pending is not null)
        {
            _pendingCommands[id.Value] = pending;
        }

        try
        {
            var result = op switch
            {
                "hello" => Hello(command),
                "requester.open" => await OpenRequesterAsync(command).ConfigureAwait(false),
                "requester.close" => await CloseRequesterAsync(command).ConfigureAwait(false),
                "request" => await RequestAsync(command, pending!).ConfigureAwait(false),
                "gather" => await GatherAsync(command, pending!).ConfigureAwait(false),
                "responder.start" => await StartResponderAsync(command).ConfigureAwait(false),
                "responder.stop" => await StopResponderAsync(command).ConfigureAwait(false),
                "counters" => Counters(command),
                "load" when _protocol >= 2 => await LoadAsync(command).ConfigureAwait(false),
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
        if (pending is not null)
        {
            _pendingCommands.TryRemove(id.Value, out _);
            pending.Answered.TrySetResult();
        }

        if (op == "shutdown")
        {
            await CloseAllAsync().ConfigureAwait(false);
            Environment.Exit(0);
        }
    }

    private JsonObject Hello(JsonObject command)
    {
        // The highest version both speak: from `protocols` when the harness lists them, else `protocol`.
        var offered = command["protocols"] is JsonArray list
            ? list.Select(v => v is JsonValue n && n.TryGetValue<int>(out var i) ? i : 0).ToArray()
            : [command["protocol"] is JsonValue one && one.TryGetValue<int>(out var asked) ? asked : 1];
        var common = offered.Intersect(Protocols).ToArray();
        if (common.Length == 0)
        {
            throw new ArgumentException(
                $"this peer speaks protocol {string.Join(" or ", Protocols)}, not {string.Join(", ", offered)}");
        }

        _protocol = common.Max();
        if (Text(command, "amqp_url") is { } url)
        {
            (_amqpUrl, _tls) = (url, Tls(command, url));
            _amqpUrls = Urls(command, "amqp_urls") ?? [url];
        }

        string[] capabilities = _protocol >= 2 ? ["request", "respond", "gather", "load", "tls"] : ["request", "respond", "gather"];
        var answer = new JsonObject
        {
            ["protocol"] = _protocol,
            ["peer"] = PeerName,
            ["language"] = "C#",
            ["binding"] = $"acemq-dotnet {Mq.Version}",
            ["client"] = Mq.ClientVersion,
        };
        if (_protocol >= KnobsProtocol)
        {
            // The binding's policy properties themselves; the harness makes its profiles and
            // mutants of them. RabbitMQ.Client writes every value the catalogue names (an empty
            // reply_to as present, B and u headers), so nothing is unreachable.
            answer["knobs"] = new JsonObject
            {
                ["requester"] = Strings(PolicyKnobs.Names<RequesterPolicy>()),
                ["responder"] = Strings(PolicyKnobs.Names<ResponderPolicy>()),
            };
        }
        else
        {
            // An older harness names profiles and mutants; this peer knows none but the binding as it ships.
            answer["profiles"] = Strings(["current"]);
            answer["mutants"] = new JsonArray();
        }

        answer["capabilities"] = Strings(capabilities);
        return answer;
    }

    /// <summary>
    /// The policy of a requester.open, responder.start or load (protocol 4), set on the
    /// binding's policy record; absent (before protocol 4), the binding as it ships.
    /// <c>profile</c> and <c>mutant</c> are never read: they are sent for the log only.
    /// </summary>
    private static T Policy<T>(JsonObject command) where T : new() => command["policy"] switch
    {
        null => new T(),
        JsonObject values => PolicyKnobs.Apply<T>(values),
        _ => throw new ArgumentException("'policy' must be an object of knob values"),
    };

    private async Task<JsonObject> OpenRequesterAsync(JsonObject command)
    {
        var name = Required(command, "name");
        var options = new RequesterOptions
        {
            Policy = Policy<RequesterPolicy>(command),
            Observer = new RequesterEvents(name, output, connectionLost: _protocol >= 2, bothIds: _protocol >= 3,
                recovered: _protocol >= RecoveryProtocol),
        };
        if (_requesters.ContainsKey(name))
        {
            throw new ArgumentException($"a requester named '{name}' is already open");
        }

        var mq = await RoleConnectionAsync(name, command).ConfigureAwait(false);
        Requester requester;
        try
        {
            requester = await mq.RequesterAsync(options).ConfigureAwait(false);
        }
        catch
        {
            await CloseRoleConnectionAsync(name, mq).ConfigureAwait(false);
            throw;
        }

        if (!_requesters.TryAdd(name, requester))
        {
            await requester.DisposeAsync().ConfigureAwait(false);
            await CloseRoleConnectionAsync(name, mq).ConfigureAwait(false);
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
        await CloseRoleConnectionAsync(name).ConfigureAwait(false);

        // The binding has ended the calls its close ended (their tasks are done); their answers
        // go out before this one. Calls the binding left running are not waited for.
        var ended = _pendingCommands.Values.Where(p => p.Requester == name && p.Call is { IsCompleted: true }).Select(p => p.Answered.Task);
        await Task.WhenAll(ended).ConfigureAwait(false);
        return [];
    }

    private async Task<JsonObject> RequestAsync(JsonObject command, PendingCommand pending)
    {
        var requester = FindRequester(command);
        var options = new RequestOptions
        {
            MessageId = Acemq.Wire.NewMessageId(),
            Timeout = Milliseconds(command, "timeout_ms"),
            Headers = ExtraHeaders(command),
            Type = _protocol >= 3 ? Text(command, "type") : null,
        };
        var body = Body(command);
        var started = Stopwatch.GetTimestamp();
        var answer = new JsonObject();
        try
        {
            var call = requester.RequestAsync<JsonElement, JsonElement>(
                Text(command, "exchange") ?? "", Required(command, "routing_key"), body, options);
            pending.Call = call;
            var reply = await call.ConfigureAwait(false);
            answer["outcome"] = "reply";
            answer["reply"] = JsonSerializer.SerializeToNode(reply);
        }
        catch (Exception e) when (Outcomes.OfRequest(e, closedOutcome: _protocol >= 3, lostOutcome: _protocol >= RecoveryProtocol) is { } outcome)
        {
            answer = outcome;
        }

        answer["request_id"] = options.MessageId;
        answer["elapsed_ms"] = Elapsed(started);
        return answer;
    }

    private async Task<JsonObject> GatherAsync(JsonObject command, PendingCommand pending)
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

        // Protocol 3 passes the type through, absent included; before it the adapter named one.
        var type = _protocol >= 3 ? Text(command, "type") : Text(command, "type") ?? "GatherRequest";
        var body = Body(command);
        var started = Stopwatch.GetTimestamp();
        var answer = new JsonObject();
        try
        {
            var call = mode switch
            {
                "multi" => requester.SendRequestMultiAsync<JsonElement, JsonElement>(type, body, options),
                "publish" => requester.PublishRequestAsync<JsonElement, JsonElement>(type, body, onReply: null, options),
                _ => throw new ArgumentException($"unknown gather mode '{mode}' (multi or publish)"),
            };
            pending.Call = call;
            var replies = await call.ConfigureAwait(false);
            answer["outcome"] = "replies";
            answer["replies"] = Outcomes.Replies(replies);
        }
        catch (Exception e) when (Outcomes.OfGather(e, closedOutcome: _protocol >= 3, lostOutcome: _protocol >= RecoveryProtocol) is { } outcome)
        {
            answer = outcome;
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

        var errorMessage = kind == "fail" ? Required(behavior, "error_message") : null;
        var delay = Milliseconds(behavior, "delay_ms") ?? TimeSpan.Zero;
        var bind = command["bind"] is JsonObject b ? new Binding(Required(b, "exchange"), Text(b, "routing_key") ?? "") : null;
        if (_responders.ContainsKey(name) || _rawResponders.ContainsKey(name))
        {
            throw new ArgumentException($"a responder named '{name}' is already started");
        }

        switch (Text(command, "client") ?? "binding")
        {
            case "raw" when _protocol >= 2:
                var raw = await Raw.Responder.StartAsync(await RawConnectionAsync().ConfigureAwait(false), queue, bind).ConfigureAwait(false);
                if (!_rawResponders.TryAdd(name, raw))
                {
                    await raw.DisposeAsync().ConfigureAwait(false);
                    throw new ArgumentException($"a responder named '{name}' is already started");
                }

                return [];
            case "binding":
                break;
            case var other:
                throw new ArgumentException($"unknown responder client '{other}' (binding or raw)");
        }

        var options = new ResponderOptions
        {
            Policy = Policy<ResponderPolicy>(command),
            Bindings = bind is null ? [] : [bind],
            // events: false (protocol 4, a load rather than a cell): no event per request.
            Observer = new ResponderEvents(name, output, connectionLost: _protocol >= 2,
                requestEvents: command["events"]?.GetValueKind() != JsonValueKind.False, recovered: _protocol >= RecoveryProtocol),
        };

        // Absent, the binding's own default applies (RR-14): the adapter never supplies one.
        if (command["max_attempts"] is JsonValue attempts)
        {
            options = options with { MaxAttempts = (int)attempts.GetValue<double>() };
        }

        async Task<JsonObject> Handle(JsonElement request, RequestContext context, CancellationToken ct)
        {
            if (delay > TimeSpan.Zero)
            {
                await Task.Delay(delay, ct).ConfigureAwait(false);
            }

            if (kind == "fail")
            {
                throw new ScenarioFailure(errorMessage!);
            }

            return Echo.Body(name, request, context, alwaysCorrelationId: _protocol >= 3);
        }

        var mq = await RoleConnectionAsync(name, command).ConfigureAwait(false);
        Responder responder;
        try
        {
            responder = await mq.RespondAsync<JsonElement, JsonObject>(queue, Handle, options).ConfigureAwait(false);
        }
        catch
        {
            await CloseRoleConnectionAsync(name, mq).ConfigureAwait(false);
            throw;
        }

        if (!_responders.TryAdd(name, responder))
        {
            await responder.DisposeAsync().ConfigureAwait(false);
            await CloseRoleConnectionAsync(name, mq).ConfigureAwait(false);
            throw new ArgumentException($"a responder named '{name}' is already started");
        }

        return [];
    }

    private async Task<JsonObject> StopResponderAsync(JsonObject command)
    {
        var name = Required(command, "name");
        if (_rawResponders.TryRemove(name, out var raw))
        {
            await raw.DisposeAsync().ConfigureAwait(false);
            return [];
        }

        if (!_responders.TryRemove(name, out var responder))
        {
            throw new ArgumentException($"no responder named '{name}'");
        }

        await responder.DisposeAsync().ConfigureAwait(false);
        await CloseRoleConnectionAsync(name).ConfigureAwait(false);
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
        else if (_rawResponders.ContainsKey(name))
        {
            // A raw responder keeps no counters.
            counters = [];
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
                _mq = await Mq.ConnectAsync(AmqpUri(), _tls, $"acemq-interop peer {PeerName}").ConfigureAwait(false);
            }

            return _mq;
        }
        finally
        {
            _connecting.Release();
        }
    }

    /// <summary>
    /// The connection a requester or responder runs on. From protocol 5, one of its own: named
    /// the command's <c>connection_name</c> on every (re)connection, to the nodes of its
    /// <c>amqp_urls</c> (absent: hello's), the preferred first; credentials, virtual host and
    /// TLS are hello's. Before it, the one connection every role of this peer shares.
    /// </summary>
    private async Task<Mq> RoleConnectionAsync(string name, JsonObject command)
    {
        if (_protocol < RecoveryProtocol)
        {
            return await ConnectAsync().ConfigureAwait(false);
        }

        var connectionName = Required(command, "connection_name");
        var urls = (Urls(command, "amqp_urls") ?? _amqpUrls).Select(url => new Uri(url)).ToArray();
        if (urls.Length == 0)
        {
            throw new InvalidOperationException("no amqp_url yet: send hello first");
        }

        var mq = await Mq.ConnectAsync(urls, _tls, connectionName).ConfigureAwait(false);
        if (!_roleConnections.TryAdd(name, mq))
        {
            await mq.DisposeAsync().ConfigureAwait(false);
            throw new ArgumentException($"a requester or responder named '{name}' is already open");
        }

        return mq;
    }

    /// <summary>Closes the role's own connection (protocol 5; before it, the shared one stays).</summary>
    private async Task CloseRoleConnectionAsync(string name, Mq? only = null)
    {
        if (_roleConnections.TryGetValue(name, out var mq) && (only is null || ReferenceEquals(mq, only))
            && _roleConnections.TryRemove(new KeyValuePair<string, Mq>(name, mq)))
        {
            await mq.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// <c>load</c>: the binding through a requester of its own (its policy as for
    /// requester.open), or the bare client; closed at the end either way.
    /// </summary>
    private async Task<JsonObject> LoadAsync(JsonObject command)
    {
        var spec = new LoadSpec(
            Text(command, "client") ?? throw new ArgumentException("'client' is required (binding or raw)"),
            Integer(command, "requests") ?? throw new ArgumentException("'requests' is required"),
            Integer(command, "in_flight") ?? 1,
            Integer(command, "body_bytes") ?? 0,
            Integer(command, "warmup") ?? 0);
        if (spec.Requests < 0 || spec.InFlight < 1 || spec.Warmup < 0 || spec.BodyBytes < 0)
        {
            throw new ArgumentException("requests, warmup and body_bytes must be >= 0 and in_flight >= 1");
        }

        var exchange = Text(command, "exchange") ?? "";
        var routingKey = Required(command, "routing_key");
        var timeout = Milliseconds(command, "timeout_ms");
        JsonObject result;
        switch (spec.Client)
        {
            case "binding":
            {
                var options = new RequesterOptions { Policy = Policy<RequesterPolicy>(command) };
                var mq = await ConnectAsync().ConfigureAwait(false);
                await using var requester = await mq.RequesterAsync(options).ConfigureAwait(false);
                var body = spec.Body;
                result = await Load.RunAsync(spec, () => requester.RequestAsync<PadBody, JsonElement>(exchange, routingKey, body, timeout))
                    .ConfigureAwait(false);
                break;
            }

            case "raw":
            {
                var body = Acemq.JsonCodec.Encode(spec.Body);
                var wait = timeout ?? Requester.DefaultTimeout;
                await using var raw = await Raw.Requester.OpenAsync(AmqpUri(), _tls).ConfigureAwait(false);
                result = await Load.RunAsync(spec, () => raw.CallAsync(exchange, routingKey, body, wait)).ConfigureAwait(false);
                break;
            }

            default:
                throw new ArgumentException($"unknown load client '{spec.Client}' (binding or raw)");
        }

        return new JsonObject { ["load"] = result };
    }

    /// <summary>The connection raw responders share: the bare client's own, not the binding's.</summary>
    private Task<IConnection> RawConnectionAsync() =>
        LazyInitializer.EnsureInitialized(ref _rawConnection, () => Raw.ConnectAsync(AmqpUri(), _tls, $"acemq-interop peer {PeerName} raw"));

    /// <summary>
    /// The hello's <c>tls</c> (<c>ca_file</c>: the CA that signed the broker's certificate), or
    /// null on a plain run. Every connection of this peer, the binding's and the raw client's,
    /// uses it; <c>amqps://</c> without it verifies against the system's trust store.
    /// </summary>
    private static MqTls? Tls(JsonObject command, string url)
    {
        if (command["tls"] is null)
        {
            return null;
        }

        var caFile = command["tls"] is JsonObject tls ? Text(tls, "ca_file") : null;
        if (string.IsNullOrEmpty(caFile))
        {
            throw new ArgumentException("'tls' must be an object with 'ca_file'");
        }

        if (!url.StartsWith("amqps://", StringComparison.OrdinalIgnoreCase))
        {
            throw new ArgumentException("hello has tls but amqp_url is not amqps://: give both or neither");
        }

        try
        {
            return new MqTls(caFile);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or System.Security.Cryptography.CryptographicException)
        {
            throw new ArgumentException($"tls.ca_file {caFile} unusable: {e.Message}", e);
        }
    }

    private Uri AmqpUri() => new(_amqpUrl ?? throw new InvalidOperationException("no amqp_url yet: send hello first"));

    private async Task CloseAllAsync()
    {
        var closing = _requesters.Values.Select(r => r.DisposeAsync().AsTask())
            .Concat(_responders.Values.Select(r => r.DisposeAsync().AsTask()))
            .Concat(_rawResponders.Values.Select(r => r.DisposeAsync().AsTask()))
            .ToList();
        _requesters.Clear();
        _responders.Clear();
        _rawResponders.Clear();
        try
        {
            await Task.WhenAll(closing).WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            var connections = _roleConnections.Values.Select(c => c.DisposeAsync().AsTask()).ToList();
            _roleConnections.Clear();
            await Task.WhenAll(connections).WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            if (_mq is not null)
            {
                await _mq.DisposeAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            }

            if (_rawConnection is { IsCompletedSuccessfully: true } raw)
            {
                await raw.Result.CloseAsync().WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
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

    /// <summary>A command's list of URLs (protocol 5's <c>amqp_urls</c>); null when absent.</summary>
    private static IReadOnlyList<string>? Urls(JsonObject command, string field) => command[field] switch
    {
        null => null,
        JsonArray { Count: > 0 } items when items.All(i => i is JsonValue v && v.GetValueKind() == JsonValueKind.String) =>
            [.. items.Select(i => i!.GetValue<string>())],
        _ => throw new ArgumentException($"'{field}' must be a non-empty list of strings"),
    };

    private static JsonArray Strings(IEnumerable<string> values) => new(values.Select(v => (JsonNode?)v).ToArray());

    private static string? Text(JsonObject command, string field) =>
        command[field] is JsonValue value && value.GetValueKind() == JsonValueKind.String ? value.GetValue<string>() : null;

    private static string Required(JsonObject command, string field) =>
        Text(command, field) ?? throw new ArgumentException($"'{field}' is required");

    private static TimeSpan? Milliseconds(JsonObject command, string field) =>
        command[field] is JsonValue value && value.GetValueKind() == JsonValueKind.Number
            ? TimeSpan.FromMilliseconds(value.GetValue<double>())
            : null;

    private static int? Integer(JsonObject command, string field) =>
        command[field] is JsonValue value && value.GetValueKind() == JsonValueKind.Number ? (int)value.GetValue<double>() : null;

    private static long Elapsed(long started) => (long)Stopwatch.GetElapsedTime(started).TotalMilliseconds;

    private static string Describe(Exception e) => e switch
    {
        AcemqException or ArgumentException => e.Message,
        ObjectDisposedException disposed => $"{disposed.ObjectName} closed while the command was pending",
        // "None of the specified endpoints were reachable" alone hides why (refused, TLS...): add the root cause.
        RabbitMQ.Client.Exceptions.BrokerUnreachableException when RootCause(e) is { } cause && cause != e =>
            $"{e.GetType().Name}: {e.Message}: {cause.GetType().Name}: {cause.Message}",
        _ => $"{e.GetType().Name}: {e.Message}",
    };

    private static Exception RootCause(Exception e)
    {
        while (e.InnerException is { } inner)
        {
            e = inner;
        }

        return e;
    }
}

/// <summary>A request or gather command until it is answered, and the binding's call once it was made.</summary>
internal sealed class PendingCommand(string requester)
{
    public string Requester { get; } = requester;

    public volatile Task? Call;

    public TaskCompletionSource Answered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
}
