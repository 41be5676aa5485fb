using System.Text;
using RabbitMQ.Client;

namespace Acemq;

/// <summary>Where a responder found the reply address.</summary>
public enum ReplyToSource
{
    Header,
    Native,
}

/// <summary>The wire rules that need no broker: header text, reply address, attempts.</summary>
public static class Wire
{
    public const string ReplyToHeader = "acemq-reply-to";
    public const string ErrorHeader = "acemq-error";
    public const string DeadLetterReasonHeader = "acemq-dead-letter-reason";
    public const string ResponseMessageIdHeader = "responseMessageId";
    public const string DeliveryCountHeader = "x-delivery-count";
    public const string EnginePrefix = "x-acemq-";
    public const string JsonContentType = "application/json";
    public const string UndeliverableReplyPrefix = "UndeliverableReply: ";
    public const int ShortStringMax = 255;

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

    /// <summary>
    /// The reply address of a request: the header first, then the native property, or only
    /// the native property for 0.3.0. <paramref name="nativeFirst"/> is the mutant order.
    /// </summary>
    public static (string Address, ReplyToSource Source)? ResolveReplyAddress(
        IDictionary<string, object?>? headers, string? replyTo, Profile profile, bool nativeFirst = false)
    {
        var native = NonEmpty(replyTo);
        if (profile.NativeReplyToOnly())
        {
            return native is null ? null : (native, ReplyToSource.Native);
        }

        var header = NonEmpty(HeaderText(headers, ReplyToHeader));
        if (nativeFirst && native is not null)
        {
            return (native, ReplyToSource.Native);
        }

        if (header is not null)
        {
            return (header, ReplyToSource.Header);
        }

        return native is null ? null : (native, ReplyToSource.Native);
    }

    /// <summary>The headers a handler is shown: everything but the engine's <c>x-acemq-</c> namespace.</summary>
    public static IReadOnlyDictionary<string, object?> StripEngineHeaders(IDictionary<string, object?>? headers)
    {
        var shown = new Dictionary<string, object?>(StringComparer.Ordinal);
        if (headers is null)
        {
            return shown;
        }

        foreach (var (name, value) in headers)
        {
            if (!name.StartsWith(EnginePrefix, StringComparison.Ordinal))
            {
                shown[name] = value;
            }
        }

        return shown;
    }

    /// <summary>
    /// The attempt number from the quorum queue's <c>x-delivery-count</c> (absent: 1).
    /// The count may arrive as any integer type, depending on the client and broker.
    /// </summary>
    public static int Attempt(IDictionary<string, object?>? headers)
    {
        if (headers is null || !headers.TryGetValue(DeliveryCountHeader, out var value) || value is null)
        {
            return 1;
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
            _ => Text(value) is { } text && long.TryParse(text, out var parsed) ? parsed : 0,
        };
        return (int)Math.Clamp(count + 1, 1, int.MaxValue);
    }

    /// <summary>The failure text of a handler exception: the unqualified type name and the message.</summary>
    public static string FailureText(Exception exception) => $"{exception.GetType().Name}: {exception.Message}";

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
    /// The <c>truncates-short-strings</c> defect (breaks RR-18): cuts a value to 255 bytes
    /// of UTF-8, on a character boundary, where <see cref="EnsureShortString"/> refuses it.
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
    /// The <c>strict-header-types</c> defect (breaks WF-1): the first header whose value is
    /// a boolean, a floating-point number, a table or an array, types a reader must accept.
    /// </summary>
    internal static string? FirstStrictlyRefusedHeader(IDictionary<string, object?>? headers) =>
        headers?.FirstOrDefault(h => h.Value is bool or float or double or IDictionary<string, object?> or IList<object?>).Key;

    /// <summary>A fresh message id: the request id for a call or a gather.</summary>
    public static string NewMessageId() => Guid.NewGuid().ToString("N");

    /// <summary>A header value as the long string (<c>S</c>) every reader accepts.</summary>
    internal static byte[] LongString(string value) => Encoding.UTF8.GetBytes(value);
}
