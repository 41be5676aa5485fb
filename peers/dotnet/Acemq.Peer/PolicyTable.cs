namespace Acemq.Peer;

/// <summary>
/// The catalogue's names (catalogue/catalogue.yaml) mapped to the binding's policies: each
/// mutant to the policy values its <c>policy</c> gives, each profile to the values
/// <c>profiles.&lt;name&gt;.peers.dotnet</c> gives. The binding knows none of these names;
/// Acemq.Tests checks this table against the catalogue file.
/// </summary>
internal static class PolicyTable
{
    public const string Current = "current";

    /// <summary>The side a mutant acts on; the catalogue's gatherer mutants act on a requester's gathers.</summary>
    public enum Side { Requester, Responder }

    public sealed record Mutant(string Name, Side Side,
        Func<RequesterPolicy, RequesterPolicy>? Requester = null, Func<ResponderPolicy, ResponderPolicy>? Responder = null);

    public sealed record Profile(string Name,
        Func<RequesterPolicy, RequesterPolicy> Requester, Func<ResponderPolicy, ResponderPolicy> Responder);

    private static Mutant Req(string name, Func<RequesterPolicy, RequesterPolicy> set) => new(name, Side.Requester, Requester: set);

    private static Mutant Res(string name, Func<ResponderPolicy, ResponderPolicy> set) => new(name, Side.Responder, Responder: set);

    /// <summary>Every mutant of the catalogue, in its order.</summary>
    public static IReadOnlyList<Mutant> Mutants { get; } =
    [
        Req("native-only", p => p with { WriteHeaderAddress = false }),
        Req("header-bytes", p => p with { HeaderAddressAsBytes = true }),
        Req("queue-per-request", p => p with { ReplyQueuePerRequest = true }),
        Req("late-reply-to-next", p => p with { MatchRepliesBy = ReplyMatch.OldestWaiter }),
        Req("ignores-error-header", p => p with { ReadErrorHeader = false }),
        Res("native-first", p => p with { ReadOrder = [ReplyToSource.Native, ReplyToSource.Header] }),
        Res("no-strip", p => p with { StripEngineHeaders = false }),
        Res("no-dlq-on-failure", p => p with { DeadLetterFailures = false }),
        Res("counts-failures", p => p with { CountFailuresAnswered = true }),
        Res("dead-letter-unanswerable", p => p with { Unanswerable = UnanswerableRequest.DeadLetter }),
        Res("no-rollback", p => p with { RollbackAnswered = false }),
        Res("answered-after-publish", p => p with { AnsweredTiming = AnsweredTiming.AfterConfirm }),
        Res("counters-after-subscribe", p => p with { CountersCreated = CountersCreated.AfterFirstDelivery }),
        Req("gather-by-correlation-id", p => p with { GatherDemuxBy = GatherDemux.CorrelationId }),
        Req("shortfall-resolves", p => p with { GatherShortfall = GatherShortfall.Resolve }),
        Req("implicit-queue-type", p => p with { ExplicitReplyQueueType = false }),
        Req("timeouts-not-counted", p => p with { CountTimeouts = false }),
        Req("ignores-returns", p => p with { HonourReturns = false }),
        Req("truncates-short-strings", p => p with { LongShortString = LongShortString.Truncate }),
        Req("drops-undecodable", p => p with { UndecodableReply = UndecodableReply.Drop }),
        Res("correlation-from-correlation-id", p => p with { ReplyCorrelationFrom = ReplyCorrelation.CorrelationId }),
        Res("acks-undeliverable", p => p with { UndeliverableReply = UndeliverableReply.Ack }),
        Res("classic-dlq", p => p with { DlqQueueType = DlqQueueType.Classic }),
        Res("no-response-message-id", p => p with { ResponseMessageId = false }),
        Res("strict-header-types", p => p with { HeaderTypes = HeaderTypes.Strict }),
        Req("copies-distinct-ids", p => p with { GatherCopyIds = GatherCopyIds.Distinct }),
        Req("multi-one-copy", p => p with { MultiCopies = MultiCopies.One }),
        Req("no-early-resolve", p => p with { GatherResolvesEarly = false }),
        Req("no-count-means-one", p => p with { GatherMissingCount = GatherMissingCount.One }),
        Req("stray-reply-to-oldest-gather", p => p with { GatherStrayReply = GatherStrayReply.OldestGather }),
        Req("default-timeout-10s", p => p with { DefaultTimeoutMs = 10000 }),
        Res("default-attempts-5", p => p with { DefaultMaxAttempts = 5 }),
        Res("attempt-from-zero", p => p with { AttemptBase = 0 }),
        Req("gather-no-default-correlation", p => p with { GatherDefaultCorrelation = GatherDefaultCorrelation.None }),
        Req("gather-timeouts-counted", p => p with { CountGatherTimeouts = true }),
        Req("close-abandons-pending", p => p with { PendingAtClose = PendingAtClose.Wait }),
        Req("gather-ignores-returns", p => p with { HonourGatherReturns = false }),
        Req("type-in-header", p => p with { TypeCarrier = TypeCarrier.Header }),
        Res("failure-reply-unchecked", p => p with { FailureReplyDelivery = FailureReplyDelivery.Unchecked }),
        Res("malformed-request-dropped", p => p with { MalformedRequest = MalformedRequestHandling.Drop }),
        Req("header-only-address", p => p with { WriteNativeAddress = false }),
        Req("mismatched-addresses", p => p with { NativeAddress = NativeAddress.Stale }),
        Req("empty-native-address", p => p with { NativeAddress = NativeAddress.Empty }),
        Req("narrow-int-header", p => p with { NarrowIntHeader = true }),
        Req("unmatched-not-counted", p => p with { CountUnmatched = false }),
        Req("unmatched-to-waiter", p => p with { UnmatchedReply = UnmatchedReply.OldestWaiter }),
        Req("timeout-as-null-reply", p => p with { TimeoutOutcome = TimeoutOutcome.NullReply }),
        Req("fails-on-unknown-headers", p => p with { UnknownReplyHeaders = UnknownReplyHeaders.Fail }),
        Req("shared-reply-queue", p => p with { ExclusiveReplyQueue = false }),
        Req("gather-unmatched-not-counted", p => p with { CountGatherUnmatched = false }),
        Req("publish-twice", p => p with { PublishCopies = 2 }),
        Req("no-count-no-copy", p => p with { MultiCopiesWithoutCount = 0 }),
        Res("header-only-reader", p => p with { ReadOrder = [ReplyToSource.Header] }),
        Res("ignores-bytes-address", p => p with { BytesAddress = BytesAddress.Ignore }),
        Res("no-content-type", p => p with { ReplyContentType = null }),
        Res("strips-x-headers", p => p with { StripPrefix = "x-" }),
        Res("failure-with-body", p => p with { FailureBody = FailureBody.Json }),
        Res("qualified-error-type", p => p with { ErrorTypeName = ErrorTypeName.Qualified }),
        Res("retries-failures", p => p with { RetryFailures = true }),
        Res("unanswerable-not-counted", p => p with { CountUnanswerable = false }),
        Res("classic-request-queue", p => p with { RequestQueue = RequestQueue.ClassicIfMissing }),
        Req("late-timeout", p => p with { RequestDeadline = RequestDeadline.Late }),
        Req("budget-restarts-per-reply", p => p with { GatherDeadline = GatherDeadline.RestartPerReply }),
        Req("gather-keeps-failures", p => p with { GatherFailureReply = GatherFailureReply.Keep }),
        Req("gather-failures-not-counted", p => p with { CountGatherFailures = false }),
        Res("hides-acemq-headers", p => p with { PassSpecHeaders = false }),
        Res("last-attempt-acked", p => p with { LastAttempt = LastAttempt.Ack }),
    ];

    /// <summary>The profiles the catalogue lists for this peer, and "current".</summary>
    public static IReadOnlyList<Profile> Profiles { get; } =
    [
        new(Current, p => p, p => p),

        // 0.7.12 and 0.5.0: both addresses, but a throwing handler sends nothing (retry
        // policy, then {queue}.dlq) and the requester ignores acemq-error.
        new("0.7.12", p => p with { ReadErrorHeader = false }, p => p with { HandlerFailure = HandlerFailure.Retry }),
        new("0.5.0", p => p with { ReadErrorHeader = false }, p => p with { HandlerFailure = HandlerFailure.Retry }),

        // 0.3.0: only the native reply_to, written and read; failures as 0.7.12.
        new("0.3.0",
            p => p with { WriteHeaderAddress = false, ReadErrorHeader = false },
            p => p with { ReadOrder = [ReplyToSource.Native], HandlerFailure = HandlerFailure.Retry }),
    ];

    public static RequesterPolicy Requester(string? profile, string? mutant) =>
        Resolve(profile, mutant, Side.Requester, RequesterPolicy.Default, p => p.Requester, m => m.Requester);

    public static ResponderPolicy Responder(string? profile, string? mutant) =>
        Resolve(profile, mutant, Side.Responder, ResponderPolicy.Default, p => p.Responder, m => m.Responder);

    /// <summary>The profile's values, then the mutant's; a mutant of the other side runs as current.</summary>
    private static T Resolve<T>(
        string? profileName, string? mutantName, Side side, T policy,
        Func<Profile, Func<T, T>> ofProfile, Func<Mutant, Func<T, T>?> ofMutant)
    {
        var profile = Profiles.FirstOrDefault(p => p.Name == (profileName ?? Current))
            ?? throw new ArgumentException(
                $"unknown profile '{profileName}' (known: {string.Join(", ", Profiles.Select(p => p.Name))})");
        policy = ofProfile(profile)(policy);
        if (string.IsNullOrEmpty(mutantName))
        {
            return policy;
        }

        var mutant = Mutants.FirstOrDefault(m => m.Name == mutantName)
            ?? throw new ArgumentException(
                $"unknown mutant '{mutantName}' (known: {string.Join(", ", Mutants.Select(m => m.Name))})");
        return mutant.Side == side ? ofMutant(mutant)!(policy) : policy;
    }
}
