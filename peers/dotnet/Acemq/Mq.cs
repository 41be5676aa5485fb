using System.Reflection;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Acemq;

/// <summary>
/// The entry point: one AMQP connection, from which requesters and responders are opened.
/// Each requester and responder gets channels of its own, so one slow or failed channel
/// never stalls another.
/// </summary>
public sealed class Mq : IAsyncDisposable, IDisposable
{
    private readonly IConnection _connection;

    private Mq(IConnection connection) => _connection = connection;

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
    public static async Task<Mq> ConnectAsync(Uri uri, MqTls? tls, string clientName = "acemq-dotnet", CancellationToken cancellationToken = default)
    {
        var factory = new ConnectionFactory
        {
            Uri = uri,
            ClientProvidedName = clientName,

            // Recovery would silently re-declare exclusive reply queues under a new
            // connection; a requester must rather fail loudly and be reopened.
            AutomaticRecoveryEnabled = false,
            TopologyRecoveryEnabled = false,
        };
        UseTls(factory, uri, tls);
        return new Mq(await factory.CreateConnectionAsync(cancellationToken).ConfigureAwait(false));
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
        Requester.OpenAsync(_connection, options ?? new RequesterOptions(), cancellationToken);

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

        return Responder.StartAsync(_connection, queue, new RequestHandler(Decode, Handle), options ?? new ResponderOptions(), cancellationToken);
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
