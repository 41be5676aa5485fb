using System.Diagnostics;
using System.Text;
using System.Text.Json;

namespace Acemq.Tests;

/// <summary>
/// The timeouts as upper bounds (RR-9.6, SG-9.1), failure replies to a gather (SG-10), the
/// spec's headers reaching the handler (RR-5.2) and a gather refusing replies once it ended
/// (SG-8.1): each at the spec's default and at the value that breaks it.
/// </summary>
public class DeadlineAndFailureTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(2);

    private static long At(double seconds) => (long)(seconds * Stopwatch.Frequency);

    private static JsonElement Json(string text) => JsonDocument.Parse(text).RootElement.Clone();

    [Fact]
    public void A_request_gives_up_at_its_timeout_unless_the_policy_waits_half_as_long_again()
    {
        Assert.Equal(Timeout, Requester.DeadlineOf(RequesterPolicy.Default, Timeout));
        var late = RequesterPolicy.Default with { RequestDeadline = RequestDeadline.Late };
        Assert.Equal(TimeSpan.FromSeconds(3), Requester.DeadlineOf(late, Timeout));
        // The default timeout too: 30 s armed at 45 s.
        Assert.Equal(TimeSpan.FromSeconds(45), Requester.DeadlineOf(late, Requester.TimeoutOf(late, null)));
    }

    [Theory]
    [InlineData(2)]
    [InlineData(null)]
    public async Task A_gathers_deadline_stays_put_whatever_replies_come(int? count)
    {
        var gather = new PendingGather<int>("g", count, onReply: null);
        gather.Arm(Timeout, At(100));
        Assert.True(gather.Add(1, At(101.5)));

        Assert.Equal(At(102), gather.Deadline);
        Assert.False(gather.ExpireAt(At(101.9)));
        Assert.True(gather.ExpireAt(At(102)));
        Assert.Equal(count is null ? GatherEnd.Resolved : GatherEnd.Shortfall, await gather.Ended);
        Assert.True(gather.EndedAtDeadline);
    }

    [Theory]
    [InlineData(2)]
    [InlineData(null)]
    public async Task Under_restart_per_reply_every_kept_reply_restarts_the_whole_timeout(int? count)
    {
        var restart = RequesterPolicy.Default with { GatherDeadline = GatherDeadline.RestartPerReply };
        var gather = new PendingGather<int>("g", count, onReply: null, restart);
        gather.Arm(Timeout, At(100));
        Assert.True(gather.Add(1, At(101.5)));

        Assert.Equal(At(103.5), gather.Deadline);
        Assert.False(gather.ExpireAt(At(102)));
        Assert.True(gather.ExpireAt(At(103.5)));
        Assert.Equal(count is null ? GatherEnd.Resolved : GatherEnd.Shortfall, await gather.Ended);

        // A gather no reply came to ends on time even so.
        var empty = new PendingGather<int>("h", count, onReply: null, restart);
        empty.Arm(Timeout, At(100));
        Assert.True(empty.ExpireAt(At(102)));
    }

    [Fact]
    public async Task A_reply_past_the_deadline_is_refused_before_the_requester_woke_and_ends_the_gather()
    {
        var gather = new PendingGather<int>("g", expectedReplyCount: 2, onReply: null);
        gather.Arm(Timeout, At(100));
        Assert.True(gather.Add(1, At(101)));

        Assert.False(gather.Add(2, At(102.001)));
        Assert.Equal(GatherEnd.Shortfall, await gather.Ended);
        Assert.Equal([1], gather.Replies);
        Assert.Equal(Offered.Ended, gather.OfferFailure(keep: false));
    }

    [Fact]
    public void Of_replies_racing_for_the_last_places_exactly_the_count_is_kept_and_the_rest_is_refused()
    {
        const int Count = 5;
        var seen = 0;
        var gather = new PendingGather<int>("g", Count, onReply: _ => Interlocked.Increment(ref seen));
        var offers = Enumerable.Range(0, 64).AsParallel().WithDegreeOfParallelism(4)
            .Select(i => gather.Offer(Encoding.UTF8.GetBytes(i.ToString()))).ToList();

        Assert.Equal(Count, offers.Count(o => o == Offered.Kept));
        Assert.All(offers.Where(o => o != Offered.Kept), o => Assert.Equal(Offered.Ended, o));
        Assert.Equal(Count, gather.Replies.Count);
        Assert.Equal(Count, seen);
    }

    [Fact]
    public void A_failure_reply_is_no_answer_it_is_dropped_and_the_gather_waits_on()
    {
        var seen = new List<JsonElement>();
        var gather = new PendingGather<JsonElement>("g", expectedReplyCount: 1, seen.Add);

        Assert.Equal(Offered.FailureDropped, gather.OfferFailure(keep: false));
        Assert.False(gather.Ended.IsCompleted);
        Assert.Empty(gather.Replies);
        Assert.Empty(seen);

        Assert.Equal(Offered.Kept, gather.Offer("""{"n":1}"""u8.ToArray()));
        Assert.True(gather.Ended.IsCompleted);
    }

    [Fact]
    public async Task Under_keep_a_failure_reply_is_a_null_reply_that_counts_toward_the_count()
    {
        var seen = new List<JsonElement>();
        var gather = new PendingGather<JsonElement>("g", expectedReplyCount: 1, seen.Add);

        Assert.Equal(Offered.Kept, gather.OfferFailure(keep: true));
        Assert.Equal(GatherEnd.Resolved, await gather.Ended);
        Assert.Equal(JsonValueKind.Null, Assert.Single(gather.Replies).ValueKind);
        Assert.Equal(JsonValueKind.Null, Assert.Single(seen).ValueKind);
        Assert.Equal("[null]", Acemq.Peer.Outcomes.Replies(gather.Replies).ToJsonString());

        var records = new PendingGather<string>("h", expectedReplyCount: null, onReply: null);
        Assert.Equal(Offered.Kept, records.OfferFailure(keep: true));
        Assert.Null(Assert.Single(records.Replies));
    }

    [Fact]
    public void A_dropped_failure_is_counted_by_its_own_knob_apart_from_stray_gather_replies()
    {
        var spec = RequesterPolicy.Default;
        Assert.True(Requester.CountsUnmatched(spec, gatherReply: true, droppedFailure: true));
        Assert.True(Requester.CountsUnmatched(spec, gatherReply: true, droppedFailure: false));
        Assert.True(Requester.CountsUnmatched(spec, gatherReply: false, droppedFailure: false));

        var failuresNotCounted = spec with { CountGatherFailures = false };
        Assert.False(Requester.CountsUnmatched(failuresNotCounted, gatherReply: true, droppedFailure: true));
        Assert.True(Requester.CountsUnmatched(failuresNotCounted, gatherReply: true, droppedFailure: false));

        // The SG-8.1 mutant leaves failure replies alone, and the other way round.
        var strayNotCounted = spec with { CountGatherUnmatched = false };
        Assert.True(Requester.CountsUnmatched(strayNotCounted, gatherReply: true, droppedFailure: true));
        Assert.False(Requester.CountsUnmatched(strayNotCounted, gatherReply: true, droppedFailure: false));
    }

    [Fact]
    public void The_handler_sees_the_specs_headers_and_loses_only_the_engines_unless_the_policy_hides_acemq()
    {
        var headers = new Dictionary<string, object?>
        {
            [Wire.ReplyToHeader] = "amq.gen-1", ["responseMessageId"] = "m", ["acemq-whatever"] = "w",
            ["x-custom"] = "c", ["x-acemq-trace"] = "t",
        };
        string[] Shown(ResponderPolicy policy) =>
            [.. Wire.StripEngineHeaders(headers, Responder.HiddenPrefixes(policy)).Keys.Order(StringComparer.Ordinal)];

        Assert.Equal(["acemq-reply-to", "acemq-whatever", "responseMessageId", "x-custom"], Shown(ResponderPolicy.Default));
        Assert.Equal(["responseMessageId", "x-custom"], Shown(ResponderPolicy.Default with { PassSpecHeaders = false }));
        Assert.Equal(
            ["acemq-reply-to", "acemq-whatever", "responseMessageId", "x-acemq-trace", "x-custom"],
            Shown(ResponderPolicy.Default with { StripEngineHeaders = false }));
    }

    [Fact]
    public void The_new_knobs_default_to_the_spec()
    {
        Assert.True(RequesterPolicy.Default is
        {
            RequestDeadline: RequestDeadline.Timeout, GatherDeadline: GatherDeadline.Fixed,
            GatherFailureReply: GatherFailureReply.Drop, CountGatherFailures: true,
        });
        Assert.True(ResponderPolicy.Default is { PassSpecHeaders: true, AnsweredTiming: AnsweredTiming.BeforePublish });
    }
}
