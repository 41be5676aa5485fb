import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConsumeMessage, Options } from 'amqplib';
import type { ResponderMutant } from '../mutants';
import { Responder } from '../responder';

interface Published {
  routingKey: string;
  body: Buffer;
  options: Options.Publish;
}

interface Fixture {
  responder: Responder;
  acked: ConsumeMessage[];
  published: Published[];
  handled: number;
}

// Stands in for the broker: the responder's constructor and process() are reached past
// TypeScript's `private`, with a channel that records acks and a publisher that confirms
// (or, with `failPublish`, fails every reply as a returned publish would).
function responder(mutant: ResponderMutant | undefined, failPublish = false): Fixture {
  const fixture = { acked: [], published: [], handled: 0 } as unknown as Fixture;
  const channel = { ack: (msg: ConsumeMessage) => fixture.acked.push(msg), nack: () => assert.fail('nacked') };
  const publisher = {
    publish: async (_exchange: string, routingKey: string, body: Buffer, options: Options.Publish) => {
      if (failPublish && !routingKey.endsWith('.dlq')) throw new Error('returned');
      fixture.published.push({ routingKey, body, options });
    },
  };
  const ctor = Responder as unknown as new (...args: unknown[]) => Responder;
  const echo = (request: unknown) => {
    fixture.handled++;
    return { echo: request };
  };
  fixture.responder = new ctor(null, channel, publisher, 'svc', echo, { mutant });
  return fixture;
}

function deliver(r: Responder, id: string, properties: Record<string, unknown> = {}): Promise<void> {
  const msg = {
    content: Buffer.from('{"a":1}'),
    fields: {},
    properties: { messageId: id, headers: { 'acemq-reply-to': 'rq' }, ...properties },
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

  it('addresses the reply by message_id both ways (RR-4, SG-3)', async () => {
    const { responder: r, published } = responder(undefined);
    await deliver(r, 'm1', { correlationId: 'c1' });
    assert.equal(published[0]?.options.correlationId, 'm1');
    assert.equal(published[0]?.options.headers?.responseMessageId, 'm1');
  });

  it('copies the correlation_id for the correlation-from-correlation-id mutant', async () => {
    const { responder: r, published } = responder('correlation-from-correlation-id');
    await deliver(r, 'm1', { correlationId: 'c1' });
    await deliver(r, 'm2');
    assert.equal(published[0]?.options.correlationId, 'c1');
    assert.equal(published[0]?.options.headers?.responseMessageId, 'm1');
    assert.equal(published[1]?.options.correlationId, undefined);
  });

  it('leaves responseMessageId off for the no-response-message-id mutant', async () => {
    const { responder: r, published } = responder('no-response-message-id');
    await deliver(r, 'm1');
    assert.equal(published[0]?.options.correlationId, 'm1');
    assert.equal(published[0]?.options.headers?.responseMessageId, undefined);
  });

  it('acknowledges an undeliverable reply for the acks-undeliverable mutant', async () => {
    const { responder: r, acked, published } = responder('acks-undeliverable', true);
    await deliver(r, 'm1');
    assert.equal(acked.length, 1);
    assert.equal(published.length, 0, 'nothing dead-lettered');
    assert.equal(r.answered, 0);
  });

  it('fails a request with a boolean header for the strict-header-types mutant', async () => {
    const fixture = responder('strict-header-types');
    await deliver(fixture.responder, 'm1', { headers: { 'acemq-reply-to': 'rq', 'x-trace': 't', 'x-flag': true } });
    assert.equal(fixture.handled, 0, 'the handler never ran');
    const [reply, dead] = fixture.published;
    assert.equal(reply?.routingKey, 'rq');
    assert.equal(reply?.options.headers?.['acemq-error'], 'MalformedHeader: x-flag');
    assert.equal(reply?.body.length, 0);
    assert.equal(dead?.routingKey, 'svc.dlq');
    assert.equal(dead?.options.headers?.['acemq-dead-letter-reason'], 'MalformedHeader: x-flag');
    assert.equal(fixture.acked.length, 1);
  });

  it('answers a request with string and integer headers for the strict-header-types mutant', async () => {
    const fixture = responder('strict-header-types');
    await deliver(fixture.responder, 'm1', { headers: { 'acemq-reply-to': 'rq', 'x-n': 5 } });
    assert.equal(fixture.published[0]?.options.headers?.['acemq-error'], undefined);
    assert.equal(fixture.handled, 1);
    assert.equal(fixture.responder.answered, 1);
  });
});
