// Mandatory, confirmed publishing with basic.return detection (RR-13).
//
// For an unroutable mandatory publish RabbitMQ sends basic.return and then acks it, so an
// ack alone does not prove delivery. A basic.return carries no delivery tag, but it does
// carry the message: it is tied to the oldest unconfirmed publish with the same exchange,
// routing key, message_id and correlation_id. The return's frames come before that
// publish's ack, and amqplib emits 'return' before it runs the confirm callback, so the
// publish is still waiting when it is marked. Publishes that look alike route alike, so
// which of several identical ones is marked does not matter. Many publishes can be
// outstanding at once: nothing waits for another's confirm.

import type { ConfirmChannel, Message, Options } from 'amqplib';
import { PublishFailedError } from './errors';
import type { RequesterPolicy } from './policy';
import { type ShortStringProperties, checkShortStrings, truncateShortStrings } from './wire';

/** The publishing knobs of a requester's policy; a responder publishes by the spec. */
export type PublishPolicy = Pick<RequesterPolicy, 'honourReturns' | 'longShortString'>;

const SPEC_PUBLISHING: PublishPolicy = { honourReturns: true, longShortString: 'refuse' };

interface Unconfirmed {
  key: string;
  returned: boolean;
}

function identity(exchange: string, routingKey: string, messageId: unknown, correlationId: unknown): string {
  return JSON.stringify([exchange, routingKey, messageId ?? null, correlationId ?? null]);
}

export class ConfirmPublisher {
  /** Publishes the broker has not confirmed yet, oldest first. */
  private readonly unconfirmed: Unconfirmed[] = [];

  constructor(
    private readonly channel: ConfirmChannel,
    private readonly policy: PublishPolicy = SPEC_PUBLISHING,
  ) {
    channel.on('return', (msg: Message) => {
      const key = identity(msg.fields.exchange, msg.fields.routingKey, msg.properties.messageId, msg.properties.correlationId);
      const publish = this.unconfirmed.find((entry) => entry.key === key && !entry.returned);
      if (publish) publish.returned = true;
    });
  }

  /**
   * Resolves once the broker acked the message and did not return it; rejects otherwise.
   * `honourReturn` false takes a returned publish for a delivered one (a breach of RR-13).
   */
  publish(
    exchange: string,
    routingKey: string,
    body: Buffer,
    options: Options.Publish,
    honourReturn: boolean = this.policy.honourReturns,
  ): Promise<void> {
    const shortStrings: ShortStringProperties = {
      messageId: options.messageId,
      correlationId: options.correlationId,
      replyTo: options.replyTo,
      type: options.type,
    };
    let properties = options;
    try {
      if (this.policy.longShortString === 'truncate') properties = { ...options, ...truncateShortStrings(shortStrings) };
      else checkShortStrings(shortStrings);
    } catch (err) {
      return Promise.reject(err);
    }
    const entry: Unconfirmed = {
      key: identity(exchange, routingKey, properties.messageId, properties.correlationId),
      returned: false,
    };
    const confirmed = () => {
      const index = this.unconfirmed.indexOf(entry);
      if (index >= 0) this.unconfirmed.splice(index, 1);
    };
    this.unconfirmed.push(entry);
    return new Promise<void>((resolve, reject) => {
      try {
        // Mandatory unless told (RR-13): a reply to a direct reply-to address is not (RR-14.5).
        this.channel.publish(exchange, routingKey, body, { mandatory: true, ...properties }, (err) => {
          confirmed();
          if (err) reject(new PublishFailedError(`publish to '${exchange}'/'${routingKey}' nacked or failed: ${describe(err)}`, false));
          else if (entry.returned && honourReturn)
            reject(new PublishFailedError(`publish to '${exchange}'/'${routingKey}' returned: unroutable`, true));
          else resolve();
        });
      } catch (err) {
        confirmed();
        reject(err instanceof Error ? err : new PublishFailedError(describe(err), false));
      }
    });
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
