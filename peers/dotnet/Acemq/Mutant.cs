namespace Acemq;

/// <summary>
/// A named, deliberate defect from the conformance suite's mutant catalogue. Each one
/// breaks exactly one wire rule so the suite can show it catches that break.
/// Never use one outside a conformance run.
/// </summary>
public enum Mutant
{
    None,

    // Requester
    NativeOnly,
    HeaderBytes,
    QueuePerRequest,
    LateReplyToNext,
    IgnoresErrorHeader,
    ImplicitQueueType,
    TimeoutsNotCounted,
    IgnoresReturns,
    TruncatesShortStrings,
    DropsUndecodable,

    // Gatherer (acts on a requester's gathers)
    GatherByCorrelationId,
    ShortfallResolves,
    CopiesDistinctIds,
    MultiOneCopy,
    NoEarlyResolve,
    NoCountMeansOne,
    StrayReplyToOldestGather,

    // Responder
    NativeFirst,
    NoStrip,
    NoDlqOnFailure,
    CountsFailures,
    DeadLetterUnanswerable,
    NoRollback,
    AnsweredAfterPublish,
    CountersAfterSubscribe,
    CorrelationFromCorrelationId,
    AcksUndeliverable,
    ClassicDlq,
    NoResponseMessageId,
    StrictHeaderTypes,
}

public enum MutantSide
{
    None,
    Requester,
    Responder,
}

public static class Mutants
{
    private static readonly (string Name, Mutant Mutant, MutantSide Side)[] Catalogue =
    [
        ("native-only", Mutant.NativeOnly, MutantSide.Requester),
        ("header-bytes", Mutant.HeaderBytes, MutantSide.Requester),
        ("queue-per-request", Mutant.QueuePerRequest, MutantSide.Requester),
        ("late-reply-to-next", Mutant.LateReplyToNext, MutantSide.Requester),
        ("ignores-error-header", Mutant.IgnoresErrorHeader, MutantSide.Requester),
        ("native-first", Mutant.NativeFirst, MutantSide.Responder),
        ("no-strip", Mutant.NoStrip, MutantSide.Responder),
        ("no-dlq-on-failure", Mutant.NoDlqOnFailure, MutantSide.Responder),
        ("counts-failures", Mutant.CountsFailures, MutantSide.Responder),
        ("dead-letter-unanswerable", Mutant.DeadLetterUnanswerable, MutantSide.Responder),
        ("no-rollback", Mutant.NoRollback, MutantSide.Responder),
        ("answered-after-publish", Mutant.AnsweredAfterPublish, MutantSide.Responder),
        ("counters-after-subscribe", Mutant.CountersAfterSubscribe, MutantSide.Responder),
        ("gather-by-correlation-id", Mutant.GatherByCorrelationId, MutantSide.Requester),
        ("shortfall-resolves", Mutant.ShortfallResolves, MutantSide.Requester),
        ("implicit-queue-type", Mutant.ImplicitQueueType, MutantSide.Requester),
        ("timeouts-not-counted", Mutant.TimeoutsNotCounted, MutantSide.Requester),
        ("ignores-returns", Mutant.IgnoresReturns, MutantSide.Requester),
        ("truncates-short-strings", Mutant.TruncatesShortStrings, MutantSide.Requester),
        ("drops-undecodable", Mutant.DropsUndecodable, MutantSide.Requester),
        ("correlation-from-correlation-id", Mutant.CorrelationFromCorrelationId, MutantSide.Responder),
        ("acks-undeliverable", Mutant.AcksUndeliverable, MutantSide.Responder),
        ("classic-dlq", Mutant.ClassicDlq, MutantSide.Responder),
        ("no-response-message-id", Mutant.NoResponseMessageId, MutantSide.Responder),
        ("strict-header-types", Mutant.StrictHeaderTypes, MutantSide.Responder),
        ("copies-distinct-ids", Mutant.CopiesDistinctIds, MutantSide.Requester),
        ("multi-one-copy", Mutant.MultiOneCopy, MutantSide.Requester),
        ("no-early-resolve", Mutant.NoEarlyResolve, MutantSide.Requester),
        ("no-count-means-one", Mutant.NoCountMeansOne, MutantSide.Requester),
        ("stray-reply-to-oldest-gather", Mutant.StrayReplyToOldestGather, MutantSide.Requester),
    ];

    public static IReadOnlyList<string> All { get; } = Catalogue.Select(c => c.Name).ToArray();

    /// <summary>Parses a catalogue name; null or empty is <see cref="Mutant.None"/>.</summary>
    public static Mutant Parse(string? name)
    {
        if (string.IsNullOrEmpty(name))
        {
            return Mutant.None;
        }

        foreach (var (n, m, _) in Catalogue)
        {
            if (n == name)
            {
                return m;
            }
        }

        throw new ArgumentException($"unknown mutant '{name}'", nameof(name));
    }

    public static string Name(this Mutant mutant) =>
        mutant == Mutant.None ? "none" : Catalogue.First(c => c.Mutant == mutant).Name;

    public static MutantSide Side(this Mutant mutant) =>
        mutant == Mutant.None ? MutantSide.None : Catalogue.First(c => c.Mutant == mutant).Side;

    internal static void EnsureSide(Mutant mutant, MutantSide side)
    {
        var actual = mutant.Side();
        if (actual != MutantSide.None && actual != side)
        {
            throw new ArgumentException(
                $"mutant '{mutant.Name()}' acts on a {actual.ToString().ToLowerInvariant()}, not a {side.ToString().ToLowerInvariant()}");
        }
    }
}
