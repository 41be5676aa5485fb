using System.Text;
using System.Text.Json;
using RabbitMQ.Client;

namespace Acemq.Tests;

/// <summary>
/// Runs every case of catalogue/wire-vectors.json (shared by every binding) through this
/// binding's pure wire functions. A failure names the group and the case.
/// </summary>
public class WireVectorTests
{
    private static readonly JsonElement Vectors = Load();

    private static IEnumerable<string> GroupNames() =>
        Vectors.EnumerateObject().Where(g => g.Value.ValueKind == JsonValueKind.Object).Select(g => g.Name);

    public static TheoryData<string> Groups() => new(GroupNames());

    [Fact]
    public void Every_group_of_the_file_is_run_here()
    {
        Assert.Equal(
            ["delivery_attempt", "failure_text", "header_string", "reply_address", "retry_decision", "short_string", "strip_engine_headers"],
            GroupNames().Order(StringComparer.Ordinal));
    }

    [Theory]
    [MemberData(nameof(Groups))]
    public void Every_case_holds(string group)
    {
        var cases = Vectors.GetProperty(group).GetProperty("cases").EnumerateArray().ToList();
        Assert.NotEmpty(cases);
        var failures = new List<string>();
        foreach (var c in cases)
        {
            var name = c.GetProperty("name").GetString()!;
            try
            {
                Check(group, c);
            }
            catch (Exception e)
            {
                failures.Add($"{group} / {name}: {e.Message}");
            }
        }

        Assert.True(failures.Count == 0, string.Join("\n", failures));
    }

    private static void Check(string group, JsonElement c)
    {
        switch (group)
        {
            case "header_string":
                var headers = c.TryGetProperty("value", out var value) ? new Dictionary<string, object?> { ["h"] = Header(value) } : [];
                Assert.Equal(Optional(c, "expect"), Wire.HeaderText(headers, "h"));
                break;
            case "reply_address":
                var order = c.TryGetProperty("read_order", out var o)
                    ? o.EnumerateArray().Select(s => s.GetString() == "header" ? ReplyToSource.Header : ReplyToSource.Native).ToList()
                    : ResponderPolicy.Default.ReadOrder;
                var found = Wire.ResolveReplyAddress(Headers(c), Optional(c, "reply_to"), order);
                var expect = c.GetProperty("expect");
                if (expect.ValueKind == JsonValueKind.Null)
                {
                    Assert.Null(found);
                }
                else
                {
                    Assert.Equal(expect.GetProperty("address").GetString(), found?.Address);
                    Assert.Equal(expect.GetProperty("source").GetString(), found?.Source.ToString().ToLowerInvariant());
                }

                break;
            case "strip_engine_headers":
                Assert.Equal(
                    c.GetProperty("kept").EnumerateArray().Select(k => k.GetString()!).Order(StringComparer.Ordinal),
                    Wire.StripEngineHeaders(Headers(c)).Keys.Order(StringComparer.Ordinal));
                break;
            case "failure_text":
                Assert.Equal(
                    c.GetProperty("expect").GetString(),
                    Wire.FailureText(c.GetProperty("type").GetString()!, c.GetProperty("message").GetString()!));
                break;
            case "delivery_attempt":
                Assert.Equal(c.GetProperty("expect").GetInt32(), Wire.Attempt(Headers(c)));
                break;
            case "retry_decision":
                var attempt = c.GetProperty("attempt").GetInt32();
                var decision = c.TryGetProperty("max_attempts", out var max) ? Wire.Retry(attempt, max.GetInt32()) : Wire.Retry(attempt);
                Assert.Equal(c.GetProperty("expect").GetString(), decision == RetryDecision.Requeue ? "requeue" : "dead_letter");
                break;
            case "short_string":
                var text = (string)PlainValue(c.GetProperty("value"));
                var refused = Record.Exception(() => Wire.EnsureShortString("message_id", text)) is ArgumentException;
                Assert.Equal(c.GetProperty("expect").GetString(), refused ? "refused" : "accepted");
                break;
            default:
                throw new InvalidOperationException($"no check for group {group}");
        }
    }

    private static string? Optional(JsonElement c, string field) =>
        c.TryGetProperty(field, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    private static Dictionary<string, object?>? Headers(JsonElement c) =>
        c.TryGetProperty("headers", out var h) ? h.EnumerateObject().ToDictionary(p => p.Name, p => Header(p.Value)) : null;

    /// <summary>
    /// The probe's typed notation as RabbitMQ.Client delivers it: a long string (S) arrives
    /// as <c>byte[]</c>, a byte array (x) as <see cref="BinaryTableValue"/>, b as sbyte.
    /// </summary>
    private static object? Header(JsonElement value)
    {
        if (value.ValueKind == JsonValueKind.String)
        {
            return Encoding.UTF8.GetBytes(value.GetString()!);
        }

        var (kind, v) = Single(value);
        return kind switch
        {
            "bytes" => new BinaryTableValue(Encoding.UTF8.GetBytes(v.GetString()!)),
            "long" => v.GetInt64(),
            "int" => v.GetInt32(),
            "byte" => (sbyte)v.GetInt32(),
            "bool" => v.GetBoolean(),
            "double" => v.GetDouble(),
            "table" => v.EnumerateObject().ToDictionary(p => p.Name, p => Header(p.Value)),
            "array" => v.EnumerateArray().Select(Header).ToList(),
            "repeat" => Encoding.UTF8.GetBytes((string)PlainValue(value)),
            _ => throw new InvalidOperationException($"unknown header notation '{kind}'"),
        };
    }

    /// <summary>A plain string value: as given, or <c>{"repeat": s, "times": n}</c>.</summary>
    private static object PlainValue(JsonElement value) =>
        value.ValueKind == JsonValueKind.String
            ? value.GetString()!
            : string.Concat(Enumerable.Repeat(value.GetProperty("repeat").GetString(), value.GetProperty("times").GetInt32()));

    private static (string Kind, JsonElement Value) Single(JsonElement value)
    {
        var first = value.EnumerateObject().First();
        return (first.Name, first.Value);
    }

    private static JsonElement Load()
    {
        using var document = JsonDocument.Parse(File.ReadAllText(Catalogue.File("wire-vectors.json", "ACEMQ_WIRE_VECTORS")));
        return document.RootElement.Clone();
    }
}

/// <summary>Finds a file of the repository's catalogue/ folder by walking up from the test's directory.</summary>
internal static class Catalogue
{
    public static string File(string name, string? environment = null)
    {
        if (environment is not null && Environment.GetEnvironmentVariable(environment) is { Length: > 0 } given)
        {
            return given;
        }

        foreach (var start in new[] { AppContext.BaseDirectory, Directory.GetCurrentDirectory() })
        {
            for (var dir = new DirectoryInfo(start); dir is not null; dir = dir.Parent)
            {
                var candidate = Path.Combine(dir.FullName, "catalogue", name);
                if (System.IO.File.Exists(candidate))
                {
                    return candidate;
                }
            }
        }

        throw new FileNotFoundException($"catalogue/{name} not found above {AppContext.BaseDirectory}");
    }
}
