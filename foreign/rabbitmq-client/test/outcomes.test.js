'use strict';
// The outcome mapping of the adapter, held without a broker: what rabbitmq-client 5.0.8 hands
// the application (its own error classes, a decoded or undecoded body) -> the peer protocol.
const test = require('node:test');
const assert = require('node:assert');
const { AMQPError, AMQPChannelError, AMQPConnectionError } = require('rabbitmq-client');
const { outcomeOfReply, outcomeOfError, echoBody, ScenarioFailure } = require('../outcomes');

test("the stack's own timeout (RPC_TIMEOUT) is the timeout outcome", () => {
  assert.deepStrictEqual(outcomeOfError(new AMQPError('RPC_TIMEOUT', 'RPC response timed out')), { outcome: 'timeout' });
});

test('a call on a closed RPC client, or whose channel closed, is closed', () => {
  assert.deepStrictEqual(outcomeOfError(new AMQPChannelError('RPC_CLOSED', 'RPC client is closed')), { outcome: 'closed' });
});

test('any other error is no outcome: the call is refused (ok: false)', () => {
  assert.strictEqual(outcomeOfError(new AMQPConnectionError('CONNECTION_FORCED', 'closed')), null);
  assert.strictEqual(outcomeOfError(new Error('boom')), null);
  assert.strictEqual(outcomeOfError(undefined), null);
});

test('a decoded body is the reply', () => {
  assert.deepStrictEqual(outcomeOfReply({ contentType: 'application/json', body: { a: 1 } }), { outcome: 'reply', reply: { a: 1 } });
  assert.deepStrictEqual(outcomeOfReply({ contentType: 'text/plain', body: 'hi' }), { outcome: 'reply', reply: 'hi' });
});

test('a body left undecoded (a Buffer) is a decode error: an empty acemq failure body among them', () => {
  const empty = outcomeOfReply({ contentType: 'application/json', body: Buffer.alloc(0) });
  assert.strictEqual(empty.outcome, 'decode_error');
  assert.match(empty.error, /0 undecoded byte\(s\) \(content_type application\/json\): JSON.parse failed/);
  assert.strictEqual(outcomeOfReply({ body: Buffer.from('x') }).outcome, 'decode_error');
});

test('the echo body shows what the handler saw, null where the stack shows nothing', () => {
  const msg = { body: { sku: 'A-1', correlationId: 'c-1' }, messageId: 'm1', correlationId: 'm1', replyTo: 'amq.gen-x',
    headers: { 'acemq-reply-to': 'amq.gen-x', b: 1 } };
  assert.deepStrictEqual(echoBody(msg, 'r', 'rabbitmq-client'), {
    echo: { sku: 'A-1', correlationId: 'c-1' }, responder: 'r', peer: 'rabbitmq-client', correlationId: 'c-1',
    seen: { message_id: 'm1', correlation_id: 'm1', reply_to: 'amq.gen-x', reply_to_source: 'native',
      headers: ['acemq-reply-to', 'b'], attempt: null },
  });
  const bare = echoBody({ body: [1] }, 'r', 'p');
  assert.strictEqual(bare.correlationId, null);
  assert.deepStrictEqual(bare.seen, { message_id: null, correlation_id: null, reply_to: null, reply_to_source: 'native', headers: [], attempt: null });
});

test('ScenarioFailure is named so', () => {
  const e = new ScenarioFailure('no price');
  assert.strictEqual(`${e.name}: ${e.message}`, 'ScenarioFailure: no price');
});

test("reply() publishes to the default exchange, routing key reply_to, the request's correlation_id and nothing else", async () => {
  const { Consumer } = require('rabbitmq-client/lib/Consumer');
  const consumer = Object.create(Consumer.prototype);
  const published = [];
  consumer._ch = { basicPublish: async (params, body) => { published.push({ params, body }); } };
  const reply = consumer._makeReplyfn({ messageId: 'm1', correlationId: 'm1', replyTo: 'amq.gen-x', headers: { 'acemq-reply-to': 'amq.gen-x' } });
  await reply({ a: 1 });
  assert.deepStrictEqual(published, [{ params: { correlationId: 'm1', exchange: '', routingKey: 'amq.gen-x' }, body: { a: 1 } }]);
  // A request without a message_id (a direct reply-to caller's) is answered under its correlation_id too.
  const noReplyTo = consumer._makeReplyfn({ correlationId: '1' });
  assert.throws(() => noReplyTo({}), /attempted to reply to a non-RPC message/);
});

test('a handler that throws: no reply, the delivery nacked with requeue true (the default), the error emitted', async () => {
  const { Consumer } = require('rabbitmq-client/lib/Consumer');
  const { Channel } = require('rabbitmq-client/lib/Channel');
  const consumer = Object.create(Consumer.prototype);
  require('node:events').call(consumer);
  const sent = [];
  const ch = Object.create(Channel.prototype);
  ch._invokeNowait = (method, params) => sent.push(params); // what basicNack puts on the wire
  ch.basicPublish = async () => { sent.push('publish'); };
  consumer._ch = ch;
  consumer._props = { queue: 'q' };
  consumer.stats = { requeued: 0, dropped: 0, acknowledged: 0 };
  consumer._handler = async () => { throw new ScenarioFailure('no price'); };
  const errors = [];
  consumer.on('error', (e) => errors.push(e.message));
  await consumer._execHandler({ deliveryTag: 7, replyTo: 'amq.rabbitmq.reply-to.x', correlationId: '1' });
  assert.deepStrictEqual(sent, [{ deliveryTag: 7, requeue: true }]);
  assert.deepStrictEqual(errors, ['no price']);
  assert.strictEqual(consumer.stats.requeued, 0); // counted only when ConsumerProps.requeue is set true
});
