// The bare client for `client: raw` (docs/peer-protocol.md, Version 2): amqplib alone, no
// acemq code, so `load` can show what this client can do on this broker at best.

import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import type { Channel, ChannelModel, ConsumeMessage, SocketOptions } from 'amqplib';

/**
 * The raw echo responder: a durable quorum queue consumed with manual acks and prefetch 64;
 * every request's body goes back to its reply_to, correlated by its message_id (else its
 * correlation_id), then the request is acked. No events, no counters.
 */
export class RawResponder {
  private constructor(private readonly connection: ChannelModel) {}

  static async start(url: string, queue: string, socketOptions?: SocketOptions): Promise<RawResponder> {
    const connection = await amqp.connect(url, socketOptions);
    try {
      connection.on('error', (err: Error) => console.error(`raw responder ${queue}: ${err.message}`));
      const channel = await connection.createChannel();
      await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      await channel.prefetch(64);
      await channel.consume(queue, (msg) => {
        if (msg) echo(channel, msg);
      });
      return new RawResponder(connection);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  async stop(): Promise<void> {
    await this.connection.close().catch(() => undefined);
  }
}

function echo(channel: Channel, msg: ConsumeMessage): void {
  const { replyTo, messageId, correlationId } = msg.properties;
  if (replyTo) {
    channel.publish('', String(replyTo), msg.content, {
      correlationId: (messageId || correlationId || undefined) as string | undefined,
      contentType: 'application/json',
    });
  }
  channel.ack(msg);
}

/** A reply that did not come in time. */
export class RawTimeoutError extends Error {}

/**
 * The raw requester: one connection, one channel, one server-named classic exclusive
 * auto-delete reply queue consumed with auto-ack; a reply finds its waiter by correlation_id.
 */
export class RawRequester {
  private readonly waiters = new Map<string, (msg: ConsumeMessage) => void>();

  private constructor(
    private readonly connection: ChannelModel,
    private readonly channel: Channel,
    private readonly replyQueue: string,
  ) {}

  static async open(url: string, socketOptions?: SocketOptions): Promise<RawRequester> {
    const connection = await amqp.connect(url, socketOptions);
    try {
      connection.on('error', (err: Error) => console.error(`raw requester: ${err.message}`));
      const channel = await connection.createChannel();
      const { queue } = await channel.assertQueue('', {
        durable: false,
        exclusive: true,
        autoDelete: true,
        arguments: { 'x-queue-type': 'classic' },
      });
      const requester = new RawRequester(connection, channel, queue);
      await channel.consume(queue, (msg) => {
        const id = msg?.properties.correlationId as string | undefined;
        if (msg && id !== undefined) requester.waiters.get(id)?.(msg);
      }, { noAck: true });
      return requester;
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** Publishes `body` and resolves with the reply's body, or rejects after `timeoutMs`. */
  request(exchange: string, routingKey: string, body: Buffer, timeoutMs: number): Promise<Buffer> {
    const correlationId = randomUUID();
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(correlationId);
        reject(new RawTimeoutError(`no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(correlationId, (msg) => {
        clearTimeout(timer);
        this.waiters.delete(correlationId);
        resolve(msg.content);
      });
      this.channel.publish(exchange, routingKey, body, {
        replyTo: this.replyQueue,
        // message_id too: a spec responder answers with correlation_id = message_id (RR-4).
        messageId: correlationId,
        correlationId,
        contentType: 'application/json',
      });
    });
  }

  async close(): Promise<void> {
    await this.connection.close().catch(() => undefined);
  }
}
