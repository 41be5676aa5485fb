// Mandatory, confirmed publishing with basic.return detection (RR-13).
//
// For an unroutable mandatory publish RabbitMQ sends basic.return and then acks it, so an
// ack alone does not prove delivery. A basic.return does not carry the delivery tag, so a
// return can only be tied to its publish if one publish is outstanding at a time on the
// channel: publishes are therefore serialised per channel. The return's frames come before
// the ack's, and amqplib emits 'return' before it runs the confirm callback.

import type { ConfirmChannel, Options } from 'amqplib';
import { PublishFailedError } from './errors';
import { checkShortStrings } from './wire';

export class ConfirmPublisher {
  private tail: Promise<void> = Promise.resolve();
  private returned = false;

  constructor(private readonly channel: ConfirmChannel) {
    channel.on('return', () => {
      this.returned = true;
    });
  }

  /** Resolves once the broker acked the message and did not return it; rejects otherwise. */
  publish(exchange: string, routingKey: string, body: Buffer, options: Options.Publish): Promise<void> {
    checkShortStrings({
      messageId: options.messageId,
      correlationId: options.correlationId,
      replyTo: options.replyTo,
      type: options.type,
    });
    const run = this.tail.then(() => this.publishOne(exchange, routingKey, body, options));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private publishOne(exchange: string, routingKey: string, body: Buffer, options: Options.Publish): Promise<void> {
    this.returned = false;
    return new Promise<void>((resolve, reject) => {
      try {
        this.channel.publish(exchange, routingKey, body, { ...options, mandatory: true }, (err) => {
          if (err) reject(new PublishFailedError(`publish to '${exchange}'/'${routingKey}' nacked or failed: ${describe(err)}`, false));
          else if (this.returned)
            reject(new PublishFailedError(`publish to '${exchange}'/'${routingKey}' returned: unroutable`, true));
          else resolve();
        });
      } catch (err) {
        reject(err instanceof Error ? err : new PublishFailedError(describe(err), false));
      }
    });
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
