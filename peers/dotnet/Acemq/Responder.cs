using RabbitMQ.Client;
using RabbitMQ.Client.Events;
using RabbitMQ.Client.Exceptions;

namespace Acemq;

/// <summary>A responder's handler in two steps: the body's decoder, then the handler proper.</summary>
internal sealed record RequestHandler(
    Func<byte[], object?> Decode, Func<object?, RequestContext, CancellationToken, Task<byte[]>> Handle);

/// <summary>
/// Consumes a request queue and answers each request on the queue it names. A handler
/// failure goes back to the caller and the request to <c>{queue}.dlq</c>; a reply that
/// cannot be delivered goes through the retry policy.
/// </summary>
public sealed class Responder : IAsyncDisposable, IDisposable
{
    public const string DeadLetterReasonHeader = Wire.DeadLetterReasonHeader;

    private static readonly Dictionary<string, object?> QuorumQueue = new() { ["x-queue-type"] = "quorum" };
    private static readonly Dictionary<string, object?> ClassicQueue = new() { ["x-queue-type"] = "classic" };

    private readonly IChannel _channel;
    private readonly RequestHandler _handler;
    private readonly int _maxAttempts;
    private readonly ResponderOptions _options;
    private readonly ResponderPolicy _policy;
    /// <summary>How long a stop waits for the requests already answered to be settled.</summary>
    internal static readonly TimeSpan SettleBound = TimeSpan.FromSeconds(5);

    // Cancelled when a stop begins: handlers under way are abandoned (told through their
    // token; their requests go back to the queue) and no new request is taken.
    private readonly CancellationTokenSource _stopping = new();

    // Cancelled when a stop has waited for what it settles, just before the channel closes:
    // it ends the publishes (replies, dead-letters) still waiting for their confirms.
    private readonly CancellationTokenSource _closing = new();

    // Deliveries being decided and settled: all of a delivery's handling but its handler.
    private readonly CallsInFlight _settling = new();
    private int _stopped;

    // Cancelled when the broker or the network closes the channel, then replaced for the
    // recovered one: a handler under way is told through its token, since its reply can no
    // longer leave nor its request be settled (the broker gives it back, RR-20.4), and it must
    // not hold the client's dispatcher (and with it the connection's shutdown, which every
    // other requester and responder on the connection waits to hear of).
    private CancellationTokenSource _lost = new();
    private readonly IConnection _connection;
    private string? _consumerTag;

    // Fields, so they exist at zero before the consumer is registered and a backlog is counted.
    private long _answered;
    private long _unanswerable;

    // Only for a policy that creates counters after the first delivery: 1 once they "exist".
    private int _lazyCounterMade;

    private Responder(
        IConnection connection, IChannel channel, string queue, RequestHandler handler, ResponderOptions options)
    {
        _connection = connection;
        _channel = channel;
        Queue = queue;
        DeadLetterQueue = queue + ".dlq";
        _handler = handler;
        _options = options;
        _policy = options.Policy;
        _maxAttempts = MaxAttemptsOf(options);
        _channel.ChannelShutdownAsync += OnShutdownAsync;
        _connection.RecoverySucceededAsync += OnRecoveredAsync;
    }

    public string Queue { get; }

    /// <summary>
    /// The header prefixes kept from the handler: the engine's x-acemq- only (RR-5.2). The
    /// spec's own acemq-* headers (acemq-reply-to among them) are the request's and reach it.
    /// </summary>
    internal static string[] HiddenPrefixes(ResponderPolicy policy) =>
    [
        .. policy.StripEngineHeaders ? [policy.StripPrefix] : Array.Empty<string>(),
        // Breaks RR-5.2: the handler no longer sees where its reply goes, nor any acemq- header.
        .. policy.PassSpecHeaders ? Array.Empty<string>() : [Wire.SpecPrefix],
    ];

    /// <summary>The attempts of the retry policy: the options', else the policy's default, 3 (RR-14.4).</summary>
    internal static int MaxAttemptsOf(ResponderOptions options) => options.MaxAttempts ?? options.Policy.DefaultMaxAttempts;

    public string DeadLetterQueue { get; }

    /// <summary>Requests answered, counted before the reply left and taken back if it did not.</summary>
    public long Answered => Interlocked.Read(ref _answered);

    /// <summary>Requests that named nowhere to reply.</summary>
    public long Unanswerable => Interlocked.Read(ref _unanswerable);

    internal static async Task<Responder> StartAsync(
        IConnection connection, string queue, RequestHandler handler, ResponderOptions options, Mq.Unrecovered unrecovered,
        CancellationToken ct)
    {
        if (options.MaxAttempts is < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "MaxAttempts must be at least 1");
        }

        if (options.Prefetch < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "Prefetch must be at least 1");
        }

        Wire.EnsureShortString("queue", queue + ".dlq");
        // As many deliveries are handled at once as the prefetch lets in: each waits for its own
        // reply's confirm, and the client's confirm tracking ties every return to its publish.
        var requestQueueArguments = RequestQueueArguments(
            options.Policy.RequestQueue,
            options.Policy.RequestQueue == RequestQueue.Quorum || await QueueExistsAsync(connection, queue, ct).ConfigureAwait(false));
        var channel = await connection.CreateChannelAsync(Publishing.ConfirmedConsuming(options.Prefetch), ct).ConfigureAwait(false);
        try
        {
            var responder = new Responder(connection, channel, queue, handler, options);
            await responder.SubscribeAsync(requestQueueArguments, ct).ConfigureAwait(false);
            if (!options.Policy.RecoverConnection)
            {
                // Breaks RR-20.2: topology recovery declares the queues but never consumes again.
                unrecovered.Add(responder._consumerTag!);
            }

            return responder;
        }
        catch
        {
            await channel.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// The request queue's declare arguments; null when it is not declared at all (an existing
    /// queue taken as it is). Quorum always (RR-17.1): its x-delivery-count numbers the attempts.
    /// </summary>
    internal static Dictionary<string, object?>? RequestQueueArguments(RequestQueue policy, bool exists) => policy switch
    {
        RequestQueue.ClassicIfMissing when exists => null,
        // No x-queue-type: the server's default, classic.
        RequestQueue.ClassicIfMissing => [],
        _ => QuorumQueue,
    };

    /// <summary>
    /// Whether the queue exists, by a passive declare on a channel of its own: the 404 that
    /// answers a missing queue closes the channel it was asked on.
    /// </summary>
    private static async Task<bool> QueueExistsAsync(IConnection connection, string queue, CancellationToken ct)
    {
        await using var probe = await connection.CreateChannelAsync(cancellationToken: ct).ConfigureAwait(false);
        try
        {
            await probe.QueueDeclarePassiveAsync(queue, ct).ConfigureAwait(false);
            return true;
        }
        catch (OperationInterruptedException e) when (e.ShutdownReason?.ReplyCode == Constants.NotFound)
        {
            return false;
        }
    }

    private async Task SubscribeAsync(Dictionary<string, object?>? requestQueueArguments, CancellationToken ct)
    {
        var dlqArguments = _policy.DlqQueueType == DlqQueueType.Classic ? ClassicQueue : QuorumQueue;
        var declares = requestQueueArguments is null
            ? new[] { (DeadLetterQueue, dlqArguments) }
            : new[] { (Queue, requestQueueArguments), (DeadLetterQueue, dlqArguments) };
        foreach (var (name, arguments) in declares)
        {
            await _channel.QueueDeclareAsync(name, durable: true, exclusive: false, autoDelete: false, arguments, cancellationToken: ct)
                .ConfigureAwait(false);
        }

        foreach (var binding in _options.Bindings)
        {
            await _channel.QueueBindAsync(Queue, binding.Exchange, binding.RoutingKey, cancellationToken: ct).ConfigureAwait(false);
        }

        await _channel.BasicQosAsync(0, _options.Prefetch, global: false, ct).ConfigureAwait(false);
        var consumer = new AsyncEventingBasicConsumer(_channel);
        consumer.ReceivedAsync += OnRequestAsync;
        _consumerTag = await _channel.BasicConsumeAsync(Queue, autoAck: false, consumer, ct).ConfigureAwait(false);
    }

    private async Task OnRequestAsync(object sender, BasicDeliverEventArgs delivered)
    {
        var delivery = new Delivery(_channel, delivered.DeliveryTag, Volatile.Read(ref _lost).Token);
        var properties = delivered.BasicProperties;
        var body = delivered.Body.ToArray();
        _settling.Enter();
        try
        {
            if (_stopping.IsCancellationRequested)
            {
                // Delivered before the consumer was cancelled: left for another consumer.
                return;
            }

            if (_policy.AckTiming == AckTiming.OnDelivery)
            {
                // Breaks RR-20.4: a request held when the connection is lost is gone with it.
                await delivery.AckAsync().ConfigureAwait(false);
            }

            await HandleAsync(delivery, properties, body).ConfigureAwait(false);
        }
        catch (Exception e) when (_stopping.IsCancellationRequested || !_channel.IsOpen || delivery.Lost.IsCancellationRequested)
        {
            // Unacknowledged, so the broker gives the request to another consumer.
            Report($"request {properties.MessageId} left unacknowledged while stopping: {e.Message}");
        }
        catch (Exception e)
        {
            Report($"request {properties.MessageId}: {e}");
            await SettleAsync(delivery.RequeueAsync).ConfigureAwait(false);
        }
        finally
        {
            _settling.Exit();
        }
    }

    private async Task HandleAsync(Delivery delivery, IReadOnlyBasicProperties properties, byte[] body)
    {
        var headers = properties.Headers;
        var attempt = Wire.Attempt(headers, _policy.AttemptBase);
        var address = Wire.ResolveReplyAddress(headers, properties.ReplyTo, _policy.ReadOrder, _policy.BytesAddress == BytesAddress.Accept);
        if (address is not { } replyTo)
        {
            await UnanswerableAsync(delivery, properties, body).ConfigureAwait(false);
            return;
        }

        var shown = Wire.StripEngineHeaders(headers, HiddenPrefixes(_policy));
        var request = new RequestContext(
            Queue, properties.MessageId, properties.CorrelationId, replyTo.Address, replyTo.Source, shown, attempt);

        // Failures found before the handler runs (it is not told of the request): answered
        // like a handler failure, reply with acemq-error then the RR-11 dead-letter.
        if (_policy.HeaderTypes == HeaderTypes.Strict && Wire.FirstStrictlyRefusedHeader(headers) is { } malformed)
        {
            // Breaks WF-1: a header type a strict reader did not expect fails the request.
            await ReplyAsync(delivery, request, properties, body, [], Wire.FailureText(new MalformedHeader(malformed))).ConfigureAwait(false);
            return;
        }

        object? decoded;
        try
        {
            decoded = _handler.Decode(body);
        }
        catch (Exception e)
        {
            if (_policy.MalformedRequest == MalformedRequestHandling.Drop)
            {
                // Breaks RR-19.2: the caller waits out its timeout and nothing is kept of the request.
                await delivery.AckAsync().ConfigureAwait(false);
                return;
            }

            var failure = Wire.FailureText(new MalformedRequest(e.Message));
            if (_policy.HandlerFailure == HandlerFailure.Retry)
            {
                // A release whose handler decoded the body: the failure took the retry path.
                await RetryOrDeadLetterAsync(delivery, properties, body, attempt, failure).ConfigureAwait(false);
                return;
            }

            // RR-19.2: retrying would decode the same bytes the same way. (ReplyOnly breaks it:
            // the failure reply is sent and the request acked, never dead-lettered.)
            await ReplyAsync(delivery, request, properties, body, [], failure,
                deadLetter: _policy.MalformedRequest != MalformedRequestHandling.ReplyOnly).ConfigureAwait(false);
            return;
        }

        Notify(o => o.Handling(request));
        byte[] reply;
        // A stop does not wait for a handler, only for what comes after it: counted again
        // (before looking at the stop, so a stop sees either the count or is seen here) once it has returned.
        _settling.Exit();
        using var work = CancellationTokenSource.CreateLinkedTokenSource(_stopping.Token, delivery.Lost);
        try
        {
            reply = await _handler.Handle(decoded, request, work.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (!work.IsCancellationRequested)
        {
            _settling.Enter();
            if (AbandonedByStop(request) || AbandonedByLoss(delivery, request))
            {
                return;
            }

            var failure = _policy.ErrorTypeName == ErrorTypeName.Qualified ? Wire.QualifiedFailureText(e) : Wire.FailureText(e);
            if (_policy.HandlerFailure == HandlerFailure.Retry)
            {
                // Nothing goes back: the retry policy has the request and the caller times out.
                await RetryOrDeadLetterAsync(delivery, properties, body, attempt, failure).ConfigureAwait(false);
                return;
            }

            await ReplyAsync(delivery, request, properties, body, [], failure).ConfigureAwait(false);
            return;
        }
        catch
        {
            _settling.Enter();
            throw;
        }

        _settling.Enter();
        if (AbandonedByStop(request) || AbandonedByLoss(delivery, request))
        {
            return;
        }

        await ReplyAsync(delivery, request, properties, body, reply, failure: null).ConfigureAwait(false);
    }

    /// <summary>
    /// Whether the connection that carried the request was lost while its handler ran: no reply,
    /// no ack; the broker gives the request back, to be answered as its next attempt (RR-20.4).
    /// </summary>
    private bool AbandonedByLoss(Delivery delivery, RequestContext request)
    {
        if (!delivery.Lost.IsCancellationRequested)
        {
            return false;
        }

        Report($"request {request.MessageId} abandoned: the connection was lost while its handler ran");
        return true;
    }

    /// <summary>Whether a stop began while the handler ran: its request is left unsettled, for the broker to requeue.</summary>
    private bool AbandonedByStop(RequestContext request)
    {
        if (!_stopping.IsCancellationRequested)
        {
            return false;
        }

        Report($"request {request.MessageId} left unacknowledged: the responder stopped while its handler ran");
        return true;
    }

    private async Task ReplyAsync(
        Delivery delivery, RequestContext request, IReadOnlyBasicProperties requestProperties, byte[] requestBody, byte[] reply, string? failure,
        bool deadLetter = true)
    {
        var counted = failure is null
            ? _policy.AnsweredTiming == AnsweredTiming.BeforePublish
            : _policy.CountFailuresAnswered;
        if (counted && _policy.CountersCreated == CountersCreated.AfterFirstDelivery
            && Interlocked.Exchange(ref _lazyCounterMade, 1) == 0)
        {
            // Breaks RR-16: a lazily created counter misses the delivery that created it,
            // which is the first request of a start-up backlog.
            counted = false;
        }

        // Before publishing: a caller holding its answer must find it counted.
        if (counted)
        {
            Interlocked.Increment(ref _answered);
        }

        try
        {
            await Publishing.PublishAsync(
                    _channel, "", request.ReplyTo, ReplyProperties(request, failure), ReplyBody(reply, failure), _closing.Token,
                    mandatory: !AtMostOnce(request))
                .ConfigureAwait(false);
        }
        catch (Exception e) when (delivery.Lost.IsCancellationRequested && !AtMostOnce(request))
        {
            // The connection went with the publish (RR-20.4): the request comes back and is answered then.
            if (counted && _policy.RollbackAnswered)
            {
                Interlocked.Decrement(ref _answered);
            }

            Report($"reply to {request.MessageId} lost with the connection: {e.Message}");
            return;
        }
        catch (Exception e) when (!_closing.IsCancellationRequested && AtMostOnce(request))
        {
            // RR-14.5: a direct reply-to reply is at most once: counted, acknowledged, never retried.
            Report($"direct reply-to reply to {request.ReplyTo} not confirmed: {e.Message}");
        }
        catch (Exception e) when (!_closing.IsCancellationRequested)
        {
            if (counted && _policy.RollbackAnswered)
            {
                Interlocked.Decrement(ref _answered);
            }

            if (failure is not null && _policy.FailureReplyDelivery == FailureReplyDelivery.Unchecked)
            {
                // Breaks RR-14.1: a failure reply is taken as delivered whatever the broker said,
                // so the request goes to {queue}.dlq with the failure reason and is never retried.
                Notify(o => o.Replied(request, failure));
                await DeadLetterAndAckAsync(delivery, requestProperties, requestBody, failure).ConfigureAwait(false);
                return;
            }

            Notify(o => o.ReplyFailed(request, e));
            if (_policy.UndeliverableReply == UndeliverableReply.Ack)
            {
                // Breaks RR-14: the request is accepted unanswered, neither retried nor dead-lettered.
                await delivery.AckAsync().ConfigureAwait(false);
                return;
            }

            if (_policy.LastAttempt == LastAttempt.Ack && Wire.Retry(request.Attempt, _maxAttempts) == RetryDecision.DeadLetter)
            {
                // Breaks RR-14.2: the last attempt accepts the request unanswered; nothing is kept of it.
                await delivery.AckAsync().ConfigureAwait(false);
                return;
            }

            await RetryOrDeadLetterAsync(delivery, requestProperties, requestBody, request.Attempt, Wire.UndeliverableReplyPrefix + e.Message)
                .ConfigureAwait(false);
            return;
        }

        Notify(o => o.Replied(request, failure));
        if (failure is null && _policy.AnsweredTiming == AnsweredTiming.AfterConfirm)
        {
            // Breaks RR-15.1: counted once the broker confirmed the reply, by when the caller
            // may already hold it. A reply that failed was never counted, so nothing to take back.
            Interlocked.Increment(ref _answered);
        }

        if (failure is null || !_policy.DeadLetterFailures || !deadLetter)
        {
            await delivery.AckAsync().ConfigureAwait(false);
            return;
        }

        if (_policy.RetryFailures)
        {
            // Breaks RR-11.2: the handler runs (and the caller hears of its failure) once per attempt.
            await RetryOrDeadLetterAsync(delivery, requestProperties, requestBody, request.Attempt, failure).ConfigureAwait(false);
            return;
        }

        // The caller has its answer: the request is dead-lettered once, never retried.
        await DeadLetterAndAckAsync(delivery, requestProperties, requestBody, failure).ConfigureAwait(false);
    }

    /// <summary>A reply's body: the handler's, or for a failure nothing (RR-10.1) unless the policy sends the text as JSON.</summary>
    private byte[] ReplyBody(byte[] reply, string? failure) =>
        failure is not null && _policy.FailureBody == FailureBody.Json
            ? JsonCodec.Encode(new Dictionary<string, string> { ["error"] = failure })
            : reply;

    /// <summary>
    /// Whether a reply goes to RabbitMQ's direct reply-to (amq.rabbitmq.reply-to.&lt;token&gt;) and is sent
    /// at most once (RR-14.5): 3.10 to 4.1 return every such reply, delivered or not, 4.2 none.
    /// </summary>
    private bool AtMostOnce(RequestContext request) =>
        Wire.IsDirectReplyTo(request.ReplyTo) && _policy.DirectReplyTo == DirectReplyTo.AtMostOnce;

    private BasicProperties ReplyProperties(RequestContext request, string? failure)
    {
        var headers = new Dictionary<string, object?>(StringComparer.Ordinal);

        // RR-4.2, SG-3.1: the request's id is its message_id, or its correlation_id when it has none.
        var requestId = Wire.RequestId(request.MessageId, request.CorrelationId);

        // Gatherers demultiplex by it (SG-3).
        if (requestId is not null && _policy.ResponseMessageId)
        {
            headers[Wire.ResponseMessageIdHeader] = requestId;
        }

        if (failure is not null)
        {
            headers[Wire.ErrorHeader] = failure;
        }

        return new BasicProperties
        {
            MessageId = Wire.NewMessageId(),

            // RR-4: the request's message_id; copying its correlation_id instead breaks the rule.
            // (the message_id alone breaks it too: a tutorial caller, who sends none, cannot match the reply).
            CorrelationId = _policy.ReplyCorrelationFrom switch
            {
                ReplyCorrelation.CorrelationId => request.CorrelationId,
                ReplyCorrelation.MessageId => request.MessageId,
                _ => requestId,
            },
            ContentType = _policy.ReplyContentType,
            Headers = headers,
        };
    }

    /// <summary>
    /// The retry policy: requeue (explicitly: clients disagree on the default) until the
    /// last attempt, then dead-letter. Attempts are counted by the quorum queue.
    /// </summary>
    private async Task RetryOrDeadLetterAsync(Delivery delivery, IReadOnlyBasicProperties properties, byte[] body, int attempt, string reason)
    {
        if (Wire.Retry(attempt, _maxAttempts) == RetryDecision.Requeue)
        {
            await delivery.RequeueAsync().ConfigureAwait(false);
            return;
        }

        await DeadLetterAndAckAsync(delivery, properties, body, reason).ConfigureAwait(false);
    }

    private async Task UnanswerableAsync(Delivery delivery, IReadOnlyBasicProperties properties, byte[] body)
    {
        // Redelivering would not make a reply address appear: count it and accept it.
        if (_policy.CountUnanswerable)
        {
            Interlocked.Increment(ref _unanswerable);
        }

        if (_policy.Unanswerable == UnanswerableRequest.DeadLetter)
        {
            if (!await DeadLetterAndAckAsync(delivery, properties, body, "Unanswerable: the request names no reply address").ConfigureAwait(false))
            {
                return;
            }
        }
        else
        {
            await delivery.AckAsync().ConfigureAwait(false);
        }

        Notify(o => o.Unanswerable(properties.MessageId));
    }

    /// <summary>
    /// Publishes the request to <c>{queue}.dlq</c> with the reason, then acknowledges it. If
    /// the dead-letter cannot be published, the request is requeued: nothing is acknowledged
    /// into nowhere.
    /// </summary>
    private async Task<bool> DeadLetterAndAckAsync(Delivery delivery, IReadOnlyBasicProperties properties, byte[] body, string reason)
    {
        var headers = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var (name, value) in properties.Headers ?? new Dictionary<string, object?>())
        {
            // The sender's client bookkeeping, not the message's: ours is added on publish.
            if (name != Constants.PublishSequenceNumberHeader)
            {
                headers[name] = value;
            }
        }

        headers[DeadLetterReasonHeader] = reason;
        var copy = new BasicProperties
        {
            MessageId = properties.MessageId,
            // Breaks RR-11.4 under IdAndHeaders: the copy is the request, to be answered later.
            CorrelationId = _policy.DeadLetterCopy == DeadLetterCopy.Full ? properties.CorrelationId : null,
            ReplyTo = _policy.DeadLetterCopy == DeadLetterCopy.Full ? properties.ReplyTo : null,
            Type = properties.Type,
            ContentType = properties.ContentType,
            DeliveryMode = DeliveryModes.Persistent,
            Headers = headers,
        };

        try
        {
            await Publishing.PublishAsync(_channel, "", DeadLetterQueue, copy, body, _closing.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (!_closing.IsCancellationRequested)
        {
            Report($"dead-lettering {properties.MessageId} to {DeadLetterQueue} failed, requeued: {e.Message}");
            await delivery.RequeueAsync().ConfigureAwait(false);
            return false;
        }

        await delivery.AckAsync().ConfigureAwait(false);
        Notify(o => o.DeadLettered(properties.MessageId, reason));
        return true;
    }

    /// <summary>Tells the observer when the broker or the network, not <see cref="DisposeAsync"/>, closed the channel.</summary>
    private async Task OnShutdownAsync(object sender, ShutdownEventArgs reason)
    {
        if (reason.Initiator != ShutdownInitiator.Application && !_stopping.IsCancellationRequested)
        {
            Notify(o => o.ConnectionLost(Mq.Describe(reason)));
            var lost = Interlocked.Exchange(ref _lost, new CancellationTokenSource());
            await lost.CancelAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The connection is back: topology recovery has declared both queues again and consumed
    /// the request queue again on this responder's channel (RR-20.2).
    /// </summary>
    private Task OnRecoveredAsync(object sender, AsyncEventArgs args)
    {
        if (!_stopping.IsCancellationRequested && _policy.RecoverConnection)
        {
            Notify(o => o.Recovered());
        }

        return Task.CompletedTask;
    }

    private void Notify(Action<IResponderObserver> hook)
    {
        if (_options.Observer is not { } observer)
        {
            return;
        }

        try
        {
            hook(observer);
        }
        catch (Exception e)
        {
            Report($"observer failed: {e.Message}");
        }
    }

    private void Report(string message)
    {
        try
        {
            _options.Observer?.Error($"responder {Queue}: {message}");
        }
        catch (Exception)
        {
            // A failing log must not take the consumer down.
        }
    }

    private static async Task SettleAsync(Func<ValueTask> settle)
    {
        try
        {
            await settle().ConfigureAwait(false);
        }
        catch (Exception)
        {
            // The channel is gone; the broker requeues what was not acknowledged.
        }
    }

    /// <summary>
    /// Stops: cancels the consumer, abandons the handlers still running (their requests go
    /// back to the queue), then waits, at most <see cref="SettleBound"/>, until every request
    /// whose handler has returned is settled, and only then closes the channel. Closing
    /// before the ack of a request whose reply is already with its caller would put that
    /// request back on the queue, for the next responder to answer a second time.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _stopped, 1) != 0)
        {
            return;
        }

        try
        {
            if (_consumerTag is not null && _channel.IsOpen)
            {
                await _channel.BasicCancelAsync(_consumerTag).ConfigureAwait(false);
            }
        }
        catch (Exception)
        {
            // The channel is already gone.
        }

        _connection.RecoverySucceededAsync -= OnRecoveredAsync;
        await _stopping.CancelAsync().ConfigureAwait(false);
        try
        {
            await _settling.WhenIdleAsync().WaitAsync(SettleBound).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            Report($"closing with requests still unsettled after {SettleBound.TotalSeconds:0} s; the broker requeues them");
        }

        await _closing.CancelAsync().ConfigureAwait(false);
        try
        {
            await _channel.CloseAsync().ConfigureAwait(false);
        }
        catch (Exception)
        {
            // Already closed.
        }

        await _channel.DisposeAsync().ConfigureAwait(false);
    }

    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    /// <summary>
    /// A request as delivered: its tag, and the loss token of the channel it came on. Settled
    /// once: under <c>ack_timing: on_delivery</c> it is acked first, and what comes after is a no-op.
    /// </summary>
    internal sealed class Delivery(IChannel channel, ulong tag, CancellationToken lost)
    {
        private int _settled;

        /// <summary>Cancelled once the connection that carried the request is lost.</summary>
        public CancellationToken Lost { get; } = lost;

        public ValueTask AckAsync() =>
            Interlocked.Exchange(ref _settled, 1) == 0 ? channel.BasicAckAsync(tag, multiple: false) : ValueTask.CompletedTask;

        /// <summary>Back to the queue, its delivery count raised (requeue given explicitly: clients disagree on the default).</summary>
        public ValueTask RequeueAsync() =>
            Interlocked.Exchange(ref _settled, 1) == 0 ? channel.BasicNackAsync(tag, multiple: false, requeue: true) : ValueTask.CompletedTask;
    }

    /// <summary>What a strict header reader throws: its failure text is <c>MalformedHeader: {header name}</c>.</summary>
    private sealed class MalformedHeader(string header) : Exception(header);

    /// <summary>What the responder's decoder failing is reported as: <c>MalformedRequest: {decoder's message}</c> (RR-19.2).</summary>
    private sealed class MalformedRequest(string message) : Exception(message);
}
