using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Acemq;

/// <summary>
/// Consumes a request queue and answers each request on the queue it names. A handler
/// failure goes back to the caller and the request to <c>{queue}.dlq</c>; a reply that
/// cannot be delivered goes through the retry policy.
/// </summary>
public sealed class Responder : IAsyncDisposable, IDisposable
{
    public const string DeadLetterReasonHeader = Wire.DeadLetterReasonHeader;

    /// <summary>
    /// The answered-after-publish mutant's race window, widened from microseconds so the
    /// suite catches it every time, not by luck.
    /// </summary>
    internal static readonly TimeSpan MutantDelay = TimeSpan.FromMilliseconds(1000);

    private static readonly Dictionary<string, object?> QuorumQueue = new() { ["x-queue-type"] = "quorum" };
    private static readonly Dictionary<string, object?> ClassicQueue = new() { ["x-queue-type"] = "classic" };

    private readonly IChannel _channel;
    private readonly Func<byte[], RequestContext, CancellationToken, Task<byte[]>> _handler;
    private readonly ResponderOptions _options;
    private readonly CancellationTokenSource _stopping = new();
    private string? _consumerTag;

    // Fields, so they exist at zero before the consumer is registered and a backlog is counted.
    private long _answered;
    private long _unanswerable;

    // Only for the counters-after-subscribe mutant: 1 once its lazy counter "exists".
    private int _lazyCounterMade;

    private Responder(
        IChannel channel, string queue, Func<byte[], RequestContext, CancellationToken, Task<byte[]>> handler, ResponderOptions options)
    {
        _channel = channel;
        Queue = queue;
        DeadLetterQueue = queue + ".dlq";
        _handler = handler;
        _options = options;
    }

    public string Queue { get; }

    public string DeadLetterQueue { get; }

    /// <summary>Requests answered, counted before the reply left and taken back if it did not.</summary>
    public long Answered => Interlocked.Read(ref _answered);

    /// <summary>Requests that named nowhere to reply.</summary>
    public long Unanswerable => Interlocked.Read(ref _unanswerable);

    public Profile Profile => _options.Profile;

    public Mutant Mutant => _options.Mutant;

    internal static async Task<Responder> StartAsync(
        IConnection connection, string queue, Func<byte[], RequestContext, CancellationToken, Task<byte[]>> handler,
        ResponderOptions options, CancellationToken ct)
    {
        Mutants.EnsureSide(options.Mutant, MutantSide.Responder);
        if (options.MaxAttempts < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "MaxAttempts must be at least 1");
        }

        Wire.EnsureShortString("queue", queue + ".dlq");
        var channel = await connection.CreateChannelAsync(Publishing.Confirmed, ct).ConfigureAwait(false);
        try
        {
            var responder = new Responder(channel, queue, handler, options);
            await responder.SubscribeAsync(ct).ConfigureAwait(false);
            return responder;
        }
        catch
        {
            await channel.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    private async Task SubscribeAsync(CancellationToken ct)
    {
        // The classic-dlq defect (breaks RR-17) gives the dead letters a classic queue.
        var dlqArguments = _options.Mutant == Mutant.ClassicDlq ? ClassicQueue : QuorumQueue;
        foreach (var (name, arguments) in new[] { (Queue, QuorumQueue), (DeadLetterQueue, dlqArguments) })
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

    private async Task OnRequestAsync(object sender, BasicDeliverEventArgs delivery)
    {
        var tag = delivery.DeliveryTag;
        var properties = delivery.BasicProperties;
        var body = delivery.Body.ToArray();
        try
        {
            await HandleAsync(tag, properties, body).ConfigureAwait(false);
        }
        catch (Exception e) when (_stopping.IsCancellationRequested || !_channel.IsOpen)
        {
            // Unacknowledged, so the broker gives the request to another consumer.
            Report($"request {properties.MessageId} left unacknowledged while stopping: {e.Message}");
        }
        catch (Exception e)
        {
            Report($"request {properties.MessageId}: {e}");
            await SettleAsync(() => _channel.BasicNackAsync(tag, multiple: false, requeue: true)).ConfigureAwait(false);
        }
    }

    private async Task HandleAsync(ulong tag, IReadOnlyBasicProperties properties, byte[] body)
    {
        var headers = properties.Headers;
        var attempt = Wire.Attempt(headers);
        var address = Wire.ResolveReplyAddress(headers, properties.ReplyTo, _options.Profile, _options.Mutant == Mutant.NativeFirst);
        if (address is not { } replyTo)
        {
            await UnanswerableAsync(tag, properties, body).ConfigureAwait(false);
            return;
        }

        var shown = _options.Mutant == Mutant.NoStrip
            ? new Dictionary<string, object?>(headers ?? new Dictionary<string, object?>(), StringComparer.Ordinal)
            : Wire.StripEngineHeaders(headers);
        var request = new RequestContext(
            Queue, properties.MessageId, properties.CorrelationId, replyTo.Address, replyTo.Source, shown, attempt);
        Notify(o => o.Handling(request));

        byte[] reply;
        try
        {
            if (_options.Mutant == Mutant.StrictHeaderTypes && Wire.FirstStrictlyRefusedHeader(headers) is { } malformed)
            {
                // The strict-header-types defect (breaks WF-1): a header type this reader did
                // not expect fails the request as if the handler had thrown.
                throw new MalformedHeader(malformed);
            }

            reply = await _handler(body, request, _stopping.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (!_stopping.IsCancellationRequested)
        {
            var failure = Wire.FailureText(e);
            if (!_options.Profile.KnowsErrorHeader())
            {
                // Before 0.7.13 nothing went back: the retry policy had the request and the caller timed out.
                await RetryOrDeadLetterAsync(tag, properties, body, attempt, failure).ConfigureAwait(false);
                return;
            }

            await ReplyAsync(tag, request, properties, body, [], failure).ConfigureAwait(false);
            return;
        }

        await ReplyAsync(tag, request, properties, body, reply, failure: null).ConfigureAwait(false);
    }

    private async Task ReplyAsync(
        ulong tag, RequestContext request, IReadOnlyBasicProperties requestProperties, byte[] requestBody, byte[] reply, string? failure)
    {
        var counted = failure is null
            ? _options.Mutant != Mutant.AnsweredAfterPublish
            : _options.Mutant == Mutant.CountsFailures;
        if (counted && _options.Mutant == Mutant.CountersAfterSubscribe && Interlocked.Exchange(ref _lazyCounterMade, 1) == 0)
        {
            // The defect: a lazily created counter misses the delivery that created it,
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
            await Publishing.PublishAsync(_channel, "", request.ReplyTo, ReplyProperties(request, failure), reply, _stopping.Token)
                .ConfigureAwait(false);
        }
        catch (Exception e) when (!_stopping.IsCancellationRequested)
        {
            if (counted && _options.Mutant != Mutant.NoRollback)
            {
                Interlocked.Decrement(ref _answered);
            }

            Notify(o => o.ReplyFailed(request, e));
            if (_options.Mutant == Mutant.AcksUndeliverable)
            {
                // The acks-undeliverable defect (breaks RR-14): the request is accepted
                // unanswered, neither retried nor dead-lettered.
                await _channel.BasicAckAsync(tag, multiple: false).ConfigureAwait(false);
                return;
            }

            await RetryOrDeadLetterAsync(tag, requestProperties, requestBody, request.Attempt, Wire.UndeliverableReplyPrefix + e.Message)
                .ConfigureAwait(false);
            return;
        }

        Notify(o => o.Replied(request, failure));
        if (failure is null && _options.Mutant == Mutant.AnsweredAfterPublish)
        {
            _ = Task.Delay(MutantDelay).ContinueWith(_ => Interlocked.Increment(ref _answered), TaskScheduler.Default);
        }

        if (failure is null || _options.Mutant == Mutant.NoDlqOnFailure)
        {
            await _channel.BasicAckAsync(tag, multiple: false).ConfigureAwait(false);
            return;
        }

        // The caller has its answer: the request is dead-lettered once, never retried.
        await DeadLetterAndAckAsync(tag, requestProperties, requestBody, failure).ConfigureAwait(false);
    }

    private BasicProperties ReplyProperties(RequestContext request, string? failure)
    {
        var headers = new Dictionary<string, object?>(StringComparer.Ordinal);

        // The no-response-message-id defect (breaks SG-3) leaves gatherers nothing to demultiplex by.
        if (request.MessageId is not null && _options.Mutant != Mutant.NoResponseMessageId)
        {
            headers[Wire.ResponseMessageIdHeader] = request.MessageId;
        }

        if (failure is not null)
        {
            headers[Wire.ErrorHeader] = failure;
        }

        return new BasicProperties
        {
            MessageId = Wire.NewMessageId(),

            // The correlation-from-correlation-id defect (breaks RR-4) echoes the wrong id.
            CorrelationId = _options.Mutant == Mutant.CorrelationFromCorrelationId ? request.CorrelationId : request.MessageId,
            ContentType = Wire.JsonContentType,
            Headers = headers,
        };
    }

    /// <summary>
    /// The retry policy: requeue (explicitly: clients disagree on the default) until the
    /// last attempt, then dead-letter. Attempts are counted by the quorum queue.
    /// </summary>
    private async Task RetryOrDeadLetterAsync(ulong tag, IReadOnlyBasicProperties properties, byte[] body, int attempt, string reason)
    {
        if (attempt < _options.MaxAttempts)
        {
            await _channel.BasicNackAsync(tag, multiple: false, requeue: true).ConfigureAwait(false);
            return;
        }

        await DeadLetterAndAckAsync(tag, properties, body, reason).ConfigureAwait(false);
    }

    private async Task UnanswerableAsync(ulong tag, IReadOnlyBasicProperties properties, byte[] body)
    {
        // Redelivering would not make a reply address appear: count it and accept it.
        Interlocked.Increment(ref _unanswerable);
        if (_options.Mutant == Mutant.DeadLetterUnanswerable)
        {
            if (!await DeadLetterAndAckAsync(tag, properties, body, "Unanswerable: the request names no reply address").ConfigureAwait(false))
            {
                return;
            }
        }
        else
        {
            await _channel.BasicAckAsync(tag, multiple: false).ConfigureAwait(false);
        }

        Notify(o => o.Unanswerable(properties.MessageId));
    }

    /// <summary>
    /// Publishes the request to <c>{queue}.dlq</c> with the reason, then acknowledges it. If
    /// the dead-letter cannot be published, the request is requeued: nothing is acknowledged
    /// into nowhere.
    /// </summary>
    private async Task<bool> DeadLetterAndAckAsync(ulong tag, IReadOnlyBasicProperties properties, byte[] body, string reason)
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
            CorrelationId = properties.CorrelationId,
            ReplyTo = properties.ReplyTo,
            Type = properties.Type,
            ContentType = properties.ContentType,
            DeliveryMode = DeliveryModes.Persistent,
            Headers = headers,
        };

        try
        {
            await Publishing.PublishAsync(_channel, "", DeadLetterQueue, copy, body, _stopping.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (!_stopping.IsCancellationRequested)
        {
            Report($"dead-lettering {properties.MessageId} to {DeadLetterQueue} failed, requeued: {e.Message}");
            await _channel.BasicNackAsync(tag, multiple: false, requeue: true).ConfigureAwait(false);
            return false;
        }

        await _channel.BasicAckAsync(tag, multiple: false).ConfigureAwait(false);
        Notify(o => o.DeadLettered(properties.MessageId, reason));
        return true;
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

    public async ValueTask DisposeAsync()
    {
        if (_stopping.IsCancellationRequested)
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

        await _stopping.CancelAsync().ConfigureAwait(false);
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

    /// <summary>What the strict-header-types defect throws: its failure text is <c>MalformedHeader: {header name}</c>.</summary>
    private sealed class MalformedHeader(string header) : Exception(header);
}
