using System.Text;
using RabbitMQ.Client;

namespace Acemq;

/// <summary>Where a responder found the reply address.</summary>
public enum ReplyToSource
{
    Header,
    Native,
}

/// <summary>What the retry policy does with a request whose reply could not be delivered.</summary>
public enum RetryDecision
{
    Requeue,
    DeadLetter,
}

/// <summary>The wire rules that need no broker: header text, reply address, attempts.</summary>
public static class Wire
{
    public const string ReplyToHeader = "acemq-reply-to";
    public const string ErrorHeader = "acemq-error";
    public const string DeadLetterReasonHeader = "acemq-dead-letter-reason";
    public const string ResponseMessageIdHeader = "responseMessageId";

    /// <summary>RabbitMQ's direct reply-to: the broker gives a responder reply_to amq.rabbitmq.reply-to.&lt;token&gt;.</summary>
    public const string DirectReplyToPrefix = "amq.rabbitmq.reply-to.";

    /// <summary>Whether an address is one of RabbitMQ's direct reply-to (RR-14.5: a reply to it is at most once).</summary>
    public static bool IsDirectReplyTo(string address) => address.StartsWith(DirectReplyToPrefix, StringComparison.Ordinal);

    /// <summary>A request's id (RR-4.2, SG-3.1): its message_id, or its correlation_id when it has none.</summary>
    public static string? RequestId(string? messageId, string? correlationId) =>
        string.IsNullOrEmpty(messageId) ? correlationId : messageId;

    /// <summary>An application header named like the AMQP property; only a defective writer puts the type there.</summary>
    internal const string TypeHeader = "type";

    /// <summary>A hop count header only a defective writer adds, as a narrow unsigned integer (WF-2.1).</summary>
    internal const string HopsHeader = "x-acemq-hops";

    public const string DeliveryCountHeader = "x-delivery-count";
    public const string EnginePrefix = "x-acemq-";

    /// <summary>The spec's own header names (acemq-reply-to, acemq-error): application headers, not the engine's.</summary>
    internal const string SpecPrefix = "acemq-";
    public const string JsonContentType = "application/json";
    public const string UndeliverableReplyPrefix = "UndeliverableReply: ";
    public const int ShortStringMax = 255;
    public const int DefaultMaxAttempts = 3;

    /// <summary>
    /// Reads a header as text. RabbitMQ.Client hands long strings over as <c>byte[]</c> and
    /// byte arrays (type <c>x</c>, what Go, Java, amqplib and pika write) as
    /// <see cref="BinaryTableValue"/>; both hold UTF-8. Anything else is not text.
    /// </summary>
    public static string? HeaderText(IDictionary<string, object?>? headers, string name) =>
        headers is not null && headers.TryGetValue(name, out var value) ? Text(value) : null;

    public static string? Text(object? value) => value switch
    {
        byte[] bytes => Encoding.UTF8.GetString(bytes),
        BinaryTableValue binary => Encoding.UTF8.GetString(binary.Bytes ?? []),
        string text => text,
        _ => null,
    };

    /// <summary>An empty string and an absent value mean the same (amqp091-go cannot write "").</summary>
    private static string? NonEmpty(string? value) => string.IsNullOrEmpty(value) ? null : value;

    /// <summary>The reply address of a request: the header first, then the native property (RR-3).</summary>
    public static (string Address, ReplyToSource Source)? ResolveReplyAddress(IDictionary<string, object?>? headers, string? replyTo) =>
        ResolveReplyAddress(headers, replyTo, ResponderPolicy.Default.ReadOrder);

    /// <summary>The reply address found first in <paramref name="readOrder"/>; null when none is there (RR-12).</summary>
    internal static (string Address, ReplyToSource Source)? ResolveReplyAddress(
        IDictionary<string, object?>? headers, string? replyTo, IReadOnlyList<ReplyToSource> readOrder, bool readBytes = true)
    {
        foreach (var source in readOrder)
        {
            var address = NonEmpty(source == ReplyToSource.Header ? HeaderAddress(headers, readBytes) : replyTo);
            if (address is not null)
            {
                return (address, source);
            }
        }

        return null;
    }

    /// <summary>The acemq-reply-to header as text; a byte array (<see cref="BinaryTableValue"/>) only when <paramref name="readBytes"/> (RR-2.2).</summary>
    private static string? HeaderAddress(IDictionary<string, object?>? headers, bool readBytes) =>
        !readBytes && headers is not null && headers.TryGetValue(ReplyToHeader, out var value) && value is BinaryTableValue
            ? null
            : HeaderText(headers, ReplyToHeader);

    /// <summary>The headers a handler is shown: everything but the engine's <c>x-acemq-</c> namespace.</summary>
    /// <summary>
    /// Whether a strict reader would call a reply header unknown: not one of the two the spec
    /// gives a reply, and not an <c>x-</c> header (brokers and clients add those: RabbitMQ.Client 7
    /// puts x-dotnet-pub-seq-no on everything it publishes with confirms).
    /// </summary>
    internal static bool IsUnknownReplyHeader(string name) =>
        name is not ErrorHeader and not ResponseMessageIdHeader && !name.StartsWith("x-", StringComparison.Ordinal);

    public static IReadOnlyDictionary<string, object?> StripEngineHeaders(IDictionary<string, object?>? headers) =>
        StripEngineHeaders(headers, EnginePrefix);

    /// <summary>The headers a handler is shown: everything whose name starts with none of <paramref name="prefixes"/>.</summary>
    internal static IReadOnlyDictionary<string, object?> StripEngineHeaders(IDictionary<string, object?>? headers, params string[] prefixes)
    {
        var shown = new Dictionary<string, object?>(StringComparer.Ordinal);
        if (headers is null)
        {
            return shown;
        }

        foreach (var (name, value) in headers)
        {
            if (!prefixes.Any(prefix => name.StartsWith(prefix, StringComparison.Ordinal)))
            {
                shown[name] = value;
            }
        }

        return shown;
    }

    /// <summary>
    /// The attempt number from the quorum queue's <c>x-delivery-count</c> (absent: 1).
    /// The count may arrive as any integer type, depending on the client and broker; a
    /// value that is no non-negative integer is no count.
    /// </summary>
    public static int Attempt(IDictionary<string, object?>? headers) => Attempt(headers, attemptBase: 1);

    /// <summary>
    /// The attempt number as <c>x-delivery-count</c> (absent or no count: 0) plus
    /// <paramref name="attemptBase"/>; RR-14.3 says the base is 1.
    /// </summary>
    internal static int Attempt(IDictionary<string, object?>? headers, int attemptBase)
    {
        if (headers is null || !headers.TryGetValue(DeliveryCountHeader, out var value) || value is null)
        {
            return attemptBase;
        }

        long count = value switch
        {
            long l => l,
            int i => i,
            short s => s,
            sbyte b => b,
            byte b => b,
            ushort u => u,
            uint u => u,
            ulong u => (long)Math.Min(u, long.MaxValue),
            _ => -1,
        };
        return count < 0 ? attemptBase : (int)Math.Min(count, int.MaxValue - 1) + attemptBase;
    }

    /// <summary>What the retry policy does after attempt <paramref name="attempt"/> failed to deliver its reply (RR-14).</summary>
    public static RetryDecision Retry(int attempt, int maxAttempts = DefaultMaxAttempts) =>
        attempt < maxAttempts ? RetryDecision.Requeue : RetryDecision.DeadLetter;

    /// <summary>The failure text of a handler exception: the unqualified type name and the message.</summary>
    public static string FailureText(Exception exception) => FailureText(exception.GetType().Name, exception.Message);

    /// <summary>The failure text naming the exception by its namespace-qualified type name, where RR-10.2 says unqualified.</summary>
    internal static string QualifiedFailureText(Exception exception) =>
        $"{exception.GetType().FullName ?? exception.GetType().Name}: {exception.Message}";

    /// <summary>
    /// <c>{ExceptionType}: {message}</c> from a type name as any language spells it: the part
    /// after the last <c>.</c>, <c>::</c>, <c>/</c> or <c>$</c>, without a pointer or reference mark (RR-10.2).
    /// </summary>
    public static string FailureText(string typeName, string message)
    {
        var name = typeName.TrimStart('*', '&');
        var start = 0;
        foreach (var separator in new[] { ".", "::", "/", "$" })
        {
            var at = name.LastIndexOf(separator, StringComparison.Ordinal);
            start = Math.Max(start, at < 0 ? 0 : at + separator.Length);
        }

        return $"{name[start..]}: {message}";
    }

    /// <summary>
    /// Refuses a short-string value over 255 bytes of UTF-8: truncating would send an id
    /// that correlates with nothing.
    /// </summary>
    public static void EnsureShortString(string field, string? value)
    {
        if (value is not null && Encoding.UTF8.GetByteCount(value) > ShortStringMax)
        {
            throw new ArgumentException(
                $"{field} is {Encoding.UTF8.GetByteCount(value)} bytes of UTF-8; an AMQP short string holds at most {ShortStringMax}",
                field);
        }
    }

    /// <summary>
    /// Cuts a value to 255 bytes of UTF-8, on a character boundary: what a truncating
    /// policy does where the rule (RR-18, <see cref="EnsureShortString"/>) refuses.
    /// </summary>
    internal static string? TruncateShortString(string? value)
    {
        if (value is null || Encoding.UTF8.GetByteCount(value) <= ShortStringMax)
        {
            return value;
        }

        var bytes = Encoding.UTF8.GetBytes(value);
        var end = ShortStringMax;
        while (end > 0 && (bytes[end] & 0xC0) == 0x80)
        {
            end--;
        }

        return Encoding.UTF8.GetString(bytes, 0, end);
    }

    /// <summary>
    /// The first header whose value is a boolean, a floating-point number, a table or an
    /// array: what a strict reader refuses, though WF-1 says a reader must accept them.
    /// </summary>
    internal static string? FirstStrictlyRefusedHeader(IDictionary<string, object?>? headers) =>
        headers?.FirstOrDefault(h => h.Value is bool or float or double or IDictionary<string, object?> or IList<object?>).Key;

    /// <summary>A fresh message id: the request id for a call or a gather.</summary>
    public static string NewMessageId() => Guid.NewGuid().ToString("N");

    /// <summary>A header value as the long string (<c>S</c>) every reader accepts.</summary>
    internal static byte[] LongString(string value) => Encoding.UTF8.GetBytes(value);
}
