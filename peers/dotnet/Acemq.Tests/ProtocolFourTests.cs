using System.Collections;
using System.Reflection;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Acemq.Peer;
using YamlDotNet.RepresentationModel;

namespace Acemq.Tests;

/// <summary>
/// Peer protocol 4 in the adapter: hello names the policy records' properties as knobs, a
/// command's policy is set on them property by property (an unknown knob or value refused,
/// naming it), and events: false writes no event. No broker: a policy is resolved before any
/// connection is made.
/// </summary>
public class ProtocolFourTests
{
    /// <summary>Nothing listens there: a command that got as far as connecting would fail otherwise.</summary>
    private const string NoBroker = "amqp://guest:guest@127.0.0.1:1/none";

    private readonly MemoryStream _written = new();

    [Fact]
    public async Task Hello_names_exactly_the_policy_records_properties_as_knobs_and_no_catalogue_names()
    {
        var answer = await HelloAsync(new PeerHost(new Output(_written)), "[1, 2, 3, 4]");
        Assert.Equal(4, (int)answer["protocol"]!);
        var knobs = answer["knobs"]!.AsObject();
        Assert.Equal(PropertyKnobs(typeof(RequesterPolicy)), Strings(knobs["requester"]));
        Assert.Equal(PropertyKnobs(typeof(ResponderPolicy)), Strings(knobs["responder"]));
        Assert.False(answer.ContainsKey("profiles"));
        Assert.False(answer.ContainsKey("mutants"));
        Assert.False(answer.ContainsKey("unreachable"));
    }

    [Fact]
    public async Task An_older_hello_gets_the_binding_as_it_ships()
    {
        var answer = await HelloAsync(new PeerHost(new Output(_written)), "[1, 2, 3]");
        Assert.Equal(3, (int)answer["protocol"]!);
        Assert.Equal(["current"], Strings(answer["profiles"]));
        Assert.Empty(Strings(answer["mutants"]));
        Assert.False(answer.ContainsKey("knobs"));
    }

    [Fact]
    public void Every_knob_given_as_json_sets_its_property_and_no_other()
    {
        AppliedPropertyByProperty(RequesterPolicy.Default);
        AppliedPropertyByProperty(ResponderPolicy.Default);
    }

    [Fact]
    public void No_policy_is_the_binding_as_it_ships()
    {
        Assert.Equal(RequesterPolicy.Default, PolicyKnobs.Apply<RequesterPolicy>(null));
        // By value: ReadOrder is a list, which a record compares by reference.
        Assert.Equal(Knobs(ResponderPolicy.Default), Knobs(PolicyKnobs.Apply<ResponderPolicy>([])));
    }

    [Theory]
    [InlineData("requester", """{"write_header_adress": false}""", "write_header_adress")]
    [InlineData("requester", """{"strip_engine_headers": false}""", "strip_engine_headers")] // a responder knob
    [InlineData("requester", """{"match_replies_by": "luck"}""", "match_replies_by")]
    [InlineData("requester", """{"count_timeouts": "no"}""", "count_timeouts")]
    [InlineData("requester", """{"default_timeout_ms": 1.5}""", "default_timeout_ms")]
    [InlineData("responder", """{"read_order": ["nowhere"]}""", "read_order")]
    [InlineData("responder", """{"strip_prefix": null}""", "strip_prefix")]
    public void An_unknown_knob_or_a_value_its_property_cannot_take_is_refused_naming_it(string side, string policy, string knob)
    {
        var values = JsonNode.Parse(policy)!.AsObject();
        var error = Assert.Throws<ArgumentException>(() =>
        {
            _ = side == "requester" ? PolicyKnobs.Apply<RequesterPolicy>(values) : (object)PolicyKnobs.Apply<ResponderPolicy>(values);
        });
        Assert.Contains(knob, error.Message);
    }

    [Fact]
    public async Task Requester_open_responder_start_and_load_refuse_a_knob_naming_it_before_connecting()
    {
        var host = new PeerHost(new Output(_written));
        await HelloAsync(host, "[1, 2, 3, 4]");
        string[] commands =
        [
            """{"id": 2, "op": "requester.open", "name": "q", "profile": "current", "mutant": null, "policy": {"write_header_address": false, "no_such_knob": 1}}""",
            """{"id": 3, "op": "responder.start", "name": "r", "queue": "q", "behavior": {"reply": "echo"}, "policy": {"strip_engine_headers": "sometimes"}}""",
            """{"id": 4, "op": "load", "client": "binding", "routing_key": "q", "requests": 1, "in_flight": 1, "timeout_ms": 1000, "policy": {"match_replies_by": "luck"}}""",
        ];
        string[] knobs = ["no_such_knob", "strip_engine_headers", "match_replies_by"];
        foreach (var (command, knob) in commands.Zip(knobs))
        {
            await host.DispatchAsync(JsonNode.Parse(command)!.AsObject());
            var answer = Lines().Single();
            _written.SetLength(0);
            Assert.False((bool)answer["ok"]!, answer.ToJsonString());
            Assert.Contains(knob, (string)answer["error"]!);
        }
    }

    [Fact]
    public void Events_false_writes_no_event()
    {
        var request = new RequestContext("q", "m", "m", "amq.gen-1", ReplyToSource.Header, new Dictionary<string, object?>(), 1);
        var silent = new ResponderEvents("r", new Output(_written), connectionLost: true, requestEvents: false);
        IResponderObserver observer = silent;
        observer.Handling(request);
        observer.Replied(request, null);
        observer.ReplyFailed(request, new InvalidOperationException("returned"));
        observer.DeadLettered("m", "UndeliverableReply: returned");
        observer.Unanswerable("m");
        Assert.Empty(Lines());

        // The connection is no per-request event: still told.
        observer.ConnectionLost("CONNECTION_FORCED");
        Assert.Equal(["connection_lost"], Lines().Select(l => (string)l["event"]!));
        _written.SetLength(0);

        IResponderObserver events = new ResponderEvents("r", new Output(_written), connectionLost: true);
        events.Handling(request);
        events.Unanswerable("m");
        Assert.Equal(["handled", "unanswerable"], Lines().Select(l => (string)l["event"]!));
    }

    [Theory]
    [InlineData("requester")]
    [InlineData("responder")]
    public void The_policy_records_knobs_and_defaults_are_the_catalogues(string side)
    {
        // The harness sends only what differs from the catalogue's defaults: the binding's own
        // defaults must be those.
        var policies = (YamlMappingNode)Catalogue()["policies"];
        var expected = Entries(policies[side]).ToDictionary(e => e.Key, e => Text(((YamlMappingNode)e.Value)["default"]));
        Assert.Equal(expected, Knobs(side == "requester" ? RequesterPolicy.Default : ResponderPolicy.Default));
    }

    [Fact]
    public void Neither_the_binding_nor_the_adapter_names_a_mutant_or_a_profile()
    {
        var root = Catalogue();
        var names = Entries(root["mutants"]).Select(m => m.Key)
            .Concat(Entries(root["profiles"]).Select(p => p.Key).Where(p => p != "current"))
            .ToList();
        var peer = Path.Combine(Path.GetDirectoryName(Acemq.Tests.Catalogue.File("catalogue.yaml"))!, "..", "peers", "dotnet");
        var files = new[] { "Acemq", "Acemq.Peer" }
            .SelectMany(d => new DirectoryInfo(Path.Combine(peer, d)).GetFiles("*.cs", SearchOption.AllDirectories))
            .Where(f => !f.FullName.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}"))
            .ToList();
        Assert.NotEmpty(files);
        var found = files.SelectMany(f => names.Where(File.ReadAllText(f.FullName).Contains).Select(n => $"{f.Name}: {n}")).ToList();
        Assert.Empty(found);
    }

    /// <summary>
    /// Gives every property of <paramref name="defaults"/> a value other than its own, in one
    /// policy as JSON, and checks each property took exactly the value its knob named.
    /// </summary>
    private static void AppliedPropertyByProperty<T>(T defaults) where T : new()
    {
        var policy = new JsonObject();
        var expected = new Dictionary<PropertyInfo, object?>();
        foreach (var property in typeof(T).GetProperties(BindingFlags.Public | BindingFlags.Instance).Where(p => p.CanWrite))
        {
            var (other, spelt) = property.GetValue(defaults) switch
            {
                bool flag => ((object?)!flag, (JsonNode?)!flag),
                int number => (number + 1, number + 1),
                Enum constant => Next(constant),
                // reply_content_type: none is no content type at all.
                string when property.Name == nameof(ResponderPolicy.ReplyContentType) => (null, "none"),
                string => ("x-other-", "x-other-"),
                IEnumerable<ReplyToSource> order => (order.Reverse().ToArray(), new JsonArray([.. order.Reverse().Select(s => (JsonNode?)PolicyKnobs.Snake(s.ToString()))])),
                var value => throw new InvalidOperationException($"no other value for {property.Name} = {value}"),
            };
            policy[PolicyKnobs.Snake(property.Name)] = spelt;
            expected[property] = other;
        }

        var applied = PolicyKnobs.Apply<T>(JsonNode.Parse(policy.ToJsonString())!.AsObject());
        foreach (var (property, value) in expected)
        {
            var actual = property.GetValue(applied);
            Assert.NotEqual(Describe(property.GetValue(defaults)), Describe(actual));
            Assert.Equal($"{property.Name}={Describe(value)}", $"{property.Name}={Describe(actual)}");
        }
    }

    private static (object?, JsonNode?) Next(Enum constant)
    {
        var values = Enum.GetValues(constant.GetType()).Cast<Enum>().ToList();
        var next = values[(values.IndexOf(constant) + 1) % values.Count];
        return (next, PolicyKnobs.Snake(next.ToString()));
    }

    private async Task<JsonObject> HelloAsync(PeerHost host, string protocols)
    {
        await host.DispatchAsync(JsonNode.Parse($$"""{"id": 1, "op": "hello", "protocol": 4, "protocols": {{protocols}}, "amqp_url": "{{NoBroker}}"}""")!.AsObject());
        var answer = Lines().Single();
        _written.SetLength(0);
        Assert.True((bool)answer["ok"]!, answer.ToJsonString());
        return answer;
    }

    private List<JsonObject> Lines() =>
        Encoding.UTF8.GetString(_written.ToArray()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonNode.Parse(l)!.AsObject()).ToList();

    private static List<string> Strings(JsonNode? array) => array!.AsArray().Select(v => (string)v!).ToList();

    /// <summary>The snake_case of every settable public property, sorted: the knobs hello must name.</summary>
    private static List<string> PropertyKnobs(Type policy) =>
        [.. policy.GetProperties(BindingFlags.Public | BindingFlags.Instance).Where(p => p.CanWrite)
            .Select(p => string.Concat(p.Name.Select((c, i) => char.IsUpper(c) && i > 0 ? $"_{char.ToLowerInvariant(c)}" : $"{char.ToLowerInvariant(c)}")))
            .Order(StringComparer.Ordinal)];

    /// <summary>A policy's properties as the catalogue spells them: snake_case names and values.</summary>
    private static Dictionary<string, string> Knobs(object policy) =>
        policy.GetType().GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .ToDictionary(p => PolicyKnobs.Snake(p.Name), p => Describe(p.GetValue(policy)));

    private static string Describe(object? value) => value switch
    {
        bool b => b ? "true" : "false",
        int i => i.ToString(System.Globalization.CultureInfo.InvariantCulture),
        Enum e => PolicyKnobs.Snake(e.ToString()),
        string text => text,
        IEnumerable items => $"[{string.Join(", ", items.Cast<object?>().Select(Describe))}]",
        null => "none",
        _ => throw new InvalidOperationException($"no catalogue spelling for {value}"),
    };

    private static IEnumerable<(string Key, YamlNode Value)> Entries(YamlNode node) =>
        ((YamlMappingNode)node).Children.Select(c => (((YamlScalarNode)c.Key).Value!, c.Value));

    private static string Text(YamlNode node) => node switch
    {
        YamlScalarNode scalar => scalar.Value!,
        YamlSequenceNode sequence => $"[{string.Join(", ", sequence.Children.Select(Text))}]",
        _ => throw new InvalidOperationException($"unexpected catalogue value {node}"),
    };

    private static YamlMappingNode Catalogue()
    {
        var yaml = new YamlStream();
        using var reader = new StreamReader(Acemq.Tests.Catalogue.File("catalogue.yaml"));
        yaml.Load(reader);
        return (YamlMappingNode)yaml.Documents[0].RootNode;
    }
}
