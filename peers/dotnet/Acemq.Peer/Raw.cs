using System.Collections.Concurrent;
using RabbitMQ.Client;
using RabbitMQ.Client.Events;

namespace Acemq.Peer;

/// <summary>
/// The bare RabbitMQ.Client, no acemq code: what <c>load</c> with <c>client: raw</c> and a
/// raw responder measure the binding against (docs/peer-protocol.md, "Version 2").
/// </summary>
internal static class Raw
{
    private static readonly Dictionary<string, object?> Classic = new() { ["x-queue-type"] = "classic" };
    private static readonly Dictionary<string, object?> Quorum = new() { ["x-queue-type"] = "quorum" };

    /// <summary>A connection of the bare client; over TLS the same SslOption as the binding's (the chain against the run's CA).</summary>
    public static Task<IConnection> ConnectAsync(Uri uri, MqTls? tls, string name)
    {
        var factory = new ConnectionFactory { Uri = uri, ClientProvidedName = name, AutomaticRecoveryEnabled = false };
        Mq.UseTls(factory, uri, tls);
        return factory.CreateConnectionAsync();
    }

    /// <summary>One channel, one server-named classic exclusive auto-delete reply queue, consumed with auto-ack.</summary>
    internal sealed class Requester : IAsyncDisposable
    {
        private readonly IConnection _connection;
        private readonly IChannel _channel;
        private readonly string _replyQueue;
        private readonly ConcurrentDictionary<string, TaskCompletionSource> _waiting = new(StringComparer.Ordinal);

        private Requester(IConnection connection, IChannel channel, string replyQueue)
        {
            _connection = connection;
            _channel = channel;
            _replyQueue = replyQueue;
        }

        public static async Task<Requester> OpenAsync(Uri uri, MqTls? tls)
        {
            var connection = await ConnectAsync(uri, tls, "acemq-interop raw load").ConfigureAwait(false);
            var channel = await connection.CreateChannelAsync().ConfigureAwait(false);
            var queue = await channel.QueueDeclareAsync("", durable: false, exclusive: true, autoDelete: true, Classic).ConfigureAwait(false);
            var requester = new Requester(connection, channel, queue.QueueName);
            var consumer = new AsyncEventingBasicConsumer(channel);
            consumer.ReceivedAsync += requester.OnReplyAsync;
            await channel.BasicConsumeAsync(queue.QueueName, autoAck: true, consumer).ConfigureAwait(false);
            return requester;
        }

        /// <summary>Publishes one request and waits for the reply whose correlation_id is its id; TimeoutException when none came in time.</summary>
        public async Task CallAsync(string exchange, string routingKey, ReadOnlyMemory<byte> body, TimeSpan timeout)
        {
            var id = Guid.NewGuid().ToString("N");
            var reply = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _waiting[id] = reply;
            try
            {
                // message_id too: a responder answers with correlation_id = message_id.
                var properties = new BasicProperties { MessageId = id, CorrelationId = id, ReplyTo = _replyQueue, ContentType = "application/json" };
                await _channel.BasicPublishAsync(exchange, routingKey, mandatory: false, properties, body).ConfigureAwait(false);
                await reply.Task.WaitAsync(timeout).ConfigureAwait(false);
            }
            finally
            {
                _waiting.TryRemove(id, out _);
            }
        }

        private Task OnReplyAsync(object sender, BasicDeliverEventArgs delivery)
        {
            if (delivery.BasicProperties.CorrelationId is { } id && _waiting.TryRemove(id, out var waiter))
            {
                waiter.TrySetResult();
            }

            return Task.CompletedTask;
        }

        public async ValueTask DisposeAsync()
        {
            try
            {
                await _connection.CloseAsync().ConfigureAwait(false);
            }
            catch (Exception)
            {
                // Already gone.
            }

            await _connection.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// An echo responder: a durable quorum queue consumed with manual acks and prefetch 64;
    /// each request's body goes back to its reply_to with correlation_id = message_id (else
    /// its correlation_id), then it is acked. No events, no counters.
    /// </summary>
    internal sealed class Responder : IAsyncDisposable
    {
        private readonly IChannel _channel;

        private Responder(IChannel channel) => _channel = channel;

        public static async Task<Responder> StartAsync(IConnection connection, string queue, Binding? bind)
        {
            var channel = await connection.CreateChannelAsync().ConfigureAwait(false);
            await channel.QueueDeclareAsync(queue, durable: true, exclusive: false, autoDelete: false, Quorum).ConfigureAwait(false);
            if (bind is not null)
            {
                await channel.QueueBindAsync(queue, bind.Exchange, bind.RoutingKey).ConfigureAwait(false);
            }

            await channel.BasicQosAsync(0, 64, global: false).ConfigureAwait(false);
            var consumer = new AsyncEventingBasicConsumer(channel);
            consumer.ReceivedAsync += async (_, delivery) =>
            {
                var request = delivery.BasicProperties;
                if (!string.IsNullOrEmpty(request.ReplyTo))
                {
                    var reply = new BasicProperties
                    {
                        CorrelationId = request.MessageId ?? request.CorrelationId,
                        ContentType = "application/json",
                    };
                    await channel.BasicPublishAsync("", request.ReplyTo, mandatory: false, reply, delivery.Body).ConfigureAwait(false);
                }

                await channel.BasicAckAsync(delivery.DeliveryTag, multiple: false).ConfigureAwait(false);
            };
            await channel.BasicConsumeAsync(queue, autoAck: false, consumer).ConfigureAwait(false);
            return new Responder(channel);
        }

        public async ValueTask DisposeAsync()
        {
            try
            {
                await _channel.CloseAsync().ConfigureAwait(false);
            }
            catch (Exception)
            {
                // Already gone.
            }

            await _channel.DisposeAsync().ConfigureAwait(false);
        }
    }
}
