using System.Text;
using RabbitMQ.Client;

namespace Acemq.Tests;

public class WireTests
{
    private static Dictionary<string, object?> Headers(params (string Name, object? Value)[] entries) =>
        entries.ToDictionary(e => e.Name, e => e.Value);

    // The shared cases are in catalogue/wire-vectors.json (WireVectorTests); these are the
    // things only RabbitMQ.Client does: .NET strings as header values, and integer types
    // the vectors' notation does not name.

    [Fact]
    public void A_dotnet_string_header_is_text_and_no_headers_is_none()
    {
        Assert.Equal("plain", Wire.HeaderText(Headers(("text", "plain")), "text"));
        Assert.Null(Wire.HeaderText(null, "absent"));
        Assert.Equal(("q", ReplyToSource.Header), Wire.ResolveReplyAddress(Headers((Wire.ReplyToHeader, "q")), "n"));
    }

    [Fact]
    public void A_request_without_message_id_is_known_by_its_correlation_id_and_direct_reply_to_is_recognised()
    {
        // RR-4.2, SG-3.1: a tutorial caller sends its own correlation_id and no message_id.
        Assert.Equal("m-1", Wire.RequestId("m-1", "c-1"));
        Assert.Equal("1", Wire.RequestId(null, "1"));
        Assert.Equal("2", Wire.RequestId("", "2"));
        Assert.Null(Wire.RequestId(null, null));
        // RR-14.5: the broker hands a responder amq.rabbitmq.reply-to.<token>.
        Assert.True(Wire.IsDirectReplyTo("amq.rabbitmq.reply-to.g1h2AA5y.H8JZ"));
        Assert.False(Wire.IsDirectReplyTo("amq.gen-1"));
    }

    [Theory]
    [InlineData((sbyte)1, 2)]
    [InlineData((short)6, 7)]
    [InlineData(9u, 10)]
    [InlineData((ushort)3, 4)]
    [InlineData(ulong.MaxValue, int.MaxValue)]
    public void Attempt_is_the_delivery_count_plus_one_whatever_its_integer_type(object? count, int attempt)
    {
        var headers = Headers((Wire.DeliveryCountHeader, count));

        Assert.Equal(attempt, Wire.Attempt(headers));
    }

    [Fact]
    public void Failure_text_of_an_exception_names_its_unqualified_type()
    {
        Assert.Equal("InvalidOperationException: no price", Wire.FailureText(new InvalidOperationException("no price")));
        Assert.Equal("NestedFailure: x", Wire.FailureText(new NestedFailure("x")));
    }

    [Fact]
    public void Truncating_cuts_to_255_bytes_on_a_character_boundary()
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
    public void A_strict_reader_names_the_first_boolean_float_table_or_array_header()
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
