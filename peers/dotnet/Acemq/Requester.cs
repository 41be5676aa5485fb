using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Acemq;

/// <summary>
/// Sends requests and waits for their replies on one reply queue of its own. Replies are
/// matched to callers by correlation id; gathers are matched by <c>responseMessageId</c>.
/// A lost connection ends every pending call at once with <see cref="ConnectionLostException"/>
/// (its reply queue is gone, RR-20.1); the connection's recovery then declares a new
/// server-named reply queue, which later requests name (RR-20.3).
/// </summary>
public sealed class Requester : IAsyncDisposable, IDisposable
{
    /// <summary>The header that carries the reply address besides the native <c>reply_to</c>.</summary>
    public const string ReplyToHeader = Wire.ReplyToHeader;

    /// <summary>The header of a failure reply: <c>{ExceptionType}: {message}</c>.</summary>
    public const string ErrorHeader = Wire.ErrorHeader;

    public static readonly TimeSpan DefaultTimeout = TimeSpan.FromSeconds(30);

    private static readonly Dictionary<string, object?> ClassicQueue = new() { ["x-queue-type"] = "classic" };

    private readonly IConnection _connection;
    private readonly IChannel _replies;
    private readonly AsyncEventingBasicConsumer _consumer;
    private readonly RequesterOptions _options;
    private readonly RequesterPolicy _policy;
    private readonly PendingCalls _calls = new();
    private readonly ConcurrentDictionary<string, IPendingGather> _gathers = new(StringComparer.Ordinal);
    private readonly SemaphoreSlim _publisherGate = new(1, 1);
    private readonly CancellationTokenSource _disposed = new();
    private readonly CallsInFlight _inFlight = new();
    private IChannel? _publisher;
    private long _timedOut;
    private long _unmatched;
    private int _lost;
    private readonly Mq.Unrecovered _unrecovered;
    private volatile string _replyQueue;

    // Cancelled when the connection is lost, then replaced: a call holds the one of the
    // connection it was made on, so a loss after it started ends it (RR-20.1).
    private CancellationTokenSource _loss = new();
    private volatile string _lostReason = "connection lost";

    // Set when the connection was lost under a policy that does not recover: later calls are refused.
    private volatile bool _down;

    // Only for a policy that counts one kind of unmatched reply and not the other.
    private readonly RecentIds? _sentRequests;

    private Requester(IConnection connection, IChannel replies, RequesterOptions options, string replyQueue, Mq.Unrecovered unrecovered)
    {
        _connection = connection;
        _replies = replies;
        _options = options;
        _policy = options.Policy;
        _unrecovered = unrecovered;
        _sentRequests = _policy is { CountUnmatched: true, CountGatherUnmatched: true } ? null : new RecentIds(4096);
        _replyQueue = replyQueue;
        _consumer = new AsyncEventingBasicConsumer(replies);
        _consumer.ReceivedAsync += OnReplyAsync;

        // The publishing channel is reopened on demand (a 404 closes it), so only the reply
        // channel and the connection are watched: losing either ends this requester.
        _replies.ChannelShutdownAsync += OnShutdownAsync;
        _connection.ConnectionShutdownAsync += OnShutdownAsync;
        _connection.QueueNameChangedAfterRecoveryAsync += OnQueueRenamedAsync;
        _connection.RecoverySucceededAsync += OnRecoveredAsync;
    }

    /// <summary>The reply address this requester's requests name: server-named, so a new one after a recovery.</summary>
    public string ReplyQueue => _replyQueue;

    /// <summary>Requests that gave up before an answer arrived (gathers are never counted).</summary>
    public long TimedOut => Interlocked.Read(ref _timedOut);

    /// <summary>Replies with nobody left waiting for them.</summary>
    public long Unmatched => Interlocked.Read(ref _unmatched);

    internal static async Task<Requester> OpenAsync(IConnection connection, RequesterOptions options, Mq.Unrecovered unrecovered, CancellationToken ct)
    {
        var channel = await connection.CreateChannelAsync(cancellationToken: ct).ConfigureAwait(false);
        try
        {
            var queue = await DeclareReplyQueueAsync(channel, options.Policy, ct).ConfigureAwait(false);
            var requester = new Requester(connection, channel, options, queue, unrecovered);
            await requester.ConsumeAsync(queue, ct).ConfigureAwait(false);
            return requester;
        }
        catch
        {
            await channel.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Consumes a reply queue; under a policy that does not recover, recovery is told to leave it be (breaks RR-20.3).</summary>
    private async Task ConsumeAsync(string queue, CancellationToken ct)
    {
        if (!_policy.RecoverConnection)
        {
            _unrecovered.Add(queue);
        }

        var tag = await _replies.BasicConsumeAsync(queue, autoAck: true, _consumer, ct).ConfigureAwait(false);
        if (!_policy.RecoverConnection)
        {
            _unrecovered.Add(tag);
        }
    }

    /// <summary>
    /// Classic given explicitly: the broker's or the library's default may be quorum, and a
    /// quorum queue cannot be exclusive or auto-delete.
    /// </summary>
    private static async Task<string> DeclareReplyQueueAsync(IChannel channel, RequesterPolicy policy, CancellationToken ct)
    {
        var ok = await channel.QueueDeclareAsync(
            queue: "", durable: false, exclusive: policy.ExclusiveReplyQueue, autoDelete: true,
            arguments: policy.ExplicitReplyQueueType ? ClassicQueue : null,
            cancellationToken: ct).ConfigureAwait(false);
        return ok.QueueName;
    }

    public Task<TRes> RequestAsync<TReq, TRes>(
        string exchange, string routingKey, TReq request, TimeSpan? timeout = null, CancellationToken cancellationToken = default) =>
        RequestAsync<TReq, TRes>(exchange, routingKey, request, new RequestOptions { Timeout = timeout }, cancellationToken);

    /// <summary>
    /// Sends <paramref name="request"/> and waits for its reply.
    /// </summary>
    /// <exception cref="RequestTimedOutException">No reply arrived in time.</exception>
    /// <exception cref="ResponderFailedException">The responder's handler failed.</exception>
    /// <exception cref="ReplyDecodeException">The reply was not a <typeparamref name="TRes"/>.</exception>
    /// <exception cref="UnroutableException">The broker returned the request: nothing receives it.</exception>
    public Task<TRes> RequestAsync<TReq, TRes>(
        string exchange, string routingKey, TReq request, RequestOptions options, CancellationToken cancellationToken = default)
    {
        return Tracked(() => CallAsync<TReq, TRes>(exchange, routingKey, request, options, cancellationToken));
    }

    /// <summary>
    /// Counts a call in flight until its task has completed: the count drops in a synchronous
    /// continuation, so whoever <see cref="DisposeAsync"/> resumes finds the call's task done.
    /// </summary>
    private Task<T> Tracked<T>(Func<Task<T>> call)
    {
        _inFlight.Enter();
        Task<T> task;
        try
        {
            task = call();
        }
        catch
        {
            _inFlight.Exit();
            throw;
        }

        task.ContinueWith(static (_, calls) => ((CallsInFlight)calls!).Exit(), _inFlight,
            CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        return task;
    }

    private async Task<TRes> CallAsync<TReq, TRes>(
        string exchange, string routingKey, TReq request, RequestOptions options, CancellationToken cancellationToken)
    {
        ObjectDisposedException.ThrowIf(_disposed.IsCancellationRequested, this);
        var loss = ConnectedLoss();
        var started = Stopwatch.GetTimestamp();
        var messageId = options.MessageId ?? Wire.NewMessageId();
        var timeout = TimeoutOf(_policy, options.Timeout);
        var replyTo = await ReplyAddressAsync(cancellationToken).ConfigureAwait(false);
        // RR-8.4: correlation_id = message_id, so a responder that echoes correlation_id answers this call.
        var correlationId = _policy.RequestCorrelationId == RequestCorrelationId.None ? null : messageId;
        var properties = RequestProperties(_policy, messageId, correlationId, replyTo, options.Type, options.Headers);
        var body = JsonCodec.Encode(request);

        // Registered before publishing: a fast responder can answer before the confirm arrives.
        var waiter = _calls.Add(messageId);
        _sentRequests?.Add(messageId);

        try
        {
            var publisher = await PublisherAsync(cancellationToken).ConfigureAwait(false);
            await SendAsync(publisher, exchange, routingKey, properties, body, _policy.HonourReturns, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception) when (ClosedWhilePending())
        {
            _calls.Remove(messageId);
            throw Closed();
        }
        catch (Exception e) when (e is not AcemqException && LostUnder(loss))
        {
            // Not confirmed when the connection went: never reported as sent (RR-20.1).
            _calls.Remove(messageId);
            throw Lost();
        }
        catch
        {
            _calls.Remove(messageId);
            throw;
        }

        var reply = await WaitAsync(waiter, messageId, DeadlineOf(_policy, timeout) - Stopwatch.GetElapsedTime(started), loss, cancellationToken)
            .ConfigureAwait(false);
        if (reply is null)
        {
            if (_policy.CountTimeouts)
            {
                Interlocked.Increment(ref _timedOut);
            }

            if (_policy.TimeoutOutcome == TimeoutOutcome.NullReply)
            {
                // Breaks RR-9.1: the caller cannot tell "no answer" from an answer of null.
                return JsonCodec.Decode<TRes>("null"u8);
            }

            throw new RequestTimedOutException(messageId, timeout) { RequestId = messageId };
        }

        if (_policy.UnknownReplyHeaders == UnknownReplyHeaders.Fail && reply.UnknownHeader is { } unknown)
        {
            // Breaks RR-5.3: a reader must ignore the headers it does not know.
            throw new ReplyDecodeException($"the reply carries an unexpected header '{unknown}'", new FormatException(unknown))
            {
                RequestId = messageId,
            };
        }

        // The header is checked before the body: a failure reply's body is empty.
        if (reply.Error is not null && _policy.ReadErrorHeader)
        {
            throw new ResponderFailedException(reply.Error) { RequestId = messageId };
        }

        try
        {
            return JsonCodec.Decode<TRes>(reply.Body);
        }
        catch (ReplyDecodeException e)
        {
            throw new ReplyDecodeException(e.Message, e.InnerException!) { RequestId = messageId };
        }
    }

    /// <summary>A call's timeout: the one given, else the policy's default, 30 s (RR-9.3).</summary>
    internal static TimeSpan TimeoutOf(RequesterPolicy policy, TimeSpan? given) => given ?? TimeSpan.FromMilliseconds(policy.DefaultTimeoutMs);

    /// <summary>How long after its start a request not answered gives up: its timeout (RR-9.6), unless the policy waits half as long again.</summary>
    internal static TimeSpan DeadlineOf(RequesterPolicy policy, TimeSpan timeout) =>
        policy.RequestDeadline == RequestDeadline.Late ? timeout * 1.5 : timeout;

    /// <summary>SG-1.2: a gather's copies carry the requestMessageId as correlation_id unless given one.</summary>
    internal static string? GatherCorrelationId(RequesterPolicy policy, string? given, string requestMessageId) =>
        given ?? (policy.GatherDefaultCorrelation == GatherDefaultCorrelation.RequestMessageId ? requestMessageId : null);

    /// <summary>Whether a gather that ended at its timeout is counted in TimedOut: never (RR-9.4), unless the policy says so.</summary>
    internal static bool CountsGatherTimeout(RequesterPolicy policy, bool endedAtTimeout) => endedAtTimeout && policy.CountGatherTimeouts;

    /// <summary>What ends a pending call early besides its caller's token: disposing, unless the policy lets calls wait.</summary>
    private CancellationToken ClosingToken => _policy.PendingAtClose == PendingAtClose.EndClosed ? _disposed.Token : CancellationToken.None;

    /// <summary>Whether a call failing now failed because this requester was disposed under it (RR-9.5).</summary>
    private bool ClosedWhilePending() => _disposed.IsCancellationRequested && _policy.PendingAtClose == PendingAtClose.EndClosed;

    private ObjectDisposedException Closed() => new(nameof(Requester), "the requester was closed while the call was pending");

    /// <summary>What ends a pending call when its connection is lost: the loss, unless the policy lets calls wait out their timeout.</summary>
    private CancellationToken LostToken(CancellationToken loss) => _policy.OnConnectionLost == OnConnectionLost.EndLost ? loss : CancellationToken.None;

    /// <summary>Whether a call failing now failed because its connection was lost under it (RR-20.1).</summary>
    private bool EndedByLoss(CancellationToken loss) => loss.IsCancellationRequested && _policy.OnConnectionLost == OnConnectionLost.EndLost;

    /// <summary>
    /// Whether the connection a call was made on is gone: its loss seen, or not yet (a publish
    /// can fail on the dead connection before its shutdown handler has run).
    /// </summary>
    private bool LostUnder(CancellationToken loss) => loss.IsCancellationRequested || !_connection.IsOpen;

    private ConnectionLostException Lost() =>
        new(_connection.IsOpen || _connection.CloseReason is not { } reason ? _lostReason : Mq.Describe(reason));

    /// <summary>
    /// The loss token of the connection a new call is made on; a call made while the connection
    /// is down (recovering, or down for good under a policy that does not recover) ends at once.
    /// </summary>
    private CancellationToken ConnectedLoss()
    {
        var loss = Volatile.Read(ref _loss).Token;
        if (_down || !_connection.IsOpen || loss.IsCancellationRequested)
        {
            throw Lost();
        }

        return loss;
    }

    /// <summary>The reply, or null when the timeout elapsed first (the call is then no longer waiting).</summary>
    private async Task<Reply?> WaitAsync(
        TaskCompletionSource<Reply> waiter, string messageId, TimeSpan remaining, CancellationToken loss, CancellationToken cancellationToken)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, ClosingToken, LostToken(loss));
        var expired = Task.Delay(remaining > TimeSpan.Zero ? remaining : TimeSpan.Zero, stop.Token);
        var first = await Task.WhenAny(waiter.Task, expired).ConfigureAwait(false);
        await stop.CancelAsync().ConfigureAwait(false);
        if (first != waiter.Task && _calls.Remove(messageId))
        {
            cancellationToken.ThrowIfCancellationRequested();
            if (ClosedWhilePending())
            {
                throw Closed();
            }

            if (EndedByLoss(loss))
            {
                // RR-20.1: its reply queue went with the connection; not a timeout, not counted.
                throw Lost();
            }

            return null;
        }

        // Either the reply won, or it was taken in the instant the timeout fired: it is answered.
        return await waiter.Task.ConfigureAwait(false);
    }

    /// <summary>
    /// sendRequestMulti: publishes <see cref="GatherOptions.ExpectedReplyCount"/> copies (one
    /// when no count is given) to the endpoint queue, so that as many competing consumers
    /// each get one, and gathers their replies.
    /// </summary>
    /// <exception cref="RequestTimeoutException">A count was given and not reached in time; the replies that came are attached.</exception>
    public Task<IReadOnlyList<TRes>> SendRequestMultiAsync<TReq, TRes>(
        string? type, TReq message, GatherOptions options, CancellationToken cancellationToken = default)
    {
        if (string.IsNullOrEmpty(options.Endpoint))
        {
            throw new ArgumentException("sendRequestMulti needs an endpoint queue", nameof(options));
        }

        // One copy per expected reply, so that as many competing consumers each get one (SG-2).
        var copies = _policy.MultiCopies == MultiCopies.One ? 1 : options.ExpectedReplyCount ?? _policy.MultiCopiesWithoutCount;
        if (options.ExpectedReplyCount is null && _policy.GatherMissingCount == GatherMissingCount.Copies)
        {
            // Breaks SG-7.1: the copies published taken as the count, so the gather resolves
            // once each was answered instead of spending its budget.
            options = options with { ExpectedReplyCount = Math.Max(copies, 1) };
        }

        return GatherAsync<TReq, TRes>(type, message, "", options.Endpoint, copies, options, onReply: null, cancellationToken);
    }

    /// <summary>
    /// publishRequest: publishes one request to a fanout exchange (every bound queue gets a
    /// copy) and calls <paramref name="onReply"/> once per reply, in arrival order.
    /// </summary>
    /// <exception cref="RequestTimeoutException">A count was given and not reached in time; the replies that came are attached.</exception>
    public Task<IReadOnlyList<TRes>> PublishRequestAsync<TReq, TRes>(
        string? type, TReq message, Action<TRes>? onReply, GatherOptions options, CancellationToken cancellationToken = default)
    {
        if (options.Endpoint is not null)
        {
            throw new ArgumentException("publishRequest broadcasts to an exchange; it never takes an endpoint", nameof(options));
        }

        var exchange = options.Exchange ?? type
            ?? throw new ArgumentException("publishRequest needs an exchange, or a type to name it", nameof(options));
        // One message: the exchange gives every bound queue its copy (SG-2.2).
        return GatherAsync(type, message, exchange, "", _policy.PublishCopies, options, onReply, cancellationToken);
    }

    private Task<IReadOnlyList<TRes>> GatherAsync<TReq, TRes>(
        string? type, TReq message, string exchange, string routingKey, int copies, GatherOptions options,
        Action<TRes>? onReply, CancellationToken cancellationToken) =>
        Tracked(() => GatherCallAsync(type, message, exchange, routingKey, copies, options, onReply, cancellationToken));

    private async Task<IReadOnlyList<TRes>> GatherCallAsync<TReq, TRes>(
        string? type, TReq message, string exchange, string routingKey, int copies, GatherOptions options,
        Action<TRes>? onReply, CancellationToken cancellationToken)
    {
        ObjectDisposedException.ThrowIf(_disposed.IsCancellationRequested, this);
        if (options.ExpectedReplyCount is <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "expectedReplyCount must be positive");
        }

        var loss = ConnectedLoss();

        var started = Stopwatch.GetTimestamp();
        var requestMessageId = options.RequestMessageId ?? Wire.NewMessageId();
        var correlationId = GatherCorrelationId(_policy, options.CorrelationId, requestMessageId);
        var timeout = TimeoutOf(_policy, options.Timeout);
        var body = JsonCodec.Encode(message);
        var gather = new PendingGather<TRes>(requestMessageId, options.ExpectedReplyCount, onReply, _policy);
        // Armed before it can receive a reply: the timeout runs from the call (SG-9.1).
        gather.Arm(timeout, started);
        if (!_gathers.TryAdd(requestMessageId, gather))
        {
            throw new ArgumentException($"a gather with requestMessageId {requestMessageId} is already pending", nameof(options));
        }

        try
        {
            var publisher = await PublisherAsync(cancellationToken).ConfigureAwait(false);
            var replyTo = await ReplyAddressAsync(cancellationToken).ConfigureAwait(false);
            var properties = RequestProperties(_policy, requestMessageId, correlationId, replyTo, type, headers: null);
            for (var copy = 0; copy < copies; copy++)
            {
                if (copy > 0 && _policy.GatherCopyIds == GatherCopyIds.Distinct)
                {
                    // Breaks SG-1: only the first copy's replies find the gather.
                    properties.MessageId = Wire.NewMessageId();
                }

                // A return refuses the whole gather at once (RR-13.3): no copy that was returned can be answered.
                await SendAsync(publisher, exchange, routingKey, properties, body, _policy.HonourGatherReturns, cancellationToken)
                    .ConfigureAwait(false);
            }

            using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, ClosingToken, LostToken(loss));
            // The gather holds its deadline and ends itself when a reply comes past it; the
            // timer only wakes this call. Woken before the deadline (a timer a little early,
            // or a deadline a reply moved), it waits again.
            while (!gather.Ended.IsCompleted)
            {
                var remaining = Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), gather.Deadline);
                var expired = Task.Delay(TimeSpan.FromMilliseconds(Math.Clamp(remaining.TotalMilliseconds, 0, int.MaxValue - 1)), stop.Token);
                if (await Task.WhenAny(gather.Ended, expired).ConfigureAwait(false) == gather.Ended)
                {
                    break;
                }

                cancellationToken.ThrowIfCancellationRequested();
                if (ClosedWhilePending())
                {
                    throw Closed();
                }

                if (EndedByLoss(loss))
                {
                    throw Lost();
                }

                gather.ExpireAt(Stopwatch.GetTimestamp());
            }

            // A gather is no request: ending at its timeout is how it works, not a lost
            // answer, so TimedOut (requests only, RR-9.4) is left alone unless the policy counts it.
            if (CountsGatherTimeout(_policy, gather.EndedAtDeadline))
            {
                Interlocked.Increment(ref _timedOut);
            }

            await stop.CancelAsync().ConfigureAwait(false);
            var end = await gather.Ended.ConfigureAwait(false);
            var replies = gather.Replies;
            if (end == GatherEnd.Shortfall && _policy.GatherShortfall == GatherShortfall.Reject)
            {
                throw new RequestTimeoutException(requestMessageId, gather.ExpectedReplyCount!.Value, replies.Cast<object?>().ToArray())
                {
                    RequestId = requestMessageId,
                };
            }

            return replies;
        }
        catch (Exception e) when (e is not ObjectDisposedException && ClosedWhilePending())
        {
            throw Closed();
        }
        catch (Exception e) when (e is not AcemqException && e is not OperationCanceledException && LostUnder(loss))
        {
            // A copy not confirmed when the connection went (RR-20.1).
            throw Lost();
        }
        finally
        {
            // Ends it for late replies too: they are Unmatched from here on.
            gather.TimeoutElapsed();
            _gathers.TryRemove(requestMessageId, out _);
        }
    }

    /// <summary>The properties of a request or gather copy, as <paramref name="policy"/> writes them.</summary>
    internal static BasicProperties RequestProperties(
        RequesterPolicy policy, string messageId, string? correlationId, string replyTo, string? type, IReadOnlyDictionary<string, object?>? headers)
    {
        var table = new Dictionary<string, object?>(StringComparer.Ordinal);
        if (headers is not null)
        {
            foreach (var (name, value) in headers)
            {
                table[name] = value;
            }
        }

        if (policy.WriteHeaderAddress)
        {
            // A string is written as a long string (S); BinaryTableValue is a byte array (x).
            table[ReplyToHeader] = policy.HeaderAddressAsBytes
                ? new BinaryTableValue(Encoding.UTF8.GetBytes(replyTo))
                : replyTo;
        }

        if (policy.NarrowIntHeader)
        {
            // Breaks WF-2.1: RabbitMQ.Client writes a byte as the unsigned octet B, a type
            // some clients (Java's amqp-client) cannot read.
            table[Wire.HopsHeader] = (byte)1;
        }

        if (policy.LongShortString == LongShortString.Truncate)
        {
            // Breaks RR-18: cut where the rule says refuse.
            messageId = Wire.TruncateShortString(messageId)!;
            correlationId = Wire.TruncateShortString(correlationId);
            replyTo = Wire.TruncateShortString(replyTo)!;
            type = Wire.TruncateShortString(type);
        }

        if (type is not null && policy.TypeCarrier == TypeCarrier.Header)
        {
            // Breaks SG-2.3: a reader of the type property finds none.
            table[Wire.TypeHeader] = type;
            type = null;
        }

        return new BasicProperties
        {
            MessageId = messageId,
            CorrelationId = correlationId,
            ReplyTo = policy.WriteNativeAddress ? NativeReplyTo(policy, replyTo) : null,
            Type = type,
            ContentType = Wire.JsonContentType,
            DeliveryMode = DeliveryModes.Persistent,
            Headers = table.Count > 0 ? table : null,
        };
    }

    /// <summary>The native reply_to: the same queue the header names (RR-1.3), unless the policy writes a stale or empty one.</summary>
    private static string NativeReplyTo(RequesterPolicy policy, string replyQueue) => policy.NativeAddress switch
    {
        NativeAddress.Stale => replyQueue + ".stale",
        // Breaks RR-3.3: RabbitMQ.Client writes a non-null empty string as a present, zero-length reply_to.
        NativeAddress.Empty => "",
        _ => replyQueue,
    };

    private async Task SendAsync(
        IChannel publisher, string exchange, string routingKey, BasicProperties properties, byte[] body, bool honourReturns,
        CancellationToken ct)
    {
        // Disposing ends a publish still waiting for its confirm, so a close never waits on the broker.
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(ct, ClosingToken);
        try
        {
            await Publishing.PublishAsync(publisher, exchange, routingKey, properties, body, stop.Token).ConfigureAwait(false);
        }
        catch (UnroutableException) when (!honourReturns)
        {
            // Breaks RR-13: the ack is taken for delivery and the basic.return before it
            // ignored, so the caller waits out its timeout.
        }
    }

    private async Task<string> ReplyAddressAsync(CancellationToken ct)
    {
        if (!_policy.ReplyQueuePerRequest)
        {
            return ReplyQueue;
        }

        // Breaks RR-6: a new queue on the broker for every request and every gather, consumed
        // (so a late reply still arrives and is counted) until the requester is disposed.
        var queue = await DeclareReplyQueueAsync(_replies, _policy, ct).ConfigureAwait(false);
        await ConsumeAsync(queue, ct).ConfigureAwait(false);
        return queue;
    }

    /// <summary>A confirm-mode channel for publishing, reopened if the broker closed it (say, a publish to a missing exchange).</summary>
    private async Task<IChannel> PublisherAsync(CancellationToken ct)
    {
        if (_publisher is { IsOpen: true } open)
        {
            return open;
        }

        await _publisherGate.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            if (_publisher is { IsOpen: true } reopened)
            {
                return reopened;
            }

            if (_publisher is not null)
            {
                await _publisher.DisposeAsync().ConfigureAwait(false);
            }

            _publisher = await _connection.CreateChannelAsync(Publishing.Confirmed, ct).ConfigureAwait(false);
            return _publisher;
        }
        finally
        {
            _publisherGate.Release();
        }
    }

    private Task OnReplyAsync(object sender, BasicDeliverEventArgs delivery)
    {
        var properties = delivery.BasicProperties;
        var headers = properties.Headers;
        var reply = new Reply(delivery.Body.ToArray(), Wire.HeaderText(headers, ErrorHeader), properties.CorrelationId)
        {
            UnknownHeader = headers?.Keys.FirstOrDefault(Wire.IsUnknownReplyHeader),
        };

        var gatherKey = _policy.GatherDemuxBy == GatherDemux.CorrelationId
            ? properties.CorrelationId
            : Wire.HeaderText(headers, Wire.ResponseMessageIdHeader);
        if (gatherKey is not null && _gathers.TryGetValue(gatherKey, out var gather))
        {
            // Whether the gather is still open is decided where the reply is added: one that
            // ended (count, deadline) but is not out of the table yet takes nothing (SG-8.1).
            var offered = reply.Error is null
                ? gather.Offer(reply.Body)
                : gather.OfferFailure(keep: _policy.GatherFailureReply == GatherFailureReply.Keep);
            switch (offered)
            {
                case Offered.Kept:
                    return Task.CompletedTask;
                case Offered.FailureDropped:
                    // SG-10: a failure is no answer; the gather waits on for real ones, and the
                    // failure is Unmatched by its own rule, apart from SG-8's stray replies.
                    if (CountsUnmatched(_policy, gatherReply: true, droppedFailure: true))
                    {
                        Interlocked.Increment(ref _unmatched);
                    }

                    _options.Observer?.Unmatched(properties.CorrelationId, Wire.HeaderText(headers, Wire.ResponseMessageIdHeader));
                    return Task.CompletedTask;
            }
        }
        else if (_policy.UndecodableReply == UndecodableReply.Drop && reply.Error is null && !JsonCodec.IsJson(reply.Body))
        {
            // Breaks RR-19: the caller is left to time out instead of ending with a decode
            // error; the reply is counted Unmatched below.
        }
        else if (TakeCaller(properties.CorrelationId) is { } caller)
        {
            caller.TrySetResult(reply);
            return Task.CompletedTask;
        }
        else if (_policy.GatherStrayReply == GatherStrayReply.OldestGather && gatherKey is not null && reply.Error is null
            && _gathers.Values.MinBy(g => g.Sequence) is { } oldest && oldest.Offer(reply.Body) == Offered.Kept)
        {
            // Breaks SG-8: a reply for no pending gather joins the oldest one instead of
            // being counted Unmatched.
            return Task.CompletedTask;
        }

        if (CountsUnmatched(properties.CorrelationId, gatherKey))
        {
            Interlocked.Increment(ref _unmatched);
        }

        _options.Observer?.Unmatched(properties.CorrelationId, Wire.HeaderText(headers, Wire.ResponseMessageIdHeader));
        return Task.CompletedTask;
    }

    /// <summary>
    /// Whether an unmatched reply is counted (RR-8.2, SG-8.1: always). A policy that counts only
    /// one kind tells them apart by memory: a reply correlated to a request this requester sent
    /// is a request's, else one naming a responseMessageId is a gather's.
    /// </summary>
    private bool CountsUnmatched(string? correlationId, string? gatherKey)
    {
        if (_policy is { CountUnmatched: true, CountGatherUnmatched: true })
        {
            return true;
        }

        var gatherReply = gatherKey is not null && !(correlationId is not null && _sentRequests!.Contains(correlationId));
        return CountsUnmatched(_policy, gatherReply, droppedFailure: false);
    }

    /// <summary>
    /// Whether an unmatched reply is counted, by its kind: a failure a pending gather dropped
    /// (SG-10.2), a gather's reply for no pending gather (SG-8.1), a request's (RR-8.2). Each its own knob.
    /// </summary>
    internal static bool CountsUnmatched(RequesterPolicy policy, bool gatherReply, bool droppedFailure) =>
        droppedFailure ? policy.CountGatherFailures : gatherReply ? policy.CountGatherUnmatched : policy.CountUnmatched;

    /// <summary>
    /// The caller a reply is for (RR-8), or whoever waited longest under an oldest-waiter policy
    /// (for every reply, or only for one that correlates with no waiting call).
    /// </summary>
    private TaskCompletionSource<Reply>? TakeCaller(string? correlationId) =>
        _policy.MatchRepliesBy == ReplyMatch.OldestWaiter
            ? _calls.TakeOldest()
            : _calls.TakeMatching(correlationId) ?? (_policy.UnmatchedReply == UnmatchedReply.OldestWaiter ? _calls.TakeOldest() : null);

    /// <summary>
    /// The broker or the network, not this code, closed what the requester needs: the calls
    /// pending on it end (RR-20.1), and the observer is told once per loss.
    /// </summary>
    private async Task OnShutdownAsync(object sender, ShutdownEventArgs reason)
    {
        if (reason.Initiator == ShutdownInitiator.Application || _disposed.IsCancellationRequested)
        {
            return;
        }

        _lostReason = Mq.Describe(reason);
        if (!_policy.RecoverConnection)
        {
            _down = true;
        }

        var lost = Interlocked.Exchange(ref _loss, new CancellationTokenSource());
        await lost.CancelAsync().ConfigureAwait(false);
        if (Interlocked.Exchange(ref _lost, 1) == 0)
        {
            _options.Observer?.ConnectionLost(_lostReason);
        }
    }

    /// <summary>Recovery declared the server-named reply queue again, under a new name (RR-20.3).</summary>
    private Task OnQueueRenamedAsync(object sender, QueueNameChangedAfterRecoveryEventArgs renamed)
    {
        if (renamed.NameBefore == _replyQueue)
        {
            _replyQueue = renamed.NameAfter;
        }

        return Task.CompletedTask;
    }

    /// <summary>The connection is back and the new reply queue consumed (RR-20.3): the next loss is told again.</summary>
    private Task OnRecoveredAsync(object sender, AsyncEventArgs args)
    {
        if (!_disposed.IsCancellationRequested && _policy.RecoverConnection)
        {
            Interlocked.Exchange(ref _lost, 0);
            _options.Observer?.Recovered();
        }

        return Task.CompletedTask;
    }

    public async ValueTask DisposeAsync()
    {
        if (_disposed.IsCancellationRequested)
        {
            return;
        }

        await _disposed.CancelAsync().ConfigureAwait(false);
        _connection.ConnectionShutdownAsync -= OnShutdownAsync;
        _connection.QueueNameChangedAfterRecoveryAsync -= OnQueueRenamedAsync;
        _connection.RecoverySucceededAsync -= OnRecoveredAsync;
        if (_policy.PendingAtClose == PendingAtClose.EndClosed)
        {
            // RR-9.5: every pending call ends now with the closed error, and disposing returns
            // only once they all have, so nothing of this requester is left running.
            _calls.FailAll(Closed());
            await _inFlight.WhenIdleAsync().ConfigureAwait(false);
        }

        // Closing the consuming channel cancels its consumer; the auto-delete reply queue goes with it.
        foreach (var channel in new[] { _replies, _publisher })
        {
            if (channel is null)
            {
                continue;
            }

            try
            {
                await channel.CloseAsync().ConfigureAwait(false);
            }
            catch (Exception)
            {
                // Already closed: the broker has released it.
            }

            await channel.DisposeAsync().ConfigureAwait(false);
        }

    }

    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();
}
