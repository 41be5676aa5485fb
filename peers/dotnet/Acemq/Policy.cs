namespace Acemq;

// The knobs a requester or responder resolves once, when it is opened. Every field is a
// rule of docs/wire-spec.md; its default is what the rule says. The main code paths read
// these fields and nothing else. They are internal: a service never sets them. Only the
// conformance adapter (InternalsVisibleTo) opens a binding with other values, to replay an
// older release or a deliberate defect.

internal enum ReplyMatch { CorrelationId, OldestWaiter }

internal enum LongShortString { Refuse, Truncate }

internal enum UndecodableReply { DecodeError, Drop }

internal enum GatherCopyIds { Shared, Distinct }

internal enum MultiCopies { ExpectedCount, One }

internal enum GatherDemux { ResponseMessageId, CorrelationId }

internal enum GatherShortfall { Reject, Resolve }

internal enum GatherMissingCount { Budget, One, Copies }

internal enum GatherStrayReply { Unmatched, OldestGather }

internal enum PendingAtClose { EndClosed, Wait }

internal enum TypeCarrier { Property, Header }

internal enum GatherDefaultCorrelation { RequestMessageId, None }

internal enum NativeAddress { ReplyQueue, Stale, Empty }

internal enum UnmatchedReply { Drop, OldestWaiter }

internal enum TimeoutOutcome { Timeout, NullReply }

internal enum UnknownReplyHeaders { Ignore, Fail }

internal enum RequestDeadline { Timeout, Late }

internal enum GatherDeadline { Fixed, RestartPerReply }

internal enum GatherFailureReply { Drop, Keep }

/// <summary>The requester's (and its gathers') policy: <c>policies.requester</c> of the catalogue.</summary>
internal sealed record RequesterPolicy
{
    public static RequesterPolicy Default { get; } = new();

    public bool WriteHeaderAddress { get; init; } = true;
    public bool WriteNativeAddress { get; init; } = true;
    public bool HeaderAddressAsBytes { get; init; }
    public bool ReplyQueuePerRequest { get; init; }
    public bool ExplicitReplyQueueType { get; init; } = true;
    public ReplyMatch MatchRepliesBy { get; init; } = ReplyMatch.CorrelationId;
    public bool CountTimeouts { get; init; } = true;
    public bool ReadErrorHeader { get; init; } = true;
    public bool HonourReturns { get; init; } = true;
    public LongShortString LongShortString { get; init; } = LongShortString.Refuse;
    public UndecodableReply UndecodableReply { get; init; } = UndecodableReply.DecodeError;
    public GatherCopyIds GatherCopyIds { get; init; } = GatherCopyIds.Shared;
    public MultiCopies MultiCopies { get; init; } = MultiCopies.ExpectedCount;
    public GatherDemux GatherDemuxBy { get; init; } = GatherDemux.ResponseMessageId;
    public bool GatherResolvesEarly { get; init; } = true;
    public GatherShortfall GatherShortfall { get; init; } = GatherShortfall.Reject;
    public GatherMissingCount GatherMissingCount { get; init; } = GatherMissingCount.Budget;
    public GatherStrayReply GatherStrayReply { get; init; } = GatherStrayReply.Unmatched;

    /// <summary>The timeout of a call given none (RR-9.3), in milliseconds.</summary>
    public int DefaultTimeoutMs { get; init; } = 30000;

    /// <summary>Whether a gather ending at its timeout counts in TimedOut (RR-9.4: it never does).</summary>
    public bool CountGatherTimeouts { get; init; }

    /// <summary>What a call still pending when its requester is disposed does (RR-9.5).</summary>
    public PendingAtClose PendingAtClose { get; init; } = PendingAtClose.EndClosed;

    /// <summary>Whether a basic.return of a gather's publish ends the gather as refused (RR-13.3).</summary>
    public bool HonourGatherReturns { get; init; } = true;

    /// <summary>Where the type argument travels (SG-2.3).</summary>
    public TypeCarrier TypeCarrier { get; init; } = TypeCarrier.Property;

    /// <summary>The correlation_id of a gather given none (SG-1.2).</summary>
    public GatherDefaultCorrelation GatherDefaultCorrelation { get; init; } = GatherDefaultCorrelation.RequestMessageId;

    /// <summary>What reply_to holds: the reply queue (RR-1.3: the same address as the header).</summary>
    public NativeAddress NativeAddress { get; init; } = NativeAddress.ReplyQueue;

    /// <summary>Whether requests and gather copies carry an x-acemq-hops header written as an unsigned byte (WF-2.1: never).</summary>
    public bool NarrowIntHeader { get; init; }

    /// <summary>Whether a reply to no pending call is counted in Unmatched (RR-8.2).</summary>
    public bool CountUnmatched { get; init; } = true;

    /// <summary>What a reply to no pending call becomes: dropped (RR-8.3).</summary>
    public UnmatchedReply UnmatchedReply { get; init; } = UnmatchedReply.Drop;

    /// <summary>How a request not answered in time ends (RR-9.1).</summary>
    public TimeoutOutcome TimeoutOutcome { get; init; } = TimeoutOutcome.Timeout;

    /// <summary>What a reply header it does not know (not acemq-error, responseMessageId or x-...) does: nothing (RR-5.3).</summary>
    public UnknownReplyHeaders UnknownReplyHeaders { get; init; } = UnknownReplyHeaders.Ignore;

    /// <summary>Whether the reply queue is declared exclusive (RR-7.2).</summary>
    public bool ExclusiveReplyQueue { get; init; } = true;

    /// <summary>Whether a gather reply to no pending gather is counted in Unmatched (SG-8.1).</summary>
    public bool CountGatherUnmatched { get; init; } = true;

    /// <summary>The messages publishRequest publishes to its exchange (SG-2.2: one).</summary>
    public int PublishCopies { get; init; } = 1;

    /// <summary>The copies sendRequestMulti publishes given no expectedReplyCount (SG-2.1: one).</summary>
    public int MultiCopiesWithoutCount { get; init; } = 1;

    /// <summary>When a request not answered gives up (RR-9.6: at its timeout).</summary>
    public RequestDeadline RequestDeadline { get; init; } = RequestDeadline.Timeout;

    /// <summary>What a gather's timeout runs from (SG-9.1: its start, whatever replies arrive).</summary>
    public GatherDeadline GatherDeadline { get; init; } = GatherDeadline.Fixed;

    /// <summary>What a failure reply to a pending gather becomes (SG-10.1: no reply of the gather's).</summary>
    public GatherFailureReply GatherFailureReply { get; init; } = GatherFailureReply.Drop;

    /// <summary>Whether a failure reply a pending gather dropped is counted in Unmatched (SG-10.2).</summary>
    public bool CountGatherFailures { get; init; } = true;

    /// <summary>A request's correlation_id (RR-8.4: its message_id, so a responder that echoes it answers).</summary>
    public RequestCorrelationId RequestCorrelationId { get; init; } = RequestCorrelationId.MessageId;

    /// <summary>What a call or gather pending when the connection is lost does (RR-20.1: ends at once as connection lost).</summary>
    public OnConnectionLost OnConnectionLost { get; init; } = OnConnectionLost.EndLost;

    /// <summary>Whether the requester comes back after a lost connection, consuming a new reply queue (RR-20.3).</summary>
    public bool RecoverConnection { get; init; } = true;
}

internal enum OnConnectionLost { EndLost, Wait }

/// <summary>When a request is acknowledged (RR-20.4): once handled and its reply settled, or as soon as it is delivered.</summary>
internal enum AckTiming { AfterHandling, OnDelivery }

internal enum RequestCorrelationId { MessageId, None }

internal enum DirectReplyTo { AtMostOnce, Checked }

/// <summary>What a reply's correlation_id copies (RR-4.2: the request's id, its message_id else its correlation_id).</summary>
internal enum ReplyCorrelation { RequestId, MessageId, CorrelationId }

internal enum HandlerFailure { ErrorReply, Retry }

internal enum UnanswerableRequest { Accept, DeadLetter }

internal enum UndeliverableReply { Requeue, Ack }

internal enum CountersCreated { BeforeSubscribe, AfterFirstDelivery }

internal enum DlqQueueType { Quorum, Classic }

internal enum HeaderTypes { Lenient, Strict }

internal enum FailureReplyDelivery { Checked, Unchecked }

internal enum MalformedRequestHandling { FailReply, Drop, ReplyOnly }

internal enum DeadLetterCopy { Full, IdAndHeaders }

internal enum BytesAddress { Accept, Ignore }

internal enum FailureBody { Empty, Json }

internal enum ErrorTypeName { Simple, Qualified }

internal enum LastAttempt { DeadLetter, Ack }

internal enum RequestQueue { Quorum, ClassicIfMissing }

/// <summary>When Answered is counted (RR-15): before the reply is published, or once the broker confirmed it.</summary>
internal enum AnsweredTiming { BeforePublish, AfterConfirm }

/// <summary>The responder's policy: <c>policies.responder</c> of the catalogue.</summary>
internal sealed record ResponderPolicy
{
    public static ResponderPolicy Default { get; } = new();

    /// <summary>Where the reply address is looked for, in this order (RR-3).</summary>
    public IReadOnlyList<ReplyToSource> ReadOrder { get; init; } = [ReplyToSource.Header, ReplyToSource.Native];
    public ReplyCorrelation ReplyCorrelationFrom { get; init; } = ReplyCorrelation.RequestId;
    public bool StripEngineHeaders { get; init; } = true;
    public HandlerFailure HandlerFailure { get; init; } = HandlerFailure.ErrorReply;
    public bool DeadLetterFailures { get; init; } = true;
    public bool CountFailuresAnswered { get; init; }
    public UnanswerableRequest Unanswerable { get; init; } = UnanswerableRequest.Accept;
    public UndeliverableReply UndeliverableReply { get; init; } = UndeliverableReply.Requeue;
    public AnsweredTiming AnsweredTiming { get; init; } = AnsweredTiming.BeforePublish;
    public bool RollbackAnswered { get; init; } = true;
    public CountersCreated CountersCreated { get; init; } = CountersCreated.BeforeSubscribe;
    public DlqQueueType DlqQueueType { get; init; } = DlqQueueType.Quorum;
    public bool ResponseMessageId { get; init; } = true;
    public HeaderTypes HeaderTypes { get; init; } = HeaderTypes.Lenient;

    /// <summary>Attempts at an undeliverable reply when the options give none (RR-14.4).</summary>
    public int DefaultMaxAttempts { get; init; } = Wire.DefaultMaxAttempts;

    /// <summary>The attempt number is x-delivery-count (absent: 0) plus this (RR-14.3).</summary>
    public int AttemptBase { get; init; } = 1;

    /// <summary>Whether a failure reply that was returned or nacked goes to the retry policy like any reply (RR-14.1).</summary>
    public FailureReplyDelivery FailureReplyDelivery { get; init; } = FailureReplyDelivery.Checked;

    /// <summary>What a request body the decoder refuses gets (RR-19.2).</summary>
    public MalformedRequestHandling MalformedRequest { get; init; } = MalformedRequestHandling.FailReply;

    /// <summary>What a dead-letter copy keeps of the request: every property (RR-11.4), or only its body, message_id and headers.</summary>
    public DeadLetterCopy DeadLetterCopy { get; init; } = DeadLetterCopy.Full;

    /// <summary>Whether an acemq-reply-to written as a byte array is read, as UTF-8 (RR-2.2).</summary>
    public BytesAddress BytesAddress { get; init; } = BytesAddress.Accept;

    /// <summary>The content_type of every reply (RR-4.3); null sends none.</summary>
    public string? ReplyContentType { get; init; } = Wire.JsonContentType;

    /// <summary>The header prefix removed before the handler (RR-5.2: the engine's x-acemq-).</summary>
    public string StripPrefix { get; init; } = Wire.EnginePrefix;

    /// <summary>Whether the handler is shown the spec's own acemq-* headers, acemq-reply-to among them (RR-5.2: it is).</summary>
    public bool PassSpecHeaders { get; init; } = true;

    /// <summary>The body of a failure reply (RR-10.1: empty).</summary>
    public FailureBody FailureBody { get; init; } = FailureBody.Empty;

    /// <summary>How acemq-error names a handler's exception type (RR-10.2: unqualified).</summary>
    public ErrorTypeName ErrorTypeName { get; init; } = ErrorTypeName.Simple;

    /// <summary>Whether a request that got a failure reply is requeued until its last attempt (RR-11.2: never).</summary>
    public bool RetryFailures { get; init; }

    /// <summary>Whether a request naming no reply address is counted in Unanswerable (RR-12.1).</summary>
    public bool CountUnanswerable { get; init; } = true;

    /// <summary>The last attempt at an undeliverable reply (RR-14.2: dead-letter the request).</summary>
    public LastAttempt LastAttempt { get; init; } = LastAttempt.DeadLetter;

    /// <summary>How the request queue is declared (RR-17.1: quorum, always).</summary>
    public RequestQueue RequestQueue { get; init; } = RequestQueue.Quorum;

    /// <summary>A reply to amq.rabbitmq.reply-to.* (RR-14.5: at most once, without mandatory, never retried).</summary>
    public DirectReplyTo DirectReplyTo { get; init; } = DirectReplyTo.AtMostOnce;

    /// <summary>Whether the responder comes back after a lost connection: queues declared and consumed again (RR-20.2).</summary>
    public bool RecoverConnection { get; init; } = true;

    /// <summary>When a request is acknowledged (RR-20.4: after its handler, as its reply is settled).</summary>
    public AckTiming AckTiming { get; init; } = AckTiming.AfterHandling;
}
