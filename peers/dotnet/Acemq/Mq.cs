using System.Reflection;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Acemq;

/// <summary>
/// The entry point: one AMQP connection, from which requesters and responders are opened.
/// Each requester and responder gets channels of its own, so one slow or failed channel
/// never stalls another. The connection recovers by RabbitMQ.Client's automatic recovery
/// (RR-20): it reconnects under the same name, trying the endpoints in the order given, and
/// its topology recovery declares the queues and consumes them again.
/// </summary>
public sealed class Mq : IAsyncDisposable, IDisposable
{
    /// <summary>Between two recovery attempts (RR-20.2: the first within 1 s, at most 5 s apart).</summary>
    internal static readonly TimeSpan RecoveryInterval = TimeSpan.FromSeconds(1);

    private readonly IConnection _connection;
    private readonly Unrecovered _unrecovered;

    private Mq(IConnection connection, Unrecovered unrecovered) => (_connection, _unrecovered) = (connection, unrecovered);

    /// <summary>The RabbitMQ.Client version this library runs on, read from the assembly.</summary>
    public static string ClientVersion { get; } = ReadClientVersion();

    /// <summary>This library's version.</summary>
    public static string Version { get; } =
        typeof(Mq).Assembly.GetName().Version?.ToString(3) ?? "0.0.0";

    /// <summary>
    /// Connects to <paramref name="uri"/>. An <c>amqps://</c> URI uses RabbitMQ.Client's TLS
    /// defaults: the server verified against the system's trust store and named by the URI's host.
    /// </summary>
    public static Task<Mq> ConnectAsync(Uri uri, string clientName = "acemq-dotnet", CancellationToken cancellationToken = default) =>
        ConnectAsync(uri, tls: null, clientName, cancellationToken);

    /// <summary>
    /// Connects to <paramref name="uri"/>, over TLS as <paramref name="tls"/> says when it is
    /// given (the URI must then be <c>amqps://</c>); a server that does not verify fails the
    /// connection with the reason.
    /// </summary>
    public static Task<Mq> ConnectAsync(Uri uri, MqTls? tls, string clientName = "acemq-dotnet", CancellationToken cancellationToken = default) =>
        ConnectAsync([uri], tls, clientName, cancellationToken);

    /// <summary>
    /// Connects, as <paramref name="clientName"/> (the connection name the management UI
    /// shows, kept on every recovery), to the first reachable of <paramref name="endpoints"/>
    /// (a cluster's nodes, the preferred first); after a loss, recovery tries them in the same
    /// order. User, password and virtual host are the first URI's.
    /// </summary>
    public static async Task<Mq> ConnectAsync(
        IReadOnlyList<Uri> endpoints, MqTls? tls, string clientName = "acemq-dotnet", CancellationToken cancellationToken = default)
    {
        if (endpoints.Count == 0)
        {
            throw new ArgumentException("no broker endpoint", nameof(endpoints));
        }

        var unrecovered = new Unrecovered();
        var factory = new ConnectionFactory
        {
            Uri = endpoints[0],
            ClientProvidedName = clientName,
            AutomaticRecoveryEnabled = true,
            TopologyRecoveryEnabled = true,
            NetworkRecoveryInterval = RecoveryInterval,
            // What a requester or responder whose policy does not recover registered (RR-20).
            TopologyRecoveryFilter = new TopologyRecoveryFilter
            {
                QueueFilter = queue => !unrecovered.Contains(queue.Name),
                ConsumerFilter = consumer => !unrecovered.Contains(consumer.ConsumerTag),
            },
        };
        UseTls(factory, endpoints[0], tls);
        var inOrder = new InOrder(endpoints.Select(uri => Endpoint(uri, tls)).ToArray());
        return new Mq(await factory.CreateConnectionAsync(inOrder, clientName, cancellationToken).ConfigureAwait(false), unrecovered);
    }

    private static AmqpTcpEndpoint Endpoint(Uri uri, MqTls? tls)
    {
        if (tls is not null && !string.Equals(uri.Scheme, "amqps", StringComparison.OrdinalIgnoreCase))
        {
            throw new ArgumentException($"TLS settings given for a plain {uri.Scheme}:// URI: use amqps://", nameof(uri));
        }

        return tls is null ? new AmqpTcpEndpoint(uri) : new AmqpTcpEndpoint(uri, tls.ToSslOption(uri.Host));
    }

    /// <summary>
    /// The endpoints in the order given: RabbitMQ.Client's default resolver shuffles them,
    /// which would ignore the preferred node.
    /// </summary>
    internal sealed class InOrder(IReadOnlyList<AmqpTcpEndpoint> endpoints) : IEndpointResolver
    {
        public IEnumerable<AmqpTcpEndpoint> All() => endpoints;
    }

    /// <summary>
    /// Queue names and consumer tags that topology recovery leaves alone: those of a requester
    /// or responder whose policy does not recover (breaks RR-20.2, RR-20.3).
    /// </summary>
    internal sealed class Unrecovered
    {
        private readonly System.Collections.Concurrent.ConcurrentDictionary<string, byte> _names = new(StringComparer.Ordinal);

        public void Add(string name) => _names[name] = 0;

        public bool Contains(string name) => _names.ContainsKey(name);
    }

    /// <summary>
    /// Puts <paramref name="tls"/> on a factory whose <c>Uri</c> is set (after it: setting the
    /// URI resets the factory's TLS options); null leaves the factory as its URI made it.
    /// </summary>
    /// <exception cref="ArgumentException">TLS settings for a plain <c>amqp://</c> URI.</exception>
    public static void UseTls(ConnectionFactory factory, Uri uri, MqTls? tls)
    {
        if (tls is null)
        {
            return;
        }

        if (!string.Equals(uri.Scheme, "amqps", StringComparison.OrdinalIgnoreCase))
        {
            throw new ArgumentException($"TLS settings given for a plain {uri.Scheme}:// URI: use amqps://", nameof(uri));
        }

        factory.Ssl = tls.ToSslOption(uri.Host);
    }

    /// <summary>Opens a requester with its own reply queue (declared and consumed before this returns).</summary>
    public Task<Requester> RequesterAsync(RequesterOptions? options = null, CancellationToken cancellationToken = default) =>
        Requester.OpenAsync(_connection, options ?? new RequesterOptions(), _unrecovered, cancellationToken);

    /// <summary>Answers requests on <paramref name="queue"/> with <paramref name="handler"/>.</summary>
    public Task<Responder> RespondAsync<TReq, TRes>(
        string queue, Func<TReq, Task<TRes>> handler, ResponderOptions? options = null, CancellationToken cancellationToken = default) =>
        RespondAsync<TReq, TRes>(queue, (request, _, _) => handler(request), options, cancellationToken);

    /// <summary>
    /// Answers requests on <paramref name="queue"/>; the handler also sees the request's
    /// envelope (ids, reply address, headers, attempt).
    /// </summary>
    public Task<Responder> RespondAsync<TReq, TRes>(
        string queue,
        Func<TReq, RequestContext, CancellationToken, Task<TRes>> handler,
        ResponderOptions? options = null,
        CancellationToken cancellationToken = default)
    {
        // Decoding is the responder's, not the handler's: a body that is not a TReq never
        // reaches the handler and is answered MalformedRequest (RR-19.2).
        object? Decode(byte[] body) => System.Text.Json.JsonSerializer.Deserialize<TReq>(body, JsonCodec.Options);

        async Task<byte[]> Handle(object? request, RequestContext context, CancellationToken ct) =>
            JsonCodec.Encode(await handler((TReq)request!, context, ct).ConfigureAwait(false));

        return Responder.StartAsync(
            _connection, queue, new RequestHandler(Decode, Handle), options ?? new ResponderOptions(), _unrecovered, cancellationToken);
    }

    public async ValueTask DisposeAsync()
    {
        try
        {
            await _connection.CloseAsync().ConfigureAwait(false);
        }
        catch (Exception)
        {
            // Already closed by the broker or the network: nothing left to release.
        }

        await _connection.DisposeAsync().ConfigureAwait(false);
    }

    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    /// <summary>The client's account of a closed connection or channel: AMQP reply code and text, and the cause when there is one.</summary>
    internal static string Describe(ShutdownEventArgs reason) =>
        reason.Cause is Exception cause && reason.ReplyCode == 0
            ? $"{reason.Initiator}: {cause.Message}"
            : $"{reason.ReplyCode} {reason.ReplyText}";

    private static string ReadClientVersion()
    {
        var assembly = typeof(ConnectionFactory).Assembly;
        var informational = assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion;
        var version = informational?.Split('+')[0] ?? assembly.GetName().Version?.ToString(3) ?? "unknown";
        return $"RabbitMQ.Client {version}";
    }
}
