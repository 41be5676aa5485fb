using System.Text;
using RabbitMQ.Client;

namespace Acemq.Tests;

/// <summary>
/// The pure decisions behind the catalogue mutants' policy knobs, at the spec's default and
/// at the value that breaks it (RR-1.3, RR-2.2, RR-5.2, RR-10.2, RR-8.2/SG-8.1). What needs
/// a broker (content types, failure bodies, retries, acks) the suite's scenarios check.
/// </summary>
public class PolicyKnobTests
{
    [Fact]
    public void Reply_to_names_the_reply_queue_the_header_names_unless_stale()
    {
        var right = Requester.RequestProperties(RequesterPolicy.Default, "m", "m", "amq.gen-1", type: null, headers: null);
        Assert.Equal("amq.gen-1", right.ReplyTo);
        Assert.Equal("amq.gen-1", right.Headers![Wire.ReplyToHeader]);

        var stale = Requester.RequestProperties(
            RequesterPolicy.Default with { NativeAddress = NativeAddress.Stale }, "m", "m", "amq.gen-1", type: null, headers: null);
        Assert.Equal("amq.gen-1.stale", stale.ReplyTo);
        Assert.Equal("amq.gen-1", stale.Headers![Wire.ReplyToHeader]);

        var empty = Requester.RequestProperties(
            RequesterPolicy.Default with { NativeAddress = NativeAddress.Empty }, "m", "m", "amq.gen-1", type: null, headers: null);
        Assert.Equal("", empty.ReplyTo);
        Assert.True(empty.IsReplyToPresent());
        Assert.Equal("amq.gen-1", empty.Headers![Wire.ReplyToHeader]);

        var headerOnly = Requester.RequestProperties(
            RequesterPolicy.Default with { WriteNativeAddress = false }, "m", "m", "amq.gen-1", type: null, headers: null);
        Assert.Null(headerOnly.ReplyTo);
        Assert.Equal("amq.gen-1", headerOnly.Headers![Wire.ReplyToHeader]);
    }

    [Fact]
    public void A_hop_count_header_is_added_as_an_unsigned_byte_only_by_the_policy()
    {
        var right = Requester.RequestProperties(RequesterPolicy.Default, "m", "m", "amq.gen-1", type: null, headers: null);
        Assert.False(right.Headers!.ContainsKey(Wire.HopsHeader));
        var narrow = Requester.RequestProperties(
            RequesterPolicy.Default with { NarrowIntHeader = true }, "m", "m", "amq.gen-1", type: null, headers: null);
        Assert.IsType<byte>(narrow.Headers![Wire.HopsHeader]);
        Assert.Equal((byte)1, narrow.Headers[Wire.HopsHeader]);
    }

    [Fact]
    public void Only_headers_not_named_x_and_not_the_specs_are_unknown_to_a_strict_reader()
    {
        Assert.False(Wire.IsUnknownReplyHeader(Wire.ErrorHeader));
        Assert.False(Wire.IsUnknownReplyHeader(Wire.ResponseMessageIdHeader));
        Assert.False(Wire.IsUnknownReplyHeader("x-dotnet-pub-seq-no"));
        Assert.True(Wire.IsUnknownReplyHeader("traceparent"));
    }

    [Fact]
    public void A_byte_array_reply_address_is_read_unless_the_policy_ignores_it()
    {
        var headers = new Dictionary<string, object?> { [Wire.ReplyToHeader] = new BinaryTableValue(Encoding.UTF8.GetBytes("bytes-q")) };
        var order = ResponderPolicy.Default.ReadOrder;
        Assert.Equal(("bytes-q", ReplyToSource.Header), Wire.ResolveReplyAddress(headers, "native-q", order));
        Assert.Equal(("native-q", ReplyToSource.Native), Wire.ResolveReplyAddress(headers, "native-q", order, readBytes: false));
        Assert.Null(Wire.ResolveReplyAddress(headers, null, order, readBytes: false));

        // A long string (how RabbitMQ.Client hands over S) is text either way.
        var longString = new Dictionary<string, object?> { [Wire.ReplyToHeader] = Encoding.UTF8.GetBytes("long-q") };
        Assert.Equal(("long-q", ReplyToSource.Header), Wire.ResolveReplyAddress(longString, "native-q", order, readBytes: false));
    }

    [Fact]
    public void Only_the_engine_prefix_is_stripped_unless_the_policy_strips_every_x_header()
    {
        var headers = new Dictionary<string, object?> { ["x-acemq-trace"] = "t", ["x-delivery-count"] = 1L, ["tenant"] = "a" };
        Assert.Equal(["tenant", "x-delivery-count"], Wire.StripEngineHeaders(headers, ResponderPolicy.Default.StripPrefix).Keys.Order());
        Assert.Equal(["tenant"], Wire.StripEngineHeaders(headers, "x-").Keys.ToArray());
    }

    [Fact]
    public void A_qualified_failure_text_names_the_namespace()
    {
        Assert.Equal("InvalidOperationException: no", Wire.FailureText(new InvalidOperationException("no")));
        Assert.Equal("System.InvalidOperationException: no", Wire.QualifiedFailureText(new InvalidOperationException("no")));
    }

    [Fact]
    public void Recent_ids_remember_the_last_ones_only()
    {
        var ids = new RecentIds(2);
        ids.Add("a");
        ids.Add("b");
        ids.Add("b");
        Assert.True(ids.Contains("a"));
        ids.Add("c");
        Assert.False(ids.Contains("a"));
        Assert.True(ids.Contains("b") && ids.Contains("c"));
    }

    [Fact]
    public void Every_new_knob_defaults_to_the_spec()
    {
        var requester = RequesterPolicy.Default;
        Assert.True(requester is { NarrowIntHeader: false, CountUnmatched: true, CountGatherUnmatched: true, ExclusiveReplyQueue: true, PublishCopies: 1, MultiCopiesWithoutCount: 1 });
        Assert.Equal((UnmatchedReply.Drop, TimeoutOutcome.Timeout, UnknownReplyHeaders.Ignore),
            (requester.UnmatchedReply, requester.TimeoutOutcome, requester.UnknownReplyHeaders));

        var responder = ResponderPolicy.Default;
        Assert.Equal(Wire.JsonContentType, responder.ReplyContentType);
        Assert.True(responder is { RetryFailures: false, CountUnanswerable: true, BytesAddress: BytesAddress.Accept });
        Assert.Equal((FailureBody.Empty, ErrorTypeName.Simple, LastAttempt.DeadLetter), (responder.FailureBody, responder.ErrorTypeName, responder.LastAttempt));
    }

    [Fact]
    public void Request_queue_is_quorum_unless_classic_if_missing_finds_it_missing()
    {
        Assert.Equal(RequestQueue.Quorum, ResponderPolicy.Default.RequestQueue);
        Assert.Equal("quorum", Responder.RequestQueueArguments(RequestQueue.Quorum, exists: true)!["x-queue-type"]);
        Assert.Null(Responder.RequestQueueArguments(RequestQueue.ClassicIfMissing, exists: true));
        Assert.Empty(Responder.RequestQueueArguments(RequestQueue.ClassicIfMissing, exists: false)!);
    }
}
