import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConsumeMessage } from 'amqplib';
import type { ResponderMutant } from '../mutants';
import { Responder } from '../responder';

// Stands in for the broker: the responder's constructor and process() are reached past
// TypeScript's `private`, with a channel that records acks and a publisher that confirms.
function responder(mutant: ResponderMutant | undefined): { responder: Responder; acked: ConsumeMessage[] } {
  const acked: ConsumeMessage[] = [];
  const channel = { ack: (msg: ConsumeMessage) => acked.push(msg), nack: () => assert.fail('nacked') };
  const publisher = { publish: async () => undefined };
  const ctor = Responder as unknown as new (...args: unknown[]) => Responder;
  const echo = (request: unknown) => ({ echo: request });
  return { responder: new ctor(null, channel, publisher, 'svc', echo, { mutant }), acked };
}

function deliver(r: Responder, id: string): Promise<void> {
  const msg = {
    content: Buffer.from('{"a":1}'),
    fields: {},
    properties: { messageId: id, headers: { 'acemq-reply-to': 'rq' } },
  } as unknown as ConsumeMessage;
  return (r as unknown as { process(m: ConsumeMessage): Promise<void> }).process(msg);
}

describe('Responder', () => {
  it('counts an answer before acknowledging it (RR-15)', async () => {
    const { responder: r, acked } = responder(undefined);
    await deliver(r, 'm1');
    assert.equal(acked.length, 1);
    assert.equal(r.answered, 1);
  });

  it('never counts the first answer for the counters-after-subscribe mutant', async () => {
    const { responder: r, acked } = responder('counters-after-subscribe');
    await deliver(r, 'm1');
    assert.equal(acked.length, 1);
    assert.equal(r.answered, 0);
    await deliver(r, 'm2');
    await deliver(r, 'm3');
    assert.equal(r.answered, 2);
  });
});
