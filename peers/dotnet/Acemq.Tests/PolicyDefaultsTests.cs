namespace Acemq.Tests;

/// <summary>
/// The spec's defaults and decisions that a binding takes without a broker (RR-9.3, RR-9.4,
/// RR-9.5, RR-14.3, RR-14.4, SG-1.2, SG-2.3), each at its default and at the policy value
/// that breaks it. What needs a broker (returns, failure replies, malformed bodies) is
/// checked by the suite's scenarios.
/// </summary>
public class PolicyDefaultsTests
{
    [Fact]
    public void A_call_given_no_timeout_waits_the_policys_default_of_30_seconds()
    {
        Assert.Equal(TimeSpan.FromSeconds(30), Requester.TimeoutOf(RequesterPolicy.Default, null));
        Assert.Equal(TimeSpan.FromSeconds(10), Requester.TimeoutOf(RequesterPolicy.Default with { DefaultTimeoutMs = 10000 }, null));
        Assert.Equal(TimeSpan.FromSeconds(2), Requester.TimeoutOf(RequesterPolicy.Default with { DefaultTimeoutMs = 10000 }, TimeSpan.FromSeconds(2)));
        Assert.Equal(Requester.DefaultTimeout, Requester.TimeoutOf(RequesterPolicy.Default, null));
    }

    [Fact]
    public void A_responder_given_no_attempts_makes_the_policys_three()
    {
        Assert.Equal(3, Responder.MaxAttemptsOf(new ResponderOptions()));
        Assert.Equal(5, Responder.MaxAttemptsOf(new ResponderOptions { Policy = ResponderPolicy.Default with { DefaultMaxAttempts = 5 } }));
        Assert.Equal(2, Responder.MaxAttemptsOf(new ResponderOptions { MaxAttempts = 2, Policy = ResponderPolicy.Default with { DefaultMaxAttempts = 5 } }));
    }

    [Theory]
    [InlineData(null, 1, 0)]
    [InlineData(0L, 1, 0)]
    [InlineData(2L, 3, 2)]
    public void Attempts_are_numbered_from_the_policys_base(long? deliveryCount, int fromOne, int fromZero)
    {
        var headers = deliveryCount is { } n ? new Dictionary<string, object?> { [Wire.DeliveryCountHeader] = n } : null;
        Assert.Equal(fromOne, Wire.Attempt(headers, ResponderPolicy.Default.AttemptBase));
        Assert.Equal(fromOne, Wire.Attempt(headers));
        Assert.Equal(fromZero, Wire.Attempt(headers, attemptBase: 0));

        // The last attempt is still the one numbered max_attempts: from 0, one more delivery.
        Assert.Equal(RetryDecision.DeadLetter, Wire.Retry(3, 3));
        Assert.Equal(RetryDecision.Requeue, Wire.Retry(2, 3));
    }

    [Fact]
    public void A_gather_given_no_correlation_id_sends_its_request_message_id()
    {
        Assert.Equal("rmid", Requester.GatherCorrelationId(RequesterPolicy.Default, null, "rmid"));
        Assert.Equal("given", Requester.GatherCorrelationId(RequesterPolicy.Default, "given", "rmid"));
        var none = RequesterPolicy.Default with { GatherDefaultCorrelation = GatherDefaultCorrelation.None };
        Assert.Null(Requester.GatherCorrelationId(none, null, "rmid"));
        Assert.Equal("given", Requester.GatherCorrelationId(none, "given", "rmid"));
    }

    [Fact]
    public void A_gather_ending_at_its_timeout_is_not_counted_in_timed_out()
    {
        var shortfall = new PendingGather<int>("g", expectedReplyCount: 2, onReply: null);
        shortfall.Add(1);
        Assert.True(shortfall.TimeoutElapsed());
        Assert.False(shortfall.TimeoutElapsed());

        var resolved = new PendingGather<int>("h", expectedReplyCount: 1, onReply: null);
        resolved.Add(1);
        Assert.False(resolved.TimeoutElapsed());

        Assert.False(Requester.CountsGatherTimeout(RequesterPolicy.Default, endedAtTimeout: true));
        var counting = RequesterPolicy.Default with { CountGatherTimeouts = true };
        Assert.True(Requester.CountsGatherTimeout(counting, endedAtTimeout: true));
        Assert.False(Requester.CountsGatherTimeout(counting, endedAtTimeout: false));
    }

    [Theory]
    [InlineData("quote.requested")]
    [InlineData(null)]
    public void The_type_travels_as_the_amqp_type_property(string? type)
    {
        var properties = Requester.RequestProperties(RequesterPolicy.Default, "m", "m", "amq.gen-1", type, headers: null);
        Assert.Equal(type, properties.Type);
        Assert.False(properties.Headers?.ContainsKey(Wire.TypeHeader) ?? false);

        var inHeader = Requester.RequestProperties(
            RequesterPolicy.Default with { TypeCarrier = TypeCarrier.Header }, "m", "m", "amq.gen-1", type, headers: null);
        Assert.Null(inHeader.Type);
        Assert.Equal(type is not null, inHeader.Headers!.ContainsKey(Wire.TypeHeader));
    }

    [Fact]
    public void A_type_over_255_bytes_is_refused()
    {
        var properties = Requester.RequestProperties(RequesterPolicy.Default, "m", "m", "amq.gen-1", new string('t', 256), headers: null);
        Assert.ThrowsAny<ArgumentException>(() => Publishing.EnsureShortStrings("", "q", properties));
    }

    [Fact]
    public async Task Disposing_waits_for_the_calls_in_flight_to_end()
    {
        var calls = new CallsInFlight();
        Assert.True(calls.WhenIdleAsync().IsCompleted);

        calls.Enter();
        calls.Enter();
        var idle = calls.WhenIdleAsync();
        calls.Exit();
        Assert.False(idle.IsCompleted);
        calls.Exit();
        await idle.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.True(calls.WhenIdleAsync().IsCompleted);
    }

    [Fact]
    public void By_default_pending_calls_end_closed_and_gather_returns_are_honoured()
    {
        Assert.Equal(PendingAtClose.EndClosed, RequesterPolicy.Default.PendingAtClose);
        Assert.True(RequesterPolicy.Default.HonourGatherReturns);
        Assert.Equal(FailureReplyDelivery.Checked, ResponderPolicy.Default.FailureReplyDelivery);
        Assert.Equal(MalformedRequestHandling.FailReply, ResponderPolicy.Default.MalformedRequest);
    }
}
