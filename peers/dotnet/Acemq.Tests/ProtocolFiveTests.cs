using System.Reflection;
using System.Text;
using System.Text.Json.Nodes;
using Acemq.Peer;
using RabbitMQ.Client;

namespace Acemq.Tests;

/// <summary>
/// RR-20 and peer protocol 5 without a broker: the knobs, the adapter's version-5 commands
/// (each role's connection named and placed as told, refused before connecting when it is
/// not), the connection_lost outcome and the recovered event, the order nodes are tried in,
/// and a request settled once whatever its ack timing. The losses and recoveries themselves
/// are the harness's scenarios, on a broker.
/// </summary>
public class ProtocolFiveTests
{
    /// <summary>Nothing listens there: a command that got as far as connecting fails.</summary>
    private const string NoBroker = "amqp://guest:guest@127.0.0.1:1/none";

    private readonly MemoryStream _written = new();

    [Fact]
    public void The_spec_ends_lost_calls_recovers_both_sides_and_acks_after_handling()
    {
        Assert.Equal(OnConnectionLost.EndLost, RequesterPolicy.Default.OnConnectionLost);
        Assert.True(RequesterPolicy.Default.RecoverConnection);
        Assert.True(ResponderPolicy.Default.RecoverConnection);
        Assert.Equal(AckTiming.AfterHandling, ResponderPolicy.Default.AckTiming);
    }

    [Fact]
    public void The_knobs_that_break_rr20_set_their_property_only()
    {
        var waits = PolicyKnobs.Apply<RequesterPolicy>(Json("""{"on_connection_lost": "wait"}"""));
        Assert.Equal(RequesterPolicy.Default with { OnConnectionLost = OnConnectionLost.Wait }, waits);
        var down = PolicyKnobs.Apply<RequesterPolicy>(Json("""{"recover_connection": false}"""));
        Assert.Equal(RequesterPolicy.Default with { RecoverConnection = false }, down);
        var early = PolicyKnobs.Apply<ResponderPolicy>(Json("""{"ack_timing": "on_delivery"}"""));
        Assert.Equal(AckTiming.OnDelivery, early.AckTiming);
        Assert.True(early.RecoverConnection);
        Assert.False(PolicyKnobs.Apply<ResponderPolicy>(Json("""{"recover_connection": false}""")).RecoverConnection);
        Assert.Contains("on_connection_lost", Assert.Throws<ArgumentException>(
            () => PolicyKnobs.Apply<RequesterPolicy>(Json("""{"on_connection_lost": "retry"}"""))).Message);
    }

    [Fact]
    public async Task Hello_answers_5_and_names_the_rr20_knobs()
    {
        var answer = await HelloAsync(new PeerHost(new Output(_written)), "[1, 2, 3, 4, 5]");
        Assert.Equal(5, (int)answer["protocol"]!);
        var knobs = answer["knobs"]!.AsObject();
        Assert.Contains("on_connection_lost", Strings(knobs["requester"]));
        Assert.Contains("recover_connection", Strings(knobs["requester"]));
        Assert.Contains("recover_connection", Strings(knobs["responder"]));
        Assert.Contains("ack_timing", Strings(knobs["responder"]));
    }

    [Fact]
    public async Task A_harness_of_version_4_still_gets_4()
    {
        var answer = await HelloAsync(new PeerHost(new Output(_written)), "[1, 2, 3, 4]");
        Assert.Equal(4, (int)answer["protocol"]!);
    }

    [Fact]
    public async Task Hello_refuses_amqp_urls_that_are_no_list_of_strings()
    {
        var host = new PeerHost(new Output(_written));
        await host.DispatchAsync(Json($$"""{"id": 1, "op": "hello", "protocol": 5, "protocols": [5], "amqp_url": "{{NoBroker}}", "amqp_urls": "{{NoBroker}}"}"""));
        var answer = Lines().Single();
        Assert.False((bool)answer["ok"]!);
        Assert.Contains("amqp_urls", (string)answer["error"]!);
    }

    [Theory]
    [InlineData("""{"id": 2, "op": "requester.open", "name": "q", "policy": {}}""")]
    [InlineData("""{"id": 2, "op": "responder.start", "name": "r", "queue": "q", "behavior": {"reply": "echo"}, "policy": {}}""")]
    public async Task At_version_5_a_role_without_its_connection_name_is_refused_naming_it(string command)
    {
        var host = new PeerHost(new Output(_written));
        await HelloAsync(host, "[1, 2, 3, 4, 5]");
        await host.DispatchAsync(Json(command));
        var answer = Lines().Single();
        Assert.False((bool)answer["ok"]!);
        Assert.Contains("connection_name", (string)answer["error"]!);
    }

    [Fact]
    public async Task At_version_5_a_role_none_of_whose_nodes_is_reachable_is_refused_with_the_cause()
    {
        var host = new PeerHost(new Output(_written));
        await HelloAsync(host, "[1, 2, 3, 4, 5]");
        await host.DispatchAsync(Json("""
            {"id": 2, "op": "requester.open", "name": "q", "policy": {}, "connection_name": "acemq-interop t c1.q",
             "amqp_urls": ["amqp://guest:guest@127.0.0.1:1/none", "amqp://guest:guest@127.0.0.1:2/none"]}
            """));
        var answer = Lines().Single();
        Assert.False((bool)answer["ok"]!);
        Assert.Contains("reachable", (string)answer["error"]!);
    }

    [Fact]
    public void The_connection_lost_outcome_carries_the_reason_from_version_5_plain_or_wrapped()
    {
        var lost = new ConnectionLostException("320 CONNECTION_FORCED - Closed via management plugin");
        foreach (var error in new Exception[] { lost, new AggregateException(lost), new TaskCanceledException("t", lost) })
        {
            Assert.Equal(
                """{"outcome":"connection_lost","reason":"320 CONNECTION_FORCED - Closed via management plugin"}""",
                Outcomes.OfRequest(error, closedOutcome: true, lostOutcome: true)?.ToJsonString());
            Assert.Equal("connection_lost", Outcomes.OfGather(error, closedOutcome: true, lostOutcome: true)?["outcome"]?.GetValue<string>());
        }

        // Before version 5 there is no such outcome: the command is refused with the binding's text.
        Assert.Null(Outcomes.OfRequest(lost, closedOutcome: true));
        Assert.Null(Outcomes.OfGather(lost, closedOutcome: true));
    }

    [Fact]
    public void Recovered_is_written_from_version_5_only_for_both_roles()
    {
        IRequesterObserver requester = new RequesterEvents("q", new Output(_written), connectionLost: true, bothIds: true, recovered: true);
        IResponderObserver responder = new ResponderEvents("r", new Output(_written), connectionLost: true, recovered: true);
        requester.ConnectionLost("320 CONNECTION_FORCED");
        requester.Recovered();
        responder.Recovered();
        Assert.Equal(
            ["""{"event":"connection_lost","requester":"q","reason":"320 CONNECTION_FORCED"}""", """{"event":"recovered","requester":"q"}""",
             """{"event":"recovered","responder":"r"}"""],
            Lines().Select(l => l.ToJsonString()));
        _written.SetLength(0);

        ((IRequesterObserver)new RequesterEvents("q", new Output(_written), connectionLost: true, bothIds: true)).Recovered();
        ((IResponderObserver)new ResponderEvents("r", new Output(_written), connectionLost: true)).Recovered();
        Assert.Empty(Lines());
    }

    [Fact]
    public void Nodes_are_tried_in_the_given_order_not_shuffled()
    {
        var nodes = Enumerable.Range(0, 8).Select(i => new AmqpTcpEndpoint("127.0.0.1", 5672 + i)).ToArray();
        var resolver = new Mq.InOrder(nodes);
        for (var attempt = 0; attempt < 3; attempt++)
        {
            Assert.Equal(nodes.Select(n => n.Port), resolver.All().Select(n => n.Port));
        }
    }

    [Fact]
    public async Task A_request_is_settled_once_acked_on_delivery_it_is_never_requeued()
    {
        var calls = new List<string>();
        var delivery = new Responder.Delivery(Recording(calls), 7, CancellationToken.None);
        await delivery.AckAsync();
        await delivery.RequeueAsync();
        await delivery.AckAsync();
        Assert.Equal(["BasicAckAsync 7"], calls);

        calls.Clear();
        var requeued = new Responder.Delivery(Recording(calls), 8, CancellationToken.None);
        await requeued.RequeueAsync();
        await requeued.AckAsync();
        Assert.Equal(["BasicNackAsync 8"], calls);
    }

    /// <summary>A channel that records its acks and nacks and does nothing else.</summary>
    private static IChannel Recording(List<string> calls)
    {
        var channel = DispatchProxy.Create<IChannel, RecordingChannel>();
        ((RecordingChannel)(object)channel).Calls = calls;
        return channel;
    }

    public class RecordingChannel : DispatchProxy
    {
        public List<string> Calls { get; set; } = [];

        protected override object? Invoke(MethodInfo? method, object?[]? args)
        {
            Calls.Add($"{method!.Name} {args![0]}");
            return method.ReturnType == typeof(ValueTask) ? ValueTask.CompletedTask : null;
        }
    }

    private async Task<JsonObject> HelloAsync(PeerHost host, string protocols)
    {
        await host.DispatchAsync(Json($$"""{"id": 1, "op": "hello", "protocol": 5, "protocols": {{protocols}}, "amqp_url": "{{NoBroker}}", "amqp_urls": ["{{NoBroker}}"]}"""));
        var answer = Lines().Single();
        _written.SetLength(0);
        Assert.True((bool)answer["ok"]!, answer.ToJsonString());
        return answer;
    }

    private static JsonObject Json(string text) => JsonNode.Parse(text)!.AsObject();

    private List<JsonObject> Lines() =>
        Encoding.UTF8.GetString(_written.ToArray()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(l => JsonNode.Parse(l)!.AsObject()).ToList();

    private static List<string> Strings(JsonNode? array) => array!.AsArray().Select(v => (string)v!).ToList();
}
