using System.Text;

namespace Acemq.Tests;

public class PendingCallsTests
{
    private static Reply Reply(string body) => new(Encoding.UTF8.GetBytes(body), null, null);

    [Fact]
    public void A_reply_goes_to_the_caller_it_correlates_to()
    {
        var calls = new PendingCalls();
        var first = calls.Add("a");
        var second = calls.Add("b");

        calls.TakeMatching("b")!.SetResult(Reply("1"));

        Assert.True(second.Task.IsCompleted);
        Assert.False(first.Task.IsCompleted);
        Assert.Null(calls.TakeMatching("b"));
        Assert.Null(calls.TakeMatching(null));
        Assert.Equal(1, calls.Count);
    }

    [Fact]
    public void A_removed_call_is_no_longer_matched()
    {
        var calls = new PendingCalls();
        calls.Add("a");

        Assert.True(calls.Remove("a"));
        Assert.False(calls.Remove("a"));
        Assert.Null(calls.TakeMatching("a"));
        Assert.Null(calls.TakeOldest());
    }

    [Fact]
    public void The_oldest_caller_is_who_an_oldest_waiter_policy_serves()
    {
        var calls = new PendingCalls();
        var first = calls.Add("a");
        calls.Add("b");

        Assert.Same(first, calls.TakeOldest());
        Assert.Null(calls.TakeMatching("a"));
        Assert.Equal(1, calls.Count);
    }

    [Fact]
    public async Task Failing_all_ends_every_waiting_call()
    {
        var calls = new PendingCalls();
        var waiter = calls.Add("a");

        calls.FailAll(new ObjectDisposedException("requester"));

        await Assert.ThrowsAsync<ObjectDisposedException>(() => waiter.Task);
        Assert.Equal(0, calls.Count);
    }
}

public class PendingGatherTests
{
    private static readonly RequesterPolicy OneIfMissing = new() { GatherMissingCount = GatherMissingCount.One };

    private static byte[] Json(int value) => Encoding.UTF8.GetBytes(value.ToString());

    [Fact]
    public async Task With_a_count_it_resolves_as_soon_as_the_count_is_reached()
    {
        var seen = new List<int>();
        var gather = new PendingGather<int>("m", expectedReplyCount: 2, seen.Add);

        Assert.Equal(Offered.Kept, gather.Offer(Json(1)));
        Assert.False(gather.Ended.IsCompleted);
        Assert.Equal(Offered.Kept, gather.Offer(Json(2)));

        Assert.Equal(GatherEnd.Resolved, await gather.Ended);
        Assert.Equal([1, 2], gather.Replies);
        Assert.Equal([1, 2], seen);
    }

    [Fact]
    public async Task With_a_count_a_shortfall_at_the_timeout_keeps_the_partial_replies()
    {
        var gather = new PendingGather<int>("m", expectedReplyCount: 3, onReply: null);
        gather.Offer(Json(7));

        gather.TimeoutElapsed();

        Assert.Equal(GatherEnd.Shortfall, await gather.Ended);
        Assert.Equal([7], gather.Replies);
    }

    [Fact]
    public async Task Without_a_count_it_resolves_at_the_timeout_even_with_nothing()
    {
        var gather = new PendingGather<int>("m", expectedReplyCount: null, onReply: null);
        gather.Offer(Json(1));
        gather.Offer(Json(2));
        Assert.False(gather.Ended.IsCompleted);

        gather.TimeoutElapsed();

        Assert.Equal(GatherEnd.Resolved, await gather.Ended);
        Assert.Equal([1, 2], gather.Replies);

        var empty = new PendingGather<int>("n", expectedReplyCount: null, onReply: null);
        empty.TimeoutElapsed();
        Assert.Equal(GatherEnd.Resolved, await empty.Ended);
        Assert.Empty(empty.Replies);
    }

    [Fact]
    public void Replies_after_the_end_are_refused()
    {
        var gather = new PendingGather<int>("m", expectedReplyCount: 1, onReply: null);
        Assert.Equal(Offered.Kept, gather.Offer(Json(1)));

        Assert.Equal(Offered.Ended, gather.Offer(Json(2)));
        Assert.Equal([1], gather.Replies);
    }

    [Fact]
    public async Task Without_early_resolve_it_waits_for_the_timeout_with_the_count_reached()
    {
        var gather = new PendingGather<int>("m", expectedReplyCount: 2, onReply: null, new RequesterPolicy { GatherResolvesEarly = false });
        gather.Offer(Json(1));
        gather.Offer(Json(2));
        Assert.False(gather.Ended.IsCompleted);

        gather.TimeoutElapsed();

        Assert.Equal(GatherEnd.Resolved, await gather.Ended);
        Assert.Equal([1, 2], gather.Replies);
    }

    [Fact]
    public async Task A_missing_count_taken_as_one_resolves_at_the_first_reply_and_rejects_an_empty_gather()
    {
        var gather = new PendingGather<int>("m", expectedReplyCount: null, onReply: null, OneIfMissing);
        Assert.Equal(1, gather.ExpectedReplyCount);
        gather.Offer(Json(1));
        Assert.Equal(GatherEnd.Resolved, await gather.Ended);
        Assert.Equal(Offered.Ended, gather.Offer(Json(2)));

        var empty = new PendingGather<int>("n", expectedReplyCount: null, onReply: null, OneIfMissing);
        empty.TimeoutElapsed();
        Assert.Equal(GatherEnd.Shortfall, await empty.Ended);

        var counted = new PendingGather<int>("o", expectedReplyCount: 3, onReply: null, OneIfMissing);
        Assert.Equal(3, counted.ExpectedReplyCount);
    }

    [Fact]
    public void Later_gathers_have_larger_sequence_numbers()
    {
        var first = new PendingGather<int>("a", expectedReplyCount: null, onReply: null);
        var second = new PendingGather<int>("b", expectedReplyCount: null, onReply: null);

        Assert.True(first.Sequence < second.Sequence);
    }

    [Fact]
    public void A_body_that_is_not_a_reply_is_refused()
    {
        var gather = new PendingGather<int>("m", expectedReplyCount: 1, onReply: null);

        Assert.Equal(Offered.NotAReply, gather.Offer([]));
        Assert.False(gather.Ended.IsCompleted);
    }
}

public class JsonCodecTests
{
    private sealed record Quote(string Sku, decimal UnitPrice);

    [Fact]
    public void Bodies_are_camel_case_json()
    {
        var body = JsonCodec.Encode(new Quote("A-1", 2.5m));

        Assert.Equal("""{"sku":"A-1","unitPrice":2.5}""", Encoding.UTF8.GetString(body));
        Assert.Equal(new Quote("A-1", 2.5m), JsonCodec.Decode<Quote>(body));
    }

    [Theory]
    [InlineData("{\"n\":1}", true)]
    [InlineData("[1, 2]", true)]
    [InlineData("\"text\"", true)]
    [InlineData("null", true)]
    [InlineData("not json{", false)]
    [InlineData("", false)]
    [InlineData("{\"n\":1} trailing", false)]
    public void IsJson_tells_well_formed_json_from_anything_else(string body, bool json)
    {
        Assert.Equal(json, JsonCodec.IsJson(Encoding.UTF8.GetBytes(body)));
    }

    [Fact]
    public void An_empty_body_is_a_decode_error()
    {
        Assert.Throws<ReplyDecodeException>(() => JsonCodec.Decode<Quote>([]));
    }
}
