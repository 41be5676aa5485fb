using System.Text;
using System.Text.Json.Nodes;

namespace Acemq.Peer;

/// <summary>
/// The protocol's stdout: one JSON object per line, written whole under a lock and flushed,
/// because answers and events come from many tasks at once.
/// </summary>
internal sealed class Output(Stream stdout)
{
    private readonly object _gate = new();
    private readonly StreamWriter _writer = new(stdout, new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { NewLine = "\n" };

    public void Write(JsonObject message)
    {
        var line = message.ToJsonString();
        lock (_gate)
        {
            _writer.Write(line);
            _writer.Write('\n');
            _writer.Flush();
        }
    }

    public static void Log(string message) => Console.Error.WriteLine($"[dotnet-peer {DateTime.UtcNow:HH:mm:ss.fff}] {message}");
}
