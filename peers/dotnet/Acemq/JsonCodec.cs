using System.Text.Json;

namespace Acemq;

/// <summary>Bodies are UTF-8 JSON, camelCase like the other bindings' records.</summary>
public static class JsonCodec
{
    public static JsonSerializerOptions Options { get; } = new(JsonSerializerDefaults.Web);

    public static byte[] Encode<T>(T value) => JsonSerializer.SerializeToUtf8Bytes(value, Options);

    /// <summary>Whether a body is one well-formed JSON value (whatever its shape).</summary>
    internal static bool IsJson(byte[] body)
    {
        try
        {
            using var document = JsonDocument.Parse(body);
            return true;
        }
        catch (JsonException)
        {
            return false;
        }
    }

    /// <summary>Decodes a body; an empty or malformed one is a <see cref="ReplyDecodeException"/>.</summary>
    public static T Decode<T>(ReadOnlySpan<byte> body)
    {
        try
        {
            return JsonSerializer.Deserialize<T>(body, Options)!;
        }
        catch (JsonException e)
        {
            throw new ReplyDecodeException(e.Message, e);
        }
    }
}
