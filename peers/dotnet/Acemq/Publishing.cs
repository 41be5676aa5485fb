using RabbitMQ.Client;
using RabbitMQ.Client.Exceptions;

namespace Acemq;

internal static class Publishing
{
    /// <summary>
    /// Confirms with tracking: the client awaits the broker's ack and, because it tags
    /// each publish with <c>x-dotnet-pub-seq-no</c>, turns a <c>basic.return</c> (which the
    /// broker sends before acking an unroutable mandatory publish) into an exception.
    /// </summary>
    public static CreateChannelOptions Confirmed { get; } = new(
        publisherConfirmationsEnabled: true,
        publisherConfirmationTrackingEnabled: true);

    /// <summary>
    /// <see cref="Confirmed"/> for a channel that also consumes: its consumer runs up to
    /// <paramref name="concurrency"/> deliveries at once (one by one when 1). Concurrent publishes
    /// are safe: every publish awaits its own confirm.
    /// </summary>
    public static CreateChannelOptions ConfirmedConsuming(ushort concurrency) => new(
        publisherConfirmationsEnabled: true,
        publisherConfirmationTrackingEnabled: true,
        consumerDispatchConcurrency: concurrency);

    public static void EnsureShortStrings(string exchange, string routingKey, BasicProperties properties)
    {
        Wire.EnsureShortString("exchange", exchange);
        Wire.EnsureShortString("routing key", routingKey);
        Wire.EnsureShortString("message_id", properties.MessageId);
        Wire.EnsureShortString("correlation_id", properties.CorrelationId);
        Wire.EnsureShortString("reply_to", properties.ReplyTo);
        Wire.EnsureShortString("type", properties.Type);
    }

    /// <summary>
    /// Publishes mandatory (RR-13) and returns once the broker has confirmed it routed the message;
    /// <paramref name="mandatory"/> false only for a reply to a direct reply-to address (RR-14.5).
    /// </summary>
    public static async Task PublishAsync(
        IChannel channel, string exchange, string routingKey, BasicProperties properties, ReadOnlyMemory<byte> body,
        CancellationToken cancellationToken, bool mandatory = true)
    {
        EnsureShortStrings(exchange, routingKey, properties);
        try
        {
            await channel.BasicPublishAsync(exchange, routingKey, mandatory, properties, body, cancellationToken)
                .ConfigureAwait(false);
        }
        catch (PublishReturnException e)
        {
            throw new UnroutableException(exchange, routingKey, $"{e.ReplyCode} {e.ReplyText}");
        }
        catch (PublishException e) when (e.IsReturn)
        {
            throw new UnroutableException(exchange, routingKey, "returned");
        }
    }
}
