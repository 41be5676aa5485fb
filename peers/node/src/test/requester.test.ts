// The requester's policy knobs of issue 12 that need no broker: the requester is built past
// TypeScript's `private` on a connection whose confirm channel records publishes and acks
// them (or, with `returnAll`, returns each one first, as RabbitMQ does for an unroutable
// mandatory publish). Nothing ever replies, so every call ends by its timeout or by close().

import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { Options } from 'amqplib';
import { PublishFailedError, RequestTimedOutError, RequesterClosedError, RequestTimeoutError } from '../errors';
import { type RequesterPolicy, requesterPolicy } from '../policy';
import { Requester, type RequesterOptions } from '../requester';

interface Published {
  exchange: string;
  routingKey: string;
  options: Options.Publish;
}

function requester(changes: Partial<RequesterPolicy> = {}, returnAll = false, options: RequesterOptions = {}) {
  const published: Published[] = [];
  const confirmChannel = Object.assign(new EventEmitter(), {
    publish(exchange: string, routingKey: string, _body: Buffer, opts: Options.Publish, confirmed: (err: unknown) => void) {
      published.push({ exchange, routingKey, options: opts });
      if (returnAll) confirmChannel.emit('return', { fields: { exchange, routingKey }, properties: opts });
      setImmediate(() => confirmed(null));
      return true;
    },
  });
  const connection = { createConfirmChannel: async () => confirmChannel, close: async () => undefined };
  const ctor = Requester as unknown as new (...args: unknown[]) => Requester;
  const made = new ctor(connection, null, 'rq', options, requesterPolicy(changes));
  return { requester: made, published };
}

async function elapsed<T>(call: Promise<T>): Promise<number> {
  const start = Date.now();
  await call.catch(() => undefined);
  return Date.now() - start;
}

describe('Requester policy', () => {
  it('times a request out at the policy default when none is given, the caller default first (RR-9.3)', async () => {
    const { requester: r } = requester({ defaultTimeoutMs: 40 });
    await assert.rejects(r.request('', 'q', {}), (err: unknown) => err instanceof RequestTimedOutError && err.timeoutMs === 40);
    const { requester: own } = requester({ defaultTimeoutMs: 40 }, false, { defaultTimeoutMs: 60 });
    await assert.rejects(own.request('', 'q', {}), (err: unknown) => err instanceof RequestTimedOutError && err.timeoutMs === 60);
    assert.equal(r.timedOut, 1);
  });

  it('never counts a gather that ends at its timeout, unless the policy does (RR-9.4)', async () => {
    for (const [count, expected] of [[false, 0], [true, 2]] as const) {
      const { requester: r } = requester({ countGatherTimeouts: count });
      await assert.rejects(r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 20 }), RequestTimeoutError);
      assert.deepEqual(await r.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 20 }), []);
      assert.equal(r.timedOut, expected);
    }
  });

  it('ends pending calls at once as closed at close(), or leaves them to time out (RR-9.5)', async () => {
    const { requester: r } = requester();
    const call = r.request('', 'q', {}, { timeoutMs: 5_000 });
    const gather = r.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 5_000 });
    await new Promise((resolve) => setImmediate(resolve));
    const ended = Promise.all([assert.rejects(call, RequesterClosedError), assert.rejects(gather, RequesterClosedError)]);
    const closing = Date.now();
    await r.close();
    await ended;
    assert.ok(Date.now() - closing < 1_000, 'ended at once, not at their 5 s timeouts');
    assert.equal(r.timedOut, 0);

    const { requester: waits } = requester({ pendingAtClose: 'wait' });
    const left = waits.request('', 'q', {}, { timeoutMs: 80 });
    await new Promise((resolve) => setImmediate(resolve));
    const timedOut = assert.rejects(left, RequestTimedOutError);
    await waits.close();
    assert.ok((await elapsed(left)) >= 60, 'the call waited out its timeout');
    await timedOut;
  });

  it('refuses a gather whose publish is returned at once, or waits when the policy ignores it (RR-13.3)', async () => {
    const { requester: r } = requester({}, true);
    const refused = r.publishRequest(undefined, {}, () => undefined, { exchange: 'fan', timeoutMs: 5_000 });
    assert.ok((await elapsed(refused)) < 1_000);
    await assert.rejects(refused, (err: unknown) => err instanceof PublishFailedError && err.returned);

    const { requester: ignores } = requester({ honourGatherReturns: false }, true);
    assert.deepEqual(await ignores.sendRequestMulti(undefined, {}, { endpoint: 'nowhere', timeoutMs: 50 }), []);
    // A request's return is the other knob's (RR-13.2), still honoured.
    await assert.rejects(ignores.request('', 'nowhere', {}, { timeoutMs: 5_000 }), PublishFailedError);
  });

  it('sends the type as the AMQP type property, none when not given, or as a header (SG-2.3)', async () => {
    const { requester: r, published } = requester();
    await r.request('', 'q', {}, { timeoutMs: 20, type: 'quote.requested' }).catch(() => undefined);
    await r.sendRequestMulti('quote.requested', {}, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 20 }).catch(() => undefined);
    await r.request('', 'q', {}, { timeoutMs: 20 }).catch(() => undefined);
    assert.deepEqual(published.map((p) => p.options.type), ['quote.requested', 'quote.requested', 'quote.requested', undefined]);
    assert.ok(published.every((p) => p.options.headers?.type === undefined));

    const { requester: header, published: sent } = requester({ typeCarrier: 'header' });
    await header.sendRequestMulti('quote.requested', {}, { endpoint: 'q', timeoutMs: 20 });
    assert.equal(sent[0]?.options.type, undefined);
    assert.equal(sent[0]?.options.headers?.type, 'quote.requested');
    assert.equal(sent[0]?.options.headers?.['acemq-reply-to'], 'rq', 'the reply address header is kept');
  });

  it("gives a gather's copies its requestMessageId as correlation_id when none is given, or none (SG-1)", async () => {
    const { requester: r, published } = requester();
    await r.sendRequestMulti(undefined, { correlationId: 'in-body' }, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 20, requestMessageId: 'g1' }).catch(() => undefined);
    await r.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 20, requestMessageId: 'g2', correlationId: 'biz' });
    assert.deepEqual(published.map((p) => [p.options.messageId, p.options.correlationId]), [['g1', 'g1'], ['g1', 'g1'], ['g2', 'biz']]);

    const { requester: none, published: bare } = requester({ gatherDefaultCorrelation: 'none' });
    await none.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 20, requestMessageId: 'g3' });
    assert.equal(bare[0]?.options.correlationId, undefined);
  });
});
