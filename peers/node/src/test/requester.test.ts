// The requester's policy knobs of issue 12 that need no broker: the requester is built past
// TypeScript's `private` on a connection whose confirm channel records publishes and acks
// them (or, with `returnAll`, returns each one first, as RabbitMQ does for an unroutable
// mandatory publish). Nothing ever replies, so every call ends by its timeout or by close().

import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { Options } from 'amqplib';
import { PublishFailedError, ReplyDecodeError, RequestTimedOutError, RequesterClosedError, RequestTimeoutError } from '../errors';
import { type RequesterPolicy, requesterPolicy } from '../policy';
import { Requester, type RequesterOptions, type UnmatchedReply } from '../requester';

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
  const connection = Object.assign(new EventEmitter(), {
    createConfirmChannel: async () => confirmChannel,
    close: async () => undefined,
  });
  const ctor = Requester as unknown as new (...args: unknown[]) => Requester;
  const made = new ctor({ urls: ['amqp://unused/'] }, options, requesterPolicy(changes));
  // The session openSession would have made: its reply queue is 'rq'.
  (made as unknown as { session: unknown }).session = { connection, channel: null, replyQueue: 'rq', node: 0 };
  return { requester: made, published, connection };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

  it('names the reply queue in reply_to, or a stale name when the policy says so (RR-1.3)', async () => {
    const { requester: r, published } = requester();
    await r.request('', 'q', {}, { timeoutMs: 10 }).catch(() => undefined);
    const { requester: stale, published: sent } = requester({ nativeAddress: 'stale' });
    await stale.request('', 'q', {}, { timeoutMs: 10 }).catch(() => undefined);
    assert.deepEqual([published[0]?.options.replyTo, published[0]?.options.headers?.['acemq-reply-to']], ['rq', 'rq']);
    assert.deepEqual([sent[0]?.options.replyTo, sent[0]?.options.headers?.['acemq-reply-to']], ['rq.stale', 'rq']);
  });

  it('sends reply_to empty but present when the policy says so, the header right (RR-3.3)', async () => {
    const { requester: r, published } = requester({ nativeAddress: 'empty' });
    await r.request('', 'q', {}, { timeoutMs: 10 }).catch(() => undefined);
    assert.deepEqual([published[0]?.options.replyTo, published[0]?.options.headers?.['acemq-reply-to']], ['', 'rq']);
  });

  it('adds no x-acemq-hops, or a uint8 one on every request and gather copy when the policy says so (WF-2.1)', async () => {
    const { requester: spec, published: clean } = requester();
    await spec.request('', 'q', {}, { timeoutMs: 10 }).catch(() => undefined);
    assert.equal(clean[0]?.options.headers?.['x-acemq-hops'], undefined);
    const { requester: r, published } = requester({ narrowIntHeader: true });
    await r.request('', 'q', {}, { timeoutMs: 10 }).catch(() => undefined);
    await r.sendRequestMulti('t', {}, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 10 }).catch(() => undefined);
    await r.publishRequest(undefined, {}, () => undefined, { exchange: 'fan', timeoutMs: 10 });
    assert.equal(published.length, 4);
    for (const p of published) assert.deepEqual(p.options.headers?.['x-acemq-hops'], { '!': 'uint8', value: 1 });
  });

  it('publishes publishRequest once and a countless sendRequestMulti once, or what the policy says (SG-2)', async () => {
    const { requester: r, published } = requester();
    await r.publishRequest(undefined, {}, () => undefined, { exchange: 'fan', timeoutMs: 10 });
    await r.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 10 });
    assert.deepEqual(published.map((p) => p.exchange || p.routingKey), ['fan', 'q']);
    const { requester: twice, published: sent } = requester({ publishCopies: 2, multiCopiesWithoutCount: 0 });
    await twice.publishRequest(undefined, {}, () => undefined, { exchange: 'fan', timeoutMs: 10, requestMessageId: 'g' });
    await twice.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 10 });
    await twice.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 10, expectedReplyCount: 2 }).catch(() => undefined);
    assert.deepEqual(sent.map((p) => [p.exchange || p.routingKey, p.exchange ? p.options.messageId : '']), [['fan', 'g'], ['fan', 'g'], ['q', ''], ['q', '']]);
  });

  it('ends an unanswered request as a timeout, or as a null reply still counted when the policy says so (RR-9.1)', async () => {
    const { requester: r } = requester({ timeoutOutcome: 'null_reply' });
    assert.equal(await r.request('', 'q', {}, { timeoutMs: 10 }), null);
    assert.equal(r.timedOut, 1);
    await assert.rejects(r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 1, timeoutMs: 10 }), RequestTimeoutError);
  });

  /** Hands the requester a reply as its reply-queue consumer would. */
  function reply(r: Requester, correlationId: string | undefined, headers: Record<string, unknown>, body = '{"ok":1}'): void {
    const msg = { content: Buffer.from(body), fields: {}, properties: { correlationId, headers } };
    (r as unknown as { onReply(m: unknown): void }).onReply(msg);
  }

  /** The message_id of the last request published. */
  const lastId = (published: Published[]) => String(published[published.length - 1]?.options.messageId);
  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it('ignores unknown reply headers, or ends the call with a decode error when the policy says so (RR-5.3)', async () => {
    for (const [fails, known] of [[false, true], [true, false]] as const) {
      const { requester: r, published } = requester(fails ? { unknownReplyHeaders: 'fail' } : {});
      const call = r.request('', 'q', {}, { timeoutMs: 1_000 });
      await tick();
      reply(r, lastId(published), { responseMessageId: lastId(published), traceparent: 't' });
      if (known) assert.deepEqual(await call, { ok: 1 });
      else await assert.rejects(call, ReplyDecodeError);
      const ok = r.request('', 'q', {}, { timeoutMs: 1_000 });
      await tick();
      reply(r, lastId(published), { responseMessageId: lastId(published), 'x-dotnet-pub-seq-no': 7 });
      assert.deepEqual(await ok, { ok: 1 }, 'the spec headers and x- headers decode');
    }
  });

  it('counts a reply for no call in Unmatched, by kind as the policy says, and tells the observer (RR-8.2, SG-8.1)', async () => {
    const cases = [
      [{}, 2],
      [{ countUnmatched: false }, 1],
      [{ countGatherUnmatched: false }, 1],
    ] as const;
    for (const [changes, expected] of cases) {
      const heard: unknown[] = [];
      const { requester: r } = requester(changes, false, { observer: { unmatched: (u) => heard.push(u) } });
      await r.sendRequestMulti(undefined, {}, { endpoint: 'q', timeoutMs: 10, requestMessageId: 'g1' });
      reply(r, 'req-gone', { responseMessageId: 'req-gone' }); // a request's late reply
      reply(r, 'g1', { responseMessageId: 'g1' }); // an ended gather's, correlation_id defaulted to its id
      assert.equal(r.unmatched, expected, JSON.stringify(changes));
      assert.equal(heard.length, 2);
    }
  });

  it('drops a reply for no call, or hands it to the oldest waiting request when the policy says so (RR-8.3)', async () => {
    for (const [changes, handed] of [[{}, false], [{ unmatchedReply: 'oldest_waiter' as const }, true]] as const) {
      const { requester: r, published } = requester(changes);
      const call = r.request('', 'q', {}, { timeoutMs: 100 });
      await tick();
      reply(r, 'someone-else', { responseMessageId: 'someone-else' }, '{"stray":1}');
      if (handed) {
        assert.deepEqual(await call, { stray: 1 });
        assert.equal(r.unmatched, 0);
      } else {
        await assert.rejects(call, RequestTimedOutError);
        assert.equal(r.unmatched, 1);
      }
      assert.ok(lastId(published));
    }
  });
  it('gives an unanswered request up at its timeout, or half its timeout later still as a counted timeout (RR-9.6)', async () => {
    for (const requestDeadline of ['timeout', 'late'] as const) {
      // The default timeout is the policy's here, so the late breach applies to it too.
      const { requester: r } = requester({ requestDeadline, defaultTimeoutMs: 400 });
      const took = await elapsed(
        assert.rejects(r.request('', 'q', {}), (err: unknown) => err instanceof RequestTimedOutError && err.timeoutMs === 400),
      );
      // Upper bounds short of where the late breach ends (600 ms), with room for a loaded machine.
      if (requestDeadline === 'timeout') assert.ok(took >= 395 && took < 590, `at the timeout: ${took} ms`);
      else assert.ok(took >= 595, `half the timeout late: ${took} ms`);
      assert.equal(r.timedOut, 1);
      // Gathers keep their own deadline.
      const gather = r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 1, timeoutMs: 400 });
      assert.ok((await elapsed(assert.rejects(gather, RequestTimeoutError))) < 590);
    }
  });

  it('ends a gather at its timeout despite its replies, or restarts the timeout at every reply it keeps (SG-9.1)', async () => {
    for (const gatherDeadline of ['fixed', 'restart_per_reply'] as const) {
      const { requester: r } = requester({ gatherDeadline });
      const start = Date.now();
      const multi = r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 400, requestMessageId: 'g1' });
      const fan = r.publishRequest(undefined, {}, () => undefined, { exchange: 'fan', timeoutMs: 400, requestMessageId: 'g2' });
      await sleep(300);
      reply(r, 'g1', { responseMessageId: 'g1' });
      reply(r, 'g2', { responseMessageId: 'g2' });
      await assert.rejects(multi, (err: unknown) => err instanceof RequestTimeoutError && err.partialReplies.length === 1);
      assert.deepEqual(await fan, [{ ok: 1 }]);
      const took = Date.now() - start;
      // Short of where a restarted timeout ends (300 + 400 ms), with room for a loaded machine.
      if (gatherDeadline === 'fixed') assert.ok(took < 690, `at the timeout: ${took} ms`);
      else assert.ok(took >= 695, `a whole timeout after the reply: ${took} ms`);
    }
  });

  /** A failure reply, as a responder whose handler threw sends it (RR-10): empty body, acemq-error. */
  function failure(r: Requester, correlationId: string, responseMessageId: string): void {
    reply(r, correlationId, { 'acemq-error': 'ScenarioFailure: no price', responseMessageId }, '');
  }

  it('keeps a failure reply out of its pending gather and counts it Unmatched, or as the policy says (SG-10)', async () => {
    const cases = [
      // changes, kept as a null reply, counted, heard
      [{}, false, 2, 2],
      [{ gatherFailureReply: 'keep' }, true, 0, 0],
      [{ countGatherFailures: false }, false, 0, 2],
      // SG-8.1's knob is not SG-10's: a failure reply is still counted.
      [{ countGatherUnmatched: false }, false, 2, 2],
      [{ gatherStrayReply: 'oldest_gather' }, false, 2, 2],
    ] as const;
    for (const [changes, kept, counted, heard] of cases) {
      const events: UnmatchedReply[] = [];
      const { requester: r } = requester(changes, false, { observer: { unmatched: (u) => events.push(u) } });
      const handed: unknown[] = [];
      const count = { expectedReplyCount: 2, timeoutMs: 1_000 };
      const multi = r.sendRequestMulti(undefined, {}, { ...count, endpoint: 'q', requestMessageId: 'g1' });
      const fan = r.publishRequest(undefined, {}, (x) => handed.push(x), { ...count, exchange: 'fan', requestMessageId: 'g2', correlationId: 'biz' });
      failure(r, 'g1', 'g1');
      failure(r, 'biz', 'g2');
      reply(r, 'g1', { responseMessageId: 'g1' });
      reply(r, 'biz', { responseMessageId: 'g2' });
      const label = JSON.stringify(changes);
      if (kept) {
        assert.deepEqual(await multi, [null, { ok: 1 }], label);
        assert.deepEqual(await fan, [null, { ok: 1 }], label);
        assert.deepEqual(handed, [null, { ok: 1 }], label);
      } else {
        // The failure did not count toward the count: each gather still waits for a second answer.
        reply(r, 'g1', { responseMessageId: 'g1' }, '{"ok":2}');
        reply(r, 'biz', { responseMessageId: 'g2' }, '{"ok":2}');
        assert.deepEqual(await multi, [{ ok: 1 }, { ok: 2 }], label);
        assert.deepEqual(await fan, [{ ok: 1 }, { ok: 2 }], label);
        assert.deepEqual(handed, [{ ok: 1 }, { ok: 2 }], label);
      }
      assert.equal(r.unmatched, counted, label);
      const expected = [
        { correlationId: 'g1', responseMessageId: 'g1' },
        { correlationId: 'biz', responseMessageId: 'g2' },
      ];
      assert.deepEqual(events, heard ? expected : [], label);
    }
  });

  it('counts a reply past the count, past a gather timeout or past a request timeout in Unmatched, never adding it (SG-8.1, RR-8.2)', async () => {
    const events: UnmatchedReply[] = [];
    // SG-10's knob is not SG-8's: a failure reply for an ended gather is still counted.
    const { requester: r, published } = requester({ countGatherFailures: false }, false, { observer: { unmatched: (u) => events.push(u) } });
    const done = r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 1, timeoutMs: 1_000, requestMessageId: 'g1' });
    reply(r, 'g1', { responseMessageId: 'g1' }, '{"n":1}');
    reply(r, 'g1', { responseMessageId: 'g1' }, '{"n":2}'); // the same turn: the count was reached
    assert.deepEqual(await done, [{ n: 1 }]);

    const short = r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 10, requestMessageId: 'g2' });
    await assert.rejects(short, (err: unknown) => err instanceof RequestTimeoutError && err.partialReplies.length === 0);
    reply(r, 'g2', { responseMessageId: 'g2' });
    failure(r, 'g2', 'g2');

    const call = r.request('', 'q', {}, { timeoutMs: 10 });
    await tick();
    const id = lastId(published);
    await assert.rejects(call, RequestTimedOutError);
    reply(r, id, { responseMessageId: id });

    assert.equal(r.unmatched, 4);
    assert.deepEqual(events.map((e) => e.responseMessageId), ['g1', 'g2', 'g2', id]);
  });
});
