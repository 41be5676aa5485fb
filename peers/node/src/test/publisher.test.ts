import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { ConfirmChannel, Options } from 'amqplib';
import { PublishFailedError } from '../errors';
import { ConfirmPublisher } from '../publisher';
import { requesterPolicy } from '../policy';

// A confirm channel that keeps each publish's confirm callback until the test acks it, and
// can return a message the way amqplib does (the 'return' event comes before the ack).
class FakeChannel extends EventEmitter {
  readonly sent: Array<{ routingKey: string; options: Options.Publish; ack: () => void }> = [];
  publish(_exchange: string, routingKey: string, _body: Buffer, options: Options.Publish, confirm: (err: unknown) => void) {
    this.sent.push({ routingKey, options, ack: () => confirm(null) });
    return true;
  }
  giveBack(index: number): void {
    const { routingKey, options } = this.sent[index]!;
    this.emit('return', { fields: { exchange: '', routingKey }, properties: options, content: Buffer.alloc(0) });
  }
}

function publisher(policy = requesterPolicy()) {
  const channel = new FakeChannel();
  return { channel, publisher: new ConfirmPublisher(channel as unknown as ConfirmChannel, policy) };
}

describe('ConfirmPublisher (RR-13)', () => {
  it('publishes without waiting for earlier confirms, and ties a return to its own publish', async () => {
    const { channel, publisher: p } = publisher();
    const first = p.publish('', 'q.there', Buffer.alloc(0), { messageId: 'm1' });
    const second = p.publish('', 'q.gone', Buffer.alloc(0), { messageId: 'm2' });
    assert.equal(channel.sent.length, 2, 'both are on the wire before any confirm');
    channel.giveBack(1);
    channel.sent[0]!.ack();
    channel.sent[1]!.ack();
    await first;
    await assert.rejects(second, (err: unknown) => err instanceof PublishFailedError && err.returned);
  });

  it('takes the ack alone as delivery when returns are not honoured', async () => {
    const { channel, publisher: p } = publisher(requesterPolicy({ honourReturns: false }));
    const sent = p.publish('', 'q.gone', Buffer.alloc(0), { messageId: 'm1' });
    channel.giveBack(0);
    channel.sent[0]!.ack();
    await sent;
  });

  it('refuses a long short string before anything is sent (RR-18)', async () => {
    const { channel, publisher: p } = publisher();
    await assert.rejects(p.publish('', 'q', Buffer.alloc(0), { correlationId: 'c'.repeat(256) }));
    assert.equal(channel.sent.length, 0);
  });
});
