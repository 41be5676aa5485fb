import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConsumeMessage, Options } from 'amqplib';
import { type ResponderPolicy, responderPolicy } from '../policy';
import { Responder } from '../responder';

interface Published {
  routingKey: string;
  body: Buffer;
  options: Options.Publish;
}

interface Fixture {
  responder: Responder;
  acked: ConsumeMessage[];
  nacked: ConsumeMessage[];
  published: Published[];
  handled: number;
}

// Stands in for the broker: the responder's constructor and process() are reached past
// TypeScript's `private`, with a channel that records acks and a publisher that confirms
// (or, with `failPublish`, fails every reply as a returned publish would).
function responder(changes: Partial<ResponderPolicy> = {}, failPublish = false, handler?: () => unknown): Fixture {
  const fixture = { acked: [], nacked: [], published: [], handled: 0 } as unknown as Fixture;
  const channel = {
    ack: (msg: ConsumeMessage) => fixture.acked.push(msg),
    nack: (msg: ConsumeMessage, _all: boolean, requeue: boolean) => {
      assert.equal(requeue, true, 'a nack requeues explicitly');
      fixture.nacked.push(msg);
    },
  };
  const publisher = {
    publish: async (_exchange: string, routingKey: string, body: Buffer, options: Options.Publish) => {
      if (failPublish && !routingKey.endsWith('.dlq')) throw new Error('returned');
      fixture.published.push({ routingKey, body, options });
    },
  };
  const ctor = Responder as unknown as new (...args: unknown[]) => Responder;
  const echo = (request: unknown) => {
    fixture.handled++;
    return handler ? handler() : { echo: request };
  };
  fixture.responder = new ctor(null, channel, publisher, 'svc', echo, {}, responderPolicy(changes));
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
    const { responder: r, acked } = responder();
    await deliver(r, 'm1');
    assert.equal(acked.length, 1);
    assert.equal(r.answered, 1);
  });

  it('never counts the first answer when counters are made after the first delivery', async () => {
    const { responder: r, acked } = responder({ countersCreated: 'after_first_delivery' });
    await deliver(r, 'm1');
    assert.equal(acked.length, 1);
    assert.equal(r.answered, 0);
    await deliver(r, 'm2');
    await deliver(r, 'm3');
    assert.equal(r.answered, 2);
  });

  it('addresses the reply by message_id both ways (RR-4, SG-3)', async () => {
    const { responder: r, published } = responder();
    await deliver(r, 'm1', { correlationId: 'c1' });
    assert.equal(published[0]?.options.correlationId, 'm1');
    assert.equal(published[0]?.options.headers?.responseMessageId, 'm1');
  });

  it('copies the correlation_id when the policy says so', async () => {
    const { responder: r, published } = responder({ replyCorrelationFrom: 'correlation_id' });
    await deliver(r, 'm1', { correlationId: 'c1' });
    await deliver(r, 'm2');
    assert.equal(published[0]?.options.correlationId, 'c1');
    assert.equal(published[0]?.options.headers?.responseMessageId, 'm1');
    assert.equal(published[1]?.options.correlationId, undefined);
  });

  it('leaves responseMessageId off when the policy says so', async () => {
    const { responder: r, published } = responder({ responseMessageId: false });
    await deliver(r, 'm1');
    assert.equal(published[0]?.options.correlationId, 'm1');
    assert.equal(published[0]?.options.headers?.responseMessageId, undefined);
  });

  it('acknowledges an undeliverable reply when the policy says ack', async () => {
    const { responder: r, acked, published } = responder({ undeliverableReply: 'ack' }, true);
    await deliver(r, 'm1');
    assert.equal(acked.length, 1);
    assert.equal(published.length, 0, 'nothing dead-lettered');
    assert.equal(r.answered, 0);
  });

  it('fails a request with a boolean header under strict header types', async () => {
    const fixture = responder({ headerTypes: 'strict' });
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

  it('answers a request with string and integer headers under strict header types', async () => {
    const fixture = responder({ headerTypes: 'strict' });
    await deliver(fixture.responder, 'm1', { headers: { 'acemq-reply-to': 'rq', 'x-n': 5 } });
    assert.equal(fixture.published[0]?.options.headers?.['acemq-error'], undefined);
    assert.equal(fixture.handled, 1);
    assert.equal(fixture.responder.answered, 1);
  });

  it('sends no failure reply and retries, then dead-letters, when handler failures retry', async () => {
    class ScenarioFailure extends Error {}
    const fail = () => {
      throw new ScenarioFailure('no price');
    };
    const fixture = responder({ handlerFailure: 'retry' }, false, fail);
    await deliver(fixture.responder, 'm1');
    assert.equal(fixture.nacked.length, 1);
    assert.equal(fixture.published.length, 0, 'no failure reply');
    await deliver(fixture.responder, 'm1', { headers: { 'acemq-reply-to': 'rq', 'x-delivery-count': 2 } });
    const [dead] = fixture.published;
    assert.equal(dead?.routingKey, 'svc.dlq');
    assert.equal(dead?.options.headers?.['acemq-dead-letter-reason'], 'ScenarioFailure: no price');
    assert.equal(fixture.acked.length, 1);
  });
});
