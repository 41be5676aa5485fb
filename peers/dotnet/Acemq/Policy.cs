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

internal enum GatherMissingCount { Budget, One }

internal enum GatherStrayReply { Unmatched, OldestGather }

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
}

internal enum ReplyCorrelation { MessageId, CorrelationId }

internal enum HandlerFailure { ErrorReply, Retry }

internal enum UnanswerableRequest { Accept, DeadLetter }

internal enum UndeliverableReply { Requeue, Ack }

internal enum CountersCreated { BeforeSubscribe, AfterFirstDelivery }

internal enum DlqQueueType { Quorum, Classic }

internal enum HeaderTypes { Lenient, Strict }

/// <summary>
/// When Answered is counted (RR-15). <see cref="AfterConfirm"/> carries how long after the
/// confirm the count lands: the window in which a caller holding its answer sees it uncounted.
/// </summary>
internal readonly record struct AnsweredTiming(bool IsAfterConfirm, TimeSpan Delay)
{
    public static AnsweredTiming BeforePublish => default;

    public static AnsweredTiming AfterConfirm(TimeSpan delay) => new(true, delay);
}

/// <summary>The responder's policy: <c>policies.responder</c> of the catalogue.</summary>
internal sealed record ResponderPolicy
{
    public static ResponderPolicy Default { get; } = new();

    /// <summary>Where the reply address is looked for, in this order (RR-3).</summary>
    public IReadOnlyList<ReplyToSource> ReadOrder { get; init; } = [ReplyToSource.Header, ReplyToSource.Native];
    public ReplyCorrelation ReplyCorrelationFrom { get; init; } = ReplyCorrelation.MessageId;
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
}
