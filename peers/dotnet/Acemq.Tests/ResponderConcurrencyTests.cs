namespace Acemq.Tests;

public class ResponderConcurrencyTests
{
    // A responder that handled one delivery at a time, each waiting for its reply's confirm,
    // ran at a few hundred requests a second (issue 14). It now handles as many at once as
    // its prefetch lets in, and each publish still awaits its own tracked confirm.

    [Fact]
    public void A_responder_handles_as_many_deliveries_at_once_as_it_prefetches()
    {
        var defaults = new ResponderOptions();
        Assert.Equal((ushort)32, defaults.Prefetch);

        var channel = Publishing.ConfirmedConsuming(defaults.Prefetch);
        Assert.Equal(defaults.Prefetch, channel.ConsumerDispatchConcurrency);
        Assert.True(channel.PublisherConfirmationsEnabled);

        // Tracking is what ties a basic.return to its own publish among many outstanding ones.
        Assert.True(channel.PublisherConfirmationTrackingEnabled);
    }
}
