using System.Text;
using RabbitMQ.Client;

namespace Acemq.Tests;

public class WireTests
{
    private static Dictionary<string, object?> Headers(params (string Name, object? Value)[] entries) =>
        entries.ToDictionary(e => e.Name, e => e.Value);

    [Fact]
    public void HeaderText_reads_long_strings_and_byte_arrays()
    {
        var headers = Headers(
            ("longstr", Encoding.UTF8.GetBytes("amq.gen-é")),
            ("bytes", new BinaryTableValue(Encoding.UTF8.GetBytes("amq.gen-x"))),
            ("text", "plain"),
            ("number", 42L));

        Assert.Equal("amq.gen-é", Wire.HeaderText(headers, "longstr"));
        Assert.Equal("amq.gen-x", Wire.HeaderText(headers, "bytes"));
        Assert.Equal("plain", Wire.HeaderText(headers, "text"));
        Assert.Null(Wire.HeaderText(headers, "number"));
        Assert.Null(Wire.HeaderText(headers, "absent"));
        Assert.Null(Wire.HeaderText(null, "absent"));
    }

    [Fact]
    public void Reply_address_is_read_from_the_header_first()
    {
        var headers = Headers((Wire.ReplyToHeader, Encoding.UTF8.GetBytes("from-header")));

        Assert.Equal(("from-header", ReplyToSource.Header), Wire.ResolveReplyAddress(headers, "from-native", Profile.Current));
        Assert.Equal(("from-native", ReplyToSource.Native), Wire.ResolveReplyAddress(null, "from-native", Profile.Current));
    }

    [Fact]
    public void Empty_reply_addresses_count_as_absent()
    {
        var emptyHeader = Headers((Wire.ReplyToHeader, Array.Empty<byte>()));

        Assert.Equal(("native", ReplyToSource.Native), Wire.ResolveReplyAddress(emptyHeader, "native", Profile.Current));
        Assert.Null(Wire.ResolveReplyAddress(emptyHeader, "", Profile.Current));
        Assert.Null(Wire.ResolveReplyAddress(null, null, Profile.Current));
    }

    [Fact]
    public void Profile_0_3_0_reads_only_the_native_property()
    {
        var headers = Headers((Wire.ReplyToHeader, Encoding.UTF8.GetBytes("from-header")));

        Assert.Null(Wire.ResolveReplyAddress(headers, null, Profile.V0_3_0));
        Assert.Equal(("n", ReplyToSource.Native), Wire.ResolveReplyAddress(headers, "n", Profile.V0_3_0));
        Assert.Equal(("from-header", ReplyToSource.Header), Wire.ResolveReplyAddress(headers, "n", Profile.V0_7_12));
    }

    [Fact]
    public void Native_first_mutant_prefers_the_native_property()
    {
        var headers = Headers((Wire.ReplyToHeader, Encoding.UTF8.GetBytes("h")));

        Assert.Equal(("n", ReplyToSource.Native), Wire.ResolveReplyAddress(headers, "n", Profile.Current, nativeFirst: true));
        Assert.Equal(("h", ReplyToSource.Header), Wire.ResolveReplyAddress(headers, null, Profile.Current, nativeFirst: true));
    }

    [Fact]
    public void Engine_headers_are_stripped_and_the_rest_pass()
    {
        var shown = Wire.StripEngineHeaders(Headers(
            ("x-acemq-secret", "s"), ("x-acemq-", "s"), (Wire.ReplyToHeader, "r"), ("x-custom", 1L), ("x-acemqish", "kept")));

        Assert.Equal(["acemq-reply-to", "x-acemqish", "x-custom"], shown.Keys.Order(StringComparer.Ordinal));
    }

    [Theory]
    [InlineData(null, 1)]
    [InlineData(0L, 1)]
    [InlineData(2L, 3)]
    [InlineData(2, 3)]
    [InlineData((sbyte)1, 2)]
    [InlineData((byte)4, 5)]
    [InlineData((short)6, 7)]
    [InlineData(9u, 10)]
    public void Attempt_is_the_delivery_count_plus_one_whatever_its_integer_type(object? count, int attempt)
    {
        var headers = count is null ? Headers() : Headers((Wire.DeliveryCountHeader, count));

        Assert.Equal(attempt, Wire.Attempt(headers));
    }

    [Fact]
    public void Failure_text_names_the_unqualified_type()
    {
        Assert.Equal("InvalidOperationException: no price", Wire.FailureText(new InvalidOperationException("no price")));
        Assert.Equal("NestedFailure: x", Wire.FailureText(new NestedFailure("x")));
    }

    [Fact]
    public void Short_strings_over_255_bytes_are_refused_not_truncated()
    {
        Wire.EnsureShortString("message_id", new string('a', 255));
        Wire.EnsureShortString("message_id", null);

        Assert.Throws<ArgumentException>(() => Wire.EnsureShortString("message_id", new string('a', 256)));

        // 128 two-byte characters: 128 characters, 256 bytes.
        Assert.Throws<ArgumentException>(() => Wire.EnsureShortString("correlation_id", new string('é', 128)));
    }

    [Fact]
    public void Truncating_mutant_cuts_to_255_bytes_on_a_character_boundary()
    {
        Assert.Null(Wire.TruncateShortString(null));
        Assert.Equal("short", Wire.TruncateShortString("short"));
        Assert.Equal(new string('c', 255), Wire.TruncateShortString(new string('c', 300)));

        // Two-byte characters: byte 255 would split the 128th, so it is cut before it (254 bytes).
        Assert.Equal(new string('é', 127), Wire.TruncateShortString(new string('é', 200)));
        Assert.Equal("a" + new string('é', 127), Wire.TruncateShortString("a" + new string('é', 200)));

        // Four-byte characters (surrogate pairs in .NET) are never split either.
        var emoji = Wire.TruncateShortString(string.Concat(Enumerable.Repeat("\U0001F600", 70)))!;
        Assert.Equal(252, Encoding.UTF8.GetByteCount(emoji));
        Assert.Equal(126, emoji.Length);
    }

    [Fact]
    public void Strict_header_mutant_names_the_first_boolean_float_table_or_array_header()
    {
        var accepted = Headers(
            ("s", Encoding.UTF8.GetBytes("t")),
            ("x", new BinaryTableValue([1])),
            ("l", 9000000000L),
            ("i", -7),
            ("b", (byte)5),
            ("dec", 1.5m),
            ("ts", new AmqpTimestamp(0)),
            ("none", null));
        Assert.Null(Wire.FirstStrictlyRefusedHeader(accepted));
        Assert.Null(Wire.FirstStrictlyRefusedHeader(null));

        Assert.Equal("flag", Wire.FirstStrictlyRefusedHeader(Headers(("s", "t"), ("flag", true), ("ratio", 0.25))));
        Assert.Equal("f", Wire.FirstStrictlyRefusedHeader(Headers(("f", 0.5f))));
        Assert.Equal("d", Wire.FirstStrictlyRefusedHeader(Headers(("d", 0.25))));
        Assert.Equal("table", Wire.FirstStrictlyRefusedHeader(Headers(("table", new Dictionary<string, object?> { ["k"] = "v" }))));
        Assert.Equal("list", Wire.FirstStrictlyRefusedHeader(Headers(("list", new List<object?> { "a", 2L }))));
    }

    [Fact]
    public void Message_ids_are_fresh()
    {
        Assert.NotEqual(Wire.NewMessageId(), Wire.NewMessageId());
    }

    private sealed class NestedFailure(string message) : Exception(message);
}
