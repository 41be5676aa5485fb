using System.Text.Json;
using Acemq.Peer;

namespace Acemq.Tests;

/// <summary>
/// The adapter reports the binding's timeouts as the timeout outcomes, however a task hands
/// them over (plain, or wrapped as .NET wraps exceptions), and never refuses the command for one.
/// </summary>
public class AdapterOutcomeTests
{
    private static readonly RequestTimedOutException Timeout = new("m-1", TimeSpan.FromSeconds(1)) { RequestId = "m-1" };

    public static TheoryData<Exception> RequestTimeouts() => new(
        Timeout,
        new AggregateException(Timeout),
        new AggregateException(new AggregateException(Timeout)),
        new TaskCanceledException("cancelled", Timeout),
        new OperationCanceledException("cancelled", Timeout),
        new InvalidOperationException("wrapped", Timeout));

    [Theory]
    [MemberData(nameof(RequestTimeouts))]
    public void A_request_timeout_is_the_timeout_outcome_plain_or_wrapped(Exception error)
    {
        Assert.Equal("""{"outcome":"timeout"}""", Outcomes.OfRequest(error, closedOutcome: true)?.ToJsonString());
    }

    [Fact]
    public void A_timeout_awaited_through_wait_is_still_the_timeout_outcome()
    {
        var failed = Task.FromException<JsonElement>(Timeout);
        var error = Assert.Throws<AggregateException>(() => failed.Wait());
        Assert.Equal("timeout", Outcomes.OfRequest(error, closedOutcome: false)?["outcome"]?.GetValue<string>());
    }

    [Fact]
    public void A_gather_shortfall_is_timeout_with_partial_with_its_replies_plain_or_wrapped()
    {
        var partial = new object?[] { JsonDocument.Parse("""{"n":1}""").RootElement.Clone() };
        var shortfall = new RequestTimeoutException("g-1", 2, partial);
        foreach (var error in new Exception[] { shortfall, new AggregateException(shortfall), new TaskCanceledException("t", shortfall) })
        {
            Assert.Equal("""{"outcome":"timeout_with_partial","replies":[{"n":1}]}""", Outcomes.OfGather(error, closedOutcome: true)?.ToJsonString());
        }
    }

    [Fact]
    public void The_other_outcomes_unwrap_the_same_way_and_anything_else_is_refused()
    {
        Assert.Equal("responder_failed", Outcomes.OfRequest(new AggregateException(new ResponderFailedException("E: x")), true)?["outcome"]?.GetValue<string>());
        Assert.Equal("closed", Outcomes.OfGather(new AggregateException(new ObjectDisposedException("Requester")), true)?["outcome"]?.GetValue<string>());
        Assert.Null(Outcomes.OfGather(new ObjectDisposedException("Requester"), closedOutcome: false));
        Assert.Null(Outcomes.OfRequest(new InvalidOperationException("no"), true));
        Assert.Null(Outcomes.OfRequest(new TaskCanceledException(), true));
        Assert.Null(Outcomes.OfGather(Timeout, true));
    }
}
