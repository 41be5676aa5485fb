// Mandatory, confirmed publishing with basic.return detection (RR-13).
//
// For an unroutable mandatory publish RabbitMQ sends basic.return and then acks it, so an
// ack alone does not prove delivery. A basic.return does not carry the delivery tag, so a
// return can only be tied to its publish if one publish is outstanding at a time on the
// channel: publishes are therefore serialised per channel. The return's frames come before
// the ack's, and amqplib emits 'return' before it runs the confirm callback.

import type { ConfirmChannel, Options } from 'amqplib';
import { PublishFailedError } from './errors';
import { type ShortStringProperties, checkShortStrings, truncateShortStrings } from './wire';

/** Deliberate defects for a requester's mutants; a service never sets them. */
export interface PublisherMutants {
  /** `ignores-returns` (breaks RR-13): the ack alone is taken as delivery. */
  ignoreReturns?: boolean | undefined;
  /** `truncates-short-strings` (breaks RR-18): long short strings are cut, not refused. */
  truncateShortStrings?: boolean | undefined;
}

export class ConfirmPublisher {
  private tail: Promise<void> = Promise.resolve();
  private returned = false;

  constructor(
    private readonly channel: ConfirmChannel,
    private readonly mutants: PublisherMutants = {},
  ) {
    channel.on('return', () => {
      this.returned = true;
    });
  }

  /** Resolves once the broker acked the message and did not return it; rejects otherwise. */
  publish(exchange: string, routingKey: string, body: Buffer, options: Options.Publish): Promise<void> {
    const shortStrings: ShortStringProperties = {
      messageId: options.messageId,
      correlationId: options.correlationId,
      replyTo: options.replyTo,
      type: options.type,
    };
    let properties = options;
    if (this.mutants.truncateShortStrings) properties = { ...options, ...truncateShortStrings(shortStrings) };
    else checkShortStrings(shortStrings);
    const run = this.tail.then(() => this.publishOne(exchange, routingKey, body, properties));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private publishOne(exchange: string, routingKey: string, body: Buffer, options: Options.Publish): Promise<void> {
    this.returned = false;
    return new Promise<void>((resolve, reject) => {
      try {
        this.channel.publish(exchange, routingKey, body, { ...options, mandatory: true }, (err) => {
          if (err) reject(new PublishFailedError(`publish to '${exchange}'/'${routingKey}' nacked or failed: ${describe(err)}`, false));
          else if (this.returned && !this.mutants.ignoreReturns)
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
