import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConsumeMessage, Options } from 'amqplib';
import { type ResponderPolicy, responderPolicy } from '../policy';
import { Responder, type ResponderOptions, declareRequestQueue } from '../responder';

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
function responder(
  changes: Partial<ResponderPolicy> = {},
  failPublish = false,
  handler?: () => unknown,
  options: ResponderOptions = {},
): Fixture {
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
  fixture.responder = new ctor({ urls: ['amqp://unused/'] }, 'svc', echo, options, responderPolicy(changes));
  attach(fixture.responder, null, channel, publisher);
  return fixture;
}

/** Gives `r` the session openSession would have made on a connection: its channel and publisher. */
function attach(r: Responder, connection: unknown, channel: unknown, publisher: unknown): Record<string, unknown> {
  const session = { connection, channel, publisher, node: 0, lost: false };
  (r as unknown as { session: unknown }).session = session;
  return session;
}

function deliver(r: Responder, id: string, properties: Record<string, unknown> = {}, body = '{"a":1}'): Promise<void> {
  const msg = {
    content: Buffer.from(body),
    fields: {},
    properties: { messageId: id, headers: { 'acemq-reply-to': 'rq' }, ...properties },
  } as unknown as ConsumeMessage;
  // As the consumer does: the request belongs to the session it was delivered on.
  const inner = r as unknown as { session: unknown; sessionOf: WeakMap<ConsumeMessage, unknown>; process(m: ConsumeMessage): Promise<void> };
  inner.sessionOf.set(msg, inner.session);
  return inner.process(msg);
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

  /** Delivers the same request until it is acked (dead-lettered), as the quorum queue would. */
  async function deliverUntilAcked(f: Fixture, id: string, firstCount: number | undefined): Promise<number[]> {
    const counts: number[] = [];
    for (let count = firstCount; f.acked.length === 0 && counts.length < 10; count = (count ?? 0) + 1) {
      const headers: Record<string, unknown> = { 'acemq-reply-to': 'rq' };
      if (count !== undefined) headers['x-delivery-count'] = count;
      await deliver(f.responder, id, { headers });
      counts.push(count ?? 0);
    }
    return counts;
  }

  it('makes 3 attempts at an undeliverable reply when given none, and what the policy says otherwise (RR-14.4)', async () => {
    const spec = responder({}, true);
    assert.equal((await deliverUntilAcked(spec, 'm1', undefined)).length, 3);
    assert.equal(spec.nacked.length, 2);
    const five = responder({ defaultMaxAttempts: 5 }, true);
    assert.equal((await deliverUntilAcked(five, 'm1', undefined)).length, 5);
    assert.match(String(five.published[0]?.options.headers?.['acemq-dead-letter-reason']), /^UndeliverableReply: /);
  });

  it('numbers attempts x-delivery-count + 1, or from 0 when the policy says so (RR-14.3)', async () => {
    const seen: number[] = [];
    const observed: ResponderOptions = { observer: { handled: (context) => seen.push(context.attempt) } };
    await deliverUntilAcked(responder({}, true, undefined, observed), 'm1', 0);
    assert.deepEqual(seen, [1, 2, 3]);
    seen.length = 0;
    await deliverUntilAcked(responder({ attemptBase: 0 }, true, undefined, observed), 'm1', undefined);
    assert.deepEqual(seen, [0, 1, 2, 3], 'one more delivery: the last is still the one numbered max_attempts');
  });

  it('retries an undelivered failure reply and dead-letters it as UndeliverableReply (RR-14.1)', async () => {
    const fail = () => {
      throw new Error('no price');
    };
    const f = responder({}, true, fail);
    await deliverUntilAcked(f, 'm1', undefined);
    assert.equal(f.handled, 3);
    assert.match(String(f.published[0]?.options.headers?.['acemq-dead-letter-reason']), /^UndeliverableReply: /);
    assert.equal(f.responder.answered, 0);
  });

  it('dead-letters with the failure at once when the failure reply is unchecked', async () => {
    const fail = () => {
      throw new Error('no price');
    };
    const f = responder({ failureReplyDelivery: 'unchecked' }, true, fail);
    await deliver(f.responder, 'm1');
    assert.equal(f.handled, 1);
    assert.equal(f.nacked.length, 0);
    assert.equal(f.acked.length, 1);
    assert.equal(f.published[0]?.options.headers?.['acemq-dead-letter-reason'], 'Error: no price');
  });

  it('answers a body that is not JSON with MalformedRequest, without the handler, then dead-letters it (RR-19.2)', async () => {
    const f = responder();
    await deliver(f.responder, 'm1', {}, 'not json {');
    assert.equal(f.handled, 0);
    const [reply, dead] = f.published;
    assert.equal(reply?.routingKey, 'rq');
    assert.equal(reply?.body.length, 0);
    const failure = String(reply?.options.headers?.['acemq-error']);
    assert.match(failure, /^MalformedRequest: /);
    assert.equal(dead?.routingKey, 'svc.dlq');
    assert.equal(dead?.options.headers?.['acemq-dead-letter-reason'], failure);
    assert.equal(f.acked.length, 1);
    assert.equal(f.responder.answered, 0);
  });

  it('acks a body that is not JSON silently when the policy drops it', async () => {
    const f = responder({ malformedRequest: 'drop' });
    await deliver(f.responder, 'm1', {}, 'not json {');
    assert.equal(f.handled, 0);
    assert.equal(f.published.length, 0);
    assert.equal(f.acked.length, 1);
  });

  it('requeues a failed request after its failure reply until the last attempt when the policy retries failures (RR-11.2)', async () => {
    const fail = () => {
      throw new Error('no price');
    };
    const spec = responder({}, false, fail);
    await deliver(spec.responder, 'm1');
    assert.deepEqual(spec.published.map((p) => p.routingKey), ['rq', 'svc.dlq'], 'the spec dead-letters at once');
    const f = responder({ retryFailures: true }, false, fail);
    const counts = await deliverUntilAcked(f, 'm1', undefined);
    assert.equal(counts.length, 3);
    assert.equal(f.handled, 3);
    assert.equal(f.nacked.length, 2);
    assert.deepEqual(f.published.map((p) => p.routingKey), ['rq', 'rq', 'rq', 'svc.dlq']);
    assert.equal(f.published[3]?.options.headers?.['acemq-dead-letter-reason'], 'Error: no price');
  });

  it('acks the last attempt at an undeliverable reply without a dead-letter when the policy says ack (RR-14.2)', async () => {
    const f = responder({ lastAttempt: 'ack' }, true);
    const dead: unknown[] = [];
    (f.responder as unknown as { options: ResponderOptions }).options.observer = { deadLettered: (e) => dead.push(e) };
    assert.equal((await deliverUntilAcked(f, 'm1', undefined)).length, 3);
    assert.equal(f.nacked.length, 2);
    assert.equal(f.published.length, 0);
    assert.deepEqual(dead, []);
  });

  it('sends a failure reply with an empty body and the simple type name, or what the policy says (RR-10)', async () => {
    class ScenarioFailure extends Error {}
    const fail = () => {
      throw new ScenarioFailure('no price');
    };
    const spec = responder({}, false, fail);
    await deliver(spec.responder, 'm1');
    assert.equal(spec.published[0]?.body.length, 0);
    assert.equal(spec.published[0]?.options.headers?.['acemq-error'], 'ScenarioFailure: no price');
    const f = responder({ failureBody: 'json', errorTypeName: 'qualified' }, false, fail);
    await deliver(f.responder, 'm1');
    const text = 'acemq.ScenarioFailure: no price';
    assert.equal(f.published[0]?.options.headers?.['acemq-error'], text);
    assert.deepEqual(JSON.parse(String(f.published[0]?.body)), { error: text });
    assert.equal(f.published[0]?.options.contentType, 'application/json');
    // Only a handler's own exception is qualified.
    const malformed = responder({ errorTypeName: 'qualified' });
    await deliver(malformed.responder, 'm1', {}, 'not json {');
    assert.match(String(malformed.published[0]?.options.headers?.['acemq-error']), /^MalformedRequest: /);
  });

  it('puts the JSON body on every failure reply when the policy says so, the responder\'s own too (RR-10.1)', async () => {
    const f = responder({ failureBody: 'json', headerTypes: 'strict' });
    await deliver(f.responder, 'm1', {}, 'not json {');
    await deliver(f.responder, 'm2', { headers: { 'acemq-reply-to': 'rq', flag: true } });
    const replies = f.published.filter((p) => p.routingKey === 'rq'); // the rest went to svc.dlq
    assert.equal(replies.length, 2);
    for (const p of replies) assert.deepEqual(JSON.parse(String(p.body)), { error: p.options.headers?.['acemq-error'] });
    assert.match(String(replies[0]?.options.headers?.['acemq-error']), /^MalformedRequest: /);
    assert.match(String(replies[1]?.options.headers?.['acemq-error']), /^MalformedHeader: /);
  });

  it('declares the request queue quorum, or passively first and classic only when missing (RR-17.1)', async () => {
    for (const [how, exists, expected] of [
      ['quorum', true, [{ durable: true, arguments: { 'x-queue-type': 'quorum' } }]],
      ['classic_if_missing', true, []],
      ['classic_if_missing', false, [{ durable: true }]],
    ] as const) {
      const asserted: unknown[] = [];
      const probes: string[] = [];
      const connection = {
        createChannel: async () => ({
          on: () => undefined,
          checkQueue: async (queue: string) => {
            probes.push(queue);
            if (!exists) throw Object.assign(new Error('NOT_FOUND'), { code: 404 });
            return { queue };
          },
          close: async () => undefined,
        }),
      };
      const channel = { assertQueue: async (queue: string, options: unknown) => asserted.push([queue, options]) };
      await declareRequestQueue(connection as never, channel as never, 'svc', how);
      assert.deepEqual(asserted, expected.map((options) => ['svc', options]), `${how}, exists=${exists}`);
      assert.deepEqual(probes, how === 'quorum' ? [] : ['svc']);
    }
  });

  it('reads a byte-array acemq-reply-to, or takes it as absent when the policy ignores it (RR-2.2)', async () => {
    const props = { replyTo: 'native-q', headers: { 'acemq-reply-to': Buffer.from('header-q') } };
    const spec = responder();
    await deliver(spec.responder, 'm1', props);
    assert.equal(spec.published[0]?.routingKey, 'header-q');
    const f = responder({ bytesAddress: 'ignore' });
    await deliver(f.responder, 'm1', props);
    assert.equal(f.published[0]?.routingKey, 'native-q');
    await deliver(f.responder, 'm2', { headers: { 'acemq-reply-to': Buffer.from('header-q') } });
    assert.equal(f.responder.unanswerable, 1);
    await deliver(f.responder, 'm3', { replyTo: 'native-q', headers: { 'acemq-reply-to': 'string-q' } });
    assert.equal(f.published[1]?.routingKey, 'string-q', 'a string header is still read');
  });

  it('sends application/json replies, or none when the policy says so (RR-4.3)', async () => {
    const spec = responder();
    await deliver(spec.responder, 'm1');
    assert.equal(spec.published[0]?.options.contentType, 'application/json');
    const f = responder({ replyContentType: 'none' });
    await deliver(f.responder, 'm1');
    assert.equal(f.published[0]?.options.contentType, undefined);
  });

  it('strips x-acemq-* before the handler, or every x- header when the policy says so (RR-5.2)', async () => {
    const seen: string[][] = [];
    const observed: ResponderOptions = { observer: { handled: (context) => seen.push(Object.keys(context.headers).sort()) } };
    const headers = { 'acemq-reply-to': 'rq', 'x-acemq-hop': '1', 'x-trace': 't', 'x-delivery-count': 1, app: 'a' };
    await deliver(responder({}, false, undefined, observed).responder, 'm1', { headers });
    await deliver(responder({ stripPrefix: 'x-' }, false, undefined, observed).responder, 'm1', { headers });
    assert.deepEqual(seen, [['acemq-reply-to', 'app', 'x-delivery-count', 'x-trace'], ['acemq-reply-to', 'app']]);
    assert.equal(seen.length, 2);
  });

  it("shows the handler the spec's own headers, acemq-reply-to among them, or hides every acemq-* when the policy says so (RR-5.2)", async () => {
    const seen: string[][] = [];
    const observed: ResponderOptions = { observer: { handled: (context) => seen.push(Object.keys(context.headers).sort()) } };
    const headers = { 'acemq-reply-to': 'rq', responseMessageId: 'r1', 'acemq-whatever': 'w', 'x-acemq-hop': '1', 'x-custom': 'c' };
    const spec = responder({}, false, undefined, observed);
    await deliver(spec.responder, 'm1', { headers });
    const hides = responder({ passSpecHeaders: false }, false, undefined, observed);
    await deliver(hides.responder, 'm1', { headers });
    assert.deepEqual(seen, [['acemq-reply-to', 'acemq-whatever', 'responseMessageId', 'x-custom'], ['responseMessageId', 'x-custom']]);
    assert.equal(hides.published[0]?.routingKey, 'rq', 'the reply still goes to acemq-reply-to');
  });

  it('counts a request with no reply address, or only tells the observer when the policy does not count (RR-12.1)', async () => {
    const heard: unknown[] = [];
    const observed: ResponderOptions = { observer: { unanswerable: (e) => heard.push(e) } };
    const spec = responder({}, false, undefined, observed);
    await deliver(spec.responder, 'm1', { headers: {} });
    assert.equal(spec.responder.unanswerable, 1);
    const f = responder({ countUnanswerable: false }, false, undefined, observed);
    await deliver(f.responder, 'm2', { headers: {} });
    assert.equal(f.responder.unanswerable, 0);
    assert.equal(f.acked.length, 1);
    assert.equal(heard.length, 2);
  });
});

describe('Responder stop', () => {
  /** A responder whose reply confirms wait until `confirm()`; the connection records when it closed. */
  function slowConfirms(handler: () => unknown, changes: Partial<ResponderPolicy> = {}) {
    const events: string[] = [];
    const confirms: Array<() => void> = [];
    const channel = {
      ack: () => events.push('ack'),
      nack: () => events.push('nack'),
      cancel: async () => {
        events.push('cancel');
        return {};
      },
      close: async () => {
        events.push('channel close');
      },
    };
    const publisher = {
      publish: () => new Promise<void>((resolve) => confirms.push(resolve)),
    };
    const connection = { close: async () => events.push('close') };
    const ctor = Responder as unknown as new (...args: unknown[]) => Responder;
    const r = new ctor({ urls: ['amqp://unused/'] }, 'svc', handler, {}, responderPolicy(changes));
    attach(r, connection, channel, publisher).consumerTag = 'ctag';
    const confirm = () => confirms.splice(0).forEach((resolve) => resolve());
    return { r, events, confirms, confirm };
  }

  it('settles a request whose handler returned before it closes, and abandons one still running', async () => {
    let release!: () => void;
    const running = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const f = slowConfirms(() => (++calls === 1 ? { ok: 1 } : running.then(() => ({ ok: 2 }))));
    const answered = deliver(f.r, 'm1');
    const abandoned = deliver(f.r, 'm2');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(f.confirms.length, 1, "m1's reply is waiting for its confirm");
    const stopping = f.r.stop();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(f.events, ['cancel'], 'not closed while an answered request is unsettled');
    f.confirm();
    await stopping;
    // The channel's Close after its ack, before the connection's: amqplib may write channel
    // 0's Close ahead of an ack still buffered on the channel (an answered request requeued).
    assert.deepEqual(f.events, ['cancel', 'ack', 'channel close', 'close']);
    release();
    await Promise.all([answered, abandoned]);
    assert.deepEqual(f.events, ['cancel', 'ack', 'channel close', 'close'], 'the abandoned request is neither answered nor settled');
    assert.equal(f.confirms.length, 0);
  });

  it('counts Answered before the reply is confirmed, or right as its confirm arrives when the policy says so (RR-15.1)', async () => {
    for (const [answeredTiming, beforeConfirm] of [['before_publish', 1], ['after_confirm', 0]] as const) {
      const f = slowConfirms(() => ({ ok: 1 }), { answeredTiming });
      const answered = deliver(f.r, 'm1');
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(f.confirms.length, 1, 'the reply is out, its confirm held back');
      assert.equal(f.r.answered, beforeConfirm, answeredTiming);
      f.confirm();
      await answered;
      assert.equal(f.r.answered, 1, `${answeredTiming}: counted once the confirm is in, no later`);
      assert.deepEqual(f.events, ['ack']);
    }
  });

  it('takes Answered back when the reply publish fails, and never counts it after the confirm (RR-15.2)', async () => {
    for (const answeredTiming of ['before_publish', 'after_confirm'] as const) {
      const { responder: r } = responder({ answeredTiming }, true);
      await deliver(r, 'm1');
      assert.equal(r.answered, 0, answeredTiming);
    }
    const { responder: kept } = responder({ rollbackAnswered: false }, true);
    await deliver(kept, 'm1');
    assert.equal(kept.answered, 1);
  });
});
