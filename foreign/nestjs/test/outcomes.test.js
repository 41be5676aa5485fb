// The adapter's outcome mapping and its Nest responder, held without a broker: rxjs's and
// NestJS's own errors -> the peer protocol; the @MessagePattern handler registered and run by
// Nest itself (exception filter included) on a microservice that never listens.
import test from 'node:test';
import assert from 'node:assert';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IncomingResponseDeserializer, RmqContext, Transport } from '@nestjs/microservices';
import { EmptyError, TimeoutError, lastValueFrom, of, timeout, NEVER, isObservable } from 'rxjs';
import { failureText, outcomeOfError, outcomeOfValue } from '../outcomes.js';
import { PATTERN, makeModule } from '../nest-app.js';

const quiet = { log() {}, error() {}, warn() {}, debug() {}, verbose() {}, fatal() {} };
Logger.overrideLogger(quiet);

test("rxjs timeout()'s TimeoutError, as the docs bound a call, is the timeout outcome", async () => {
  const err = await lastValueFrom(NEVER.pipe(timeout(5))).catch((e) => e);
  assert.ok(err instanceof TimeoutError);
  assert.deepStrictEqual(outcomeOfError(err), { outcome: 'timeout' });
});

test("a reply's err (a string, or the exception filter's {status, message}) is responder_failed", () => {
  assert.deepStrictEqual(outcomeOfError('ScenarioFailure: no price'), { outcome: 'responder_failed', failure: 'ScenarioFailure: no price' });
  assert.deepStrictEqual(outcomeOfError({ status: 'error', message: 'ScenarioFailure: x' }), { outcome: 'responder_failed', failure: 'ScenarioFailure: x' });
  assert.strictEqual(failureText({ status: 'error' }), '{"status":"error"}');
});

test("ClientRMQ#close's Error('Connection closed') is closed while closing, refused otherwise", () => {
  assert.deepStrictEqual(outcomeOfError(new Error('Connection closed'), { closing: true }), { outcome: 'closed' });
  assert.strictEqual(outcomeOfError(new Error('Connection closed')), null);
  assert.strictEqual(outcomeOfError(new Error('boom'), { closing: true }), null);
});

test('a value is the reply; completing with none is a null reply', () => {
  assert.deepStrictEqual(outcomeOfValue({ a: 1 }), { outcome: 'reply', reply: { a: 1 } });
  assert.deepStrictEqual(outcomeOfError(new EmptyError()), { outcome: 'reply', reply: null });
});

test("Nest's response deserializer: an acemq body is a whole reply, an empty body the string ''", () => {
  const d = new IncomingResponseDeserializer();
  assert.deepStrictEqual(d.deserialize({ echo: 1, seen: {} }), { id: undefined, response: { echo: 1, seen: {} }, isDisposed: true });
  // ClientRMQ#parseMessageContent: JSON.parse('') throws, so the raw text '' goes on.
  assert.deepStrictEqual(d.deserialize(''), { id: '', response: '', isDisposed: true });
  assert.deepStrictEqual(outcomeOfValue(''), { outcome: 'reply', reply: '' });
});

async function handlerOf(behavior) {
  const app = await NestFactory.createMicroservice(makeModule('c1.r', 'nestjs', behavior), {
    transport: Transport.RMQ, options: { urls: ['amqp://127.0.0.1:1'], queue: 'q' }, logger: quiet, abortOnError: false,
  });
  await app.init();
  const server = app.serverInstance;
  const handler = server.getHandlerByPattern(PATTERN);
  return { app, handler };
}

const delivery = {
  content: Buffer.from('{}'),
  properties: { messageId: undefined, correlationId: 'abc', replyTo: 'amq.rabbitmq.reply-to.g1', headers: { h: 1 } },
};

test('the @MessagePattern handler, run by Nest, echoes what it saw', async () => {
  const { app, handler } = await handlerOf({ reply: 'echo' });
  try {
    assert.ok(handler, 'a handler for the pattern');
    const out = await handler({ sku: 'A-1', correlationId: 'k' }, new RmqContext([delivery, null, PATTERN]));
    const value = await lastValueFrom(isObservable(out) ? out : of(out));
    assert.deepStrictEqual(value, {
      echo: { sku: 'A-1', correlationId: 'k' }, responder: 'c1.r', peer: 'nestjs', correlationId: 'k',
      seen: { message_id: null, correlation_id: 'abc', reply_to: 'amq.rabbitmq.reply-to.g1', reply_to_source: 'native', headers: ['h'], attempt: null },
    });
  } finally {
    await app.close();
  }
});

test("a failing handler's RpcException reaches the stream as {status: 'error', message}", async () => {
  const { app, handler } = await handlerOf({ reply: 'fail', error_message: 'no price for A-1' });
  try {
    const out = await handler({ sku: 'A-1' }, new RmqContext([delivery, null, PATTERN]));
    const err = await lastValueFrom(isObservable(out) ? out : of(out)).catch((e) => e);
    assert.deepStrictEqual(err, { status: 'error', message: 'ScenarioFailure: no price for A-1' });
    assert.deepStrictEqual(outcomeOfError(err), { outcome: 'responder_failed', failure: 'ScenarioFailure: no price for A-1' });
  } finally {
    await app.close();
  }
});

// ServerRMQ#handleMessage on a delivery, with its reply publish (sendMessage) watched.
async function repliesTo(body, behavior = { reply: 'echo' }) {
  const { app } = await handlerOf(behavior);
  const server = app.serverInstance;
  const sent = [];
  server.sendMessage = (message, replyTo, correlationId) => sent.push({ message, replyTo, correlationId });
  try {
    const message = { content: Buffer.from(JSON.stringify(body)), properties: { ...delivery.properties, messageId: 'm1', correlationId: 'm1', replyTo: 'amq.gen-1' } };
    await server.handleMessage(message, null);
    await new Promise((r) => setTimeout(r, 50)); // Server#send replies on process.nextTick
    return sent;
  } finally {
    await app.close();
  }
}

test('an acemq request (a bare JSON body, no Nest envelope) is taken for an event: no handler, no reply', async () => {
  assert.deepStrictEqual(await repliesTo({ sku: 'A-1' }), []);
});

test('a Nest envelope {pattern, data, id} is answered to reply_to under the request correlation_id', async () => {
  const sent = await repliesTo({ pattern: PATTERN, data: { sku: 'A-1' }, id: 'x' });
  assert.strictEqual(sent.length, 1);
  assert.strictEqual(sent[0].replyTo, 'amq.gen-1');
  assert.strictEqual(sent[0].correlationId, 'm1');
  assert.strictEqual(sent[0].message.isDisposed, true);
  assert.deepStrictEqual(sent[0].message.response.echo, { sku: 'A-1' });
  const failed = await repliesTo({ pattern: PATTERN, data: {}, id: 'y' }, { reply: 'fail', error_message: 'no' });
  assert.deepStrictEqual(failed.map((s) => s.message), [{ err: { status: 'error', message: 'ScenarioFailure: no' }, isDisposed: true }]);
});
