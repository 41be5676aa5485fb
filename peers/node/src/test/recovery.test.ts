// RR-20 without a broker: what a lost connection does to the calls it carried, how a call
// finds a requester that is down or recovering, the reconnect backoff and node order, and a
// responder's ack timing. The requester and responder are built past TypeScript's `private`
// as in requester.test.ts and responder.test.ts, and their loss is handed to them as their
// connection's 'close' would. The reconnection itself runs against the real broker in the
// interop scenarios (rr-requester-recovers, rr-responder-recovers).

import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { ConsumeMessage, Options } from 'amqplib';
import { FIRST_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS, connectFrom, reconnect, retryDelayMs } from '../connection';
import { ConnectionLostError, RequestTimedOutError } from '../errors';
import { type RequesterPolicy, type ResponderPolicy, requesterPolicy, responderPolicy } from '../policy';
import { Requester, type RequesterOptions } from '../requester';
import { Responder } from '../responder';

// The module object itself, whose connect connectFrom calls: replaced for one test.
const amqplib = require('amqplib') as { connect: (url: string, options: unknown) => Promise<unknown> };

const FORCED = 'Connection closed: 320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - Closed via management plugin"';

interface Inner {
  session: Session | undefined;
  recovering: AbortController | undefined;
  lose(session: Session, reason: string): void;
  currentSession(waitMs: number): Promise<Session>;
}

interface Session {
  connection: { close(): Promise<void> };
  replyQueue?: string;
  lost?: string | boolean | undefined;
}

/** A session whose confirm channel confirms every publish on the next turn. */
function session(replyQueue = 'rq'): Session {
  const confirmChannel = Object.assign(new EventEmitter(), {
    publish(_exchange: string, _key: string, _body: Buffer, _opts: Options.Publish, confirmed: (err: unknown) => void) {
      setImmediate(() => confirmed(null));
      return true;
    },
  });
  const connection = { createConfirmChannel: async () => confirmChannel, close: async () => undefined };
  return { connection, replyQueue, node: 0, channel: null } as unknown as Session;
}

function requester(changes: Partial<RequesterPolicy> = {}, options: RequesterOptions = {}): { r: Requester; inner: Inner } {
  const ctor = Requester as unknown as new (...args: unknown[]) => Requester;
  // No recovery unless a test asks: a real reconnect loop would dial amqp://unused/.
  const r = new ctor({ urls: ['amqp://unused/'] }, options, requesterPolicy({ recoverConnection: false, ...changes }));
  const inner = r as unknown as Inner;
  inner.session = session();
  return { r, inner };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function took<T>(call: Promise<T>): Promise<number> {
  const start = Date.now();
  await call.catch(() => undefined);
  return Date.now() - start;
}

describe('Requester across a lost connection (RR-20)', () => {
  it('ends a pending call and gather at once as ConnectionLostError with the reason, uncounted (RR-20.1)', async () => {
    const heard: string[] = [];
    const { r, inner } = requester({}, { observer: { connectionLost: (reason) => heard.push(reason) } });
    const call = r.request('', 'q', {}, { timeoutMs: 60_000 });
    const gather = r.sendRequestMulti(undefined, {}, { endpoint: 'q', expectedReplyCount: 2, timeoutMs: 60_000 });
    await tick();
    await tick();
    const ended = Promise.all([
      assert.rejects(call, (err: unknown) => err instanceof ConnectionLostError && err.reason === FORCED),
      assert.rejects(gather, ConnectionLostError),
    ]);
    const start = Date.now();
    inner.lose(inner.session!, FORCED);
    await ended;
    assert.ok(Date.now() - start < 1_000, 'ended at the loss, not at the 60 s timeout');
    assert.equal(r.timedOut, 0);
    assert.deepEqual(heard, [FORCED]);
    assert.equal(r.replyQueue, '', 'a lost requester names no reply queue');
  });

  it('leaves a pending call to its timeout under on_connection_lost: wait', async () => {
    const { r, inner } = requester({ onConnectionLost: 'wait' });
    const call = r.request('', 'q', {}, { timeoutMs: 80 });
    await tick();
    await tick();
    inner.lose(inner.session!, FORCED);
    await assert.rejects(call, RequestTimedOutError);
    assert.equal(r.timedOut, 1);
  });

  it("ends only the lost session's calls: a call on the recovered session goes on", async () => {
    const { r, inner } = requester();
    const old = inner.session!;
    inner.session = session('amq.gen-new');
    const call = r.request('', 'q', {}, { timeoutMs: 60_000, messageId: 'm-new' });
    await tick();
    await tick();
    inner.lose(old, FORCED);
    assert.equal(r.replyQueue, 'amq.gen-new');
    (r as unknown as { onReply(m: unknown): void }).onReply({
      content: Buffer.from('{"ok":1}'),
      fields: {},
      properties: { correlationId: 'm-new', headers: {} },
    });
    assert.deepEqual(await call, { ok: 1 });
  });

  it('ends a call made while down at once, unless it is recovering: then it waits within its timeout (RR-20.3)', async () => {
    const { r, inner } = requester();
    inner.lose(inner.session!, FORCED);
    assert.ok((await took(assert.rejects(r.request('', 'q', {}, { timeoutMs: 5_000 }), ConnectionLostError))) < 1_000);

    // Recovering: the call waits for the new session and goes out on it.
    inner.recovering = new AbortController();
    const waiting = inner.currentSession(60_000);
    await tick();
    const next = session('amq.gen-next');
    inner.session = next;
    const waking = (r as unknown as { recoveryWaiters: Set<() => void> }).recoveryWaiters;
    for (const wake of waking) wake();
    assert.equal(await waiting, next);

    // Past its timeout it ends as lost, never as a timeout.
    inner.session = undefined;
    await assert.rejects(inner.currentSession(20), ConnectionLostError);
    assert.equal(r.timedOut, 0);
    inner.recovering = undefined;
  });

  it('stays down under recover_connection: false', async () => {
    const { r, inner } = requester({ recoverConnection: false });
    inner.lose(inner.session!, FORCED);
    assert.equal(inner.recovering, undefined, 'no reconnection started');
    await assert.rejects(r.request('', 'q', {}, { timeoutMs: 5_000 }), ConnectionLostError);
  });
});

describe('Reconnecting', () => {
  it('retries first within a second, then backs off to at most 5 s between attempts (RR-20.2)', () => {
    assert.ok(retryDelayMs(0) > 0 && retryDelayMs(0) <= 1_000);
    assert.equal(retryDelayMs(0), FIRST_RETRY_DELAY_MS);
    let previous = 0;
    for (let attempt = 0; attempt < 60; attempt++) {
      const delay = retryDelayMs(attempt);
      assert.ok(delay >= previous && delay <= 5_000, `attempt ${attempt}: ${delay} ms after ${previous} ms`);
      previous = delay;
    }
    assert.equal(previous, MAX_RETRY_DELAY_MS);
  });

  it('tries the nodes in order from the one after the lost one, each under the connection name', async () => {
    const dialled: Array<[string, unknown]> = [];
    const original = amqplib.connect;
    amqplib.connect = async (url: string, options: unknown) => {
      dialled.push([url, (options as { clientProperties?: Record<string, unknown> }).clientProperties?.connection_name]);
      if (url !== 'amqp://a/') throw new Error(`ECONNREFUSED ${url}`);
      return { close: async () => undefined };
    };
    try {
      const settings = { urls: ['amqp://a/', 'amqp://b/', 'amqp://c/'], connectionName: 'acemq-interop run c0004.q' };
      const { node } = await connectFrom(settings, 1);
      assert.equal(node, 0);
      assert.deepEqual(dialled, [
        ['amqp://b/', 'acemq-interop run c0004.q'],
        ['amqp://c/', 'acemq-interop run c0004.q'],
        ['amqp://a/', 'acemq-interop run c0004.q'],
      ]);
    } finally {
      amqplib.connect = original;
    }
  });

  it('gives up when aborted (the owner closed)', async () => {
    const aborted = new AbortController();
    aborted.abort();
    let opened = false;
    const went = await reconnect({ urls: ['amqp://unused/'] }, 0, async () => {
      opened = true;
    }, aborted.signal, () => undefined);
    assert.equal(went || opened, false);
  });
});

describe('Responder across a lost connection (RR-20.4)', () => {
  function responder(changes: Partial<ResponderPolicy>, handler: () => Promise<unknown>) {
    const acked: string[] = [];
    const published: string[] = [];
    const channel = {
      ack: (msg: ConsumeMessage) => acked.push(String(msg.properties.messageId)),
      nack: () => undefined,
    };
    const publisher = {
      publish: async (_exchange: string, routingKey: string) => {
        published.push(routingKey);
      },
    };
    const ctor = Responder as unknown as new (...args: unknown[]) => Responder;
    const r = new ctor({ urls: ['amqp://unused/'] }, 'svc', handler, {}, responderPolicy({ recoverConnection: false, ...changes }));
    const s = { connection: { close: async () => undefined }, channel, publisher, node: 0, lost: false };
    const inner = r as unknown as {
      session: unknown;
      sessionOf: WeakMap<ConsumeMessage, unknown>;
      process(m: ConsumeMessage): Promise<void>;
      lose(s: unknown, reason: string): void;
    };
    inner.session = s;
    const deliver = (id: string) => {
      const msg = { content: Buffer.from('{}'), fields: {}, properties: { messageId: id, headers: { 'acemq-reply-to': 'rq' } } } as unknown as ConsumeMessage;
      inner.sessionOf.set(msg, s);
      return inner.process(msg);
    };
    return { r, acked, published, deliver, lose: () => inner.lose(s, FORCED) };
  }

  it('acks a request after handling it, never on delivery; a request held at the loss is left to the broker', async () => {
    let release!: () => void;
    const f = responder({}, () => new Promise((resolve) => (release = () => resolve({ ok: 1 }))));
    const handling = f.deliver('m1');
    await tick();
    assert.deepEqual(f.acked, [], 'not acked while its handler runs');
    f.lose();
    release();
    await handling;
    assert.deepEqual([f.acked, f.published], [[], []], 'neither answered nor acked: the broker redelivers it');
  });

  it('acks on delivery, before the handler, under ack_timing: on_delivery, and never twice', async () => {
    let release!: () => void;
    const f = responder({ ackTiming: 'on_delivery' }, () => new Promise((resolve) => (release = () => resolve({ ok: 1 }))));
    const handling = f.deliver('m1');
    await tick();
    assert.deepEqual(f.acked, ['m1'], 'acked as it was delivered');
    release();
    await handling;
    assert.deepEqual([f.acked, f.published], [['m1'], ['rq']], 'answered, not acked again');
  });
});
