#!/usr/bin/env node
'use strict';
// acemq-interop peer (protocol 3) for npm rabbitmq-client, a stack that is not acemq, on its
// defaults: RPCClient (`rabbit.createRPCClient(...)`, `rpc.send(...)`) as the caller, and a
// consumer answering with `reply()` (`rabbit.createConsumer({queue}, async (msg, reply) => ...)`)
// as the responder. JSON lines on stdin/stdout (docs/peer-protocol.md); log on stderr only.
// README.md says what this stack puts on the wire; outcomes.js maps what it hands back.
const readline = require('node:readline');
const path = require('node:path');
const { Connection } = require('rabbitmq-client');
const { outcomeOfReply, outcomeOfError, echoBody, ScenarioFailure } = require('./outcomes');

const PEER = 'rabbitmq-client';
const LIBRARY_VERSION = require(path.join(path.dirname(require.resolve('rabbitmq-client')), '..', 'package.json')).version;
const PROTOCOLS = [1, 2, 3];

let amqpUrl = null;
const requesters = new Map(); // name -> {conn, clients: Map(timeout key -> RPCClient)}
const closing = new WeakSet(); // connections this peer is closing itself
const responders = new Map(); // name -> {conn, consumer}

function write(obj) {
  // One write call per line: Node's single thread keeps each line whole and in order.
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}
function log(...args) {
  process.stderr.write(`${new Date().toISOString()} ${args.join(' ')}\n`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A connection lost by the broker or the network (not closed by us) is a fault of the run:
// the harness hears of it (protocol 2, connection_lost). rabbitmq-client reconnects by itself.
function watchConnection(conn, kind, name) {
  conn.on('error', (err) => {
    log(`${kind} ${name}: connection error: ${err && err.message}`);
    if (closing.has(conn)) return;
    if (err && err.name === 'AMQPChannelError') return; // a channel's error, not the connection's
    write({ event: 'connection_lost', [kind]: name, reason: (err && (err.code ? `${err.code} - ${err.message}` : err.message)) || String(err) });
  });
}

async function openConnection() {
  const conn = new Connection(amqpUrl);
  try {
    await conn.onConnect(10000);
  } catch (err) {
    closing.add(conn);
    await conn.close().catch(() => {});
    throw err;
  }
  return conn;
}

// ---- commands ----

async function hello(cmd) {
  const offered = Array.isArray(cmd.protocols) ? cmd.protocols : [cmd.protocol];
  const common = offered.filter((v) => PROTOCOLS.includes(v));
  if (!common.length) throw new Error(`no common protocol version in ${JSON.stringify(offered)}`);
  amqpUrl = cmd.amqp_url;
  return {
    protocol: Math.max(...common),
    peer: PEER,
    language: 'JavaScript (Node.js)',
    binding: `npm rabbitmq-client ${LIBRARY_VERSION} (not acemq: RPCClient and reply() on their defaults)`,
    client: `rabbitmq-client ${LIBRARY_VERSION}`,
    profiles: ['current'],
    mutants: [],
    capabilities: ['request', 'respond'],
    lacks: ['counters', 'events', 'dead_lettering'],
  };
}

function checkProfileMutant(cmd) {
  if (cmd.profile !== undefined && cmd.profile !== null && cmd.profile !== 'current') throw new Error(`unknown profile ${cmd.profile}`);
  if (cmd.mutant !== undefined && cmd.mutant !== null) throw new Error(`this stack offers no mutants (asked for ${cmd.mutant})`);
}

async function requesterOpen(cmd) {
  checkProfileMutant(cmd);
  if (!cmd.name) throw new Error('name required');
  if (requesters.has(cmd.name)) throw new Error(`requester ${cmd.name} already open`);
  const conn = await openConnection();
  watchConnection(conn, 'requester', cmd.name);
  requesters.set(cmd.name, { conn, clients: new Map() });
  // Direct reply-to: the RPCClient declares no queue of its own, so there is none to name.
  return {};
}

// RPCProps.timeout is the stack's own timeout, set per client, not per call: one RPCClient per
// timeout the harness asks for, each created as the docs show (`createRPCClient({timeout})`).
// No timeout_ms: `createRPCClient()` with no props, the library's default (30 s).
function clientFor(r, timeoutMs) {
  const key = timeoutMs === undefined ? 'default' : String(timeoutMs);
  let rpc = r.clients.get(key);
  if (!rpc) {
    rpc = r.conn.createRPCClient(timeoutMs === undefined ? {} : { timeout: timeoutMs });
    r.clients.set(key, rpc);
  }
  return rpc;
}

async function request(cmd) {
  const r = requesters.get(cmd.requester);
  if (!r) throw new Error(`unknown requester ${cmd.requester}`);
  const timeoutMs = cmd.timeout_ms === undefined || cmd.timeout_ms === null ? undefined : cmd.timeout_ms;
  const rpc = clientFor(r, timeoutMs);
  const envelope = { exchange: cmd.exchange || '', routingKey: cmd.routing_key };
  if (cmd.type !== undefined && cmd.type !== null) envelope.type = cmd.type;
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  let result;
  try {
    result = outcomeOfReply(await rpc.send(envelope, cmd.body));
  } catch (err) {
    result = outcomeOfError(err);
    if (!result) throw err; // anything else: the call was refused (ok: false)
  }
  // The stack puts no message_id on a request: there is no request_id to report.
  return { ...result, elapsed_ms: elapsed() };
}

async function requesterClose(cmd) {
  const r = requesters.get(cmd.name);
  if (!r) throw new Error(`unknown requester ${cmd.name}`);
  requesters.delete(cmd.name);
  // RPCClient.close() waits for every pending call to settle (by its reply or its timeout).
  await Promise.allSettled([...r.clients.values()].map((rpc) => rpc.close()));
  closing.add(r.conn);
  await r.conn.close();
  return {};
}

function makeHandler(name, behavior, errors) {
  const kind = behavior && behavior.reply ? behavior.reply : 'echo';
  const delay = behavior && behavior.delay_ms ? behavior.delay_ms : 0;
  if (kind !== 'echo' && kind !== 'fail') throw new Error(`unknown behavior ${kind}`);
  if (kind === 'fail' && typeof behavior.error_message !== 'string') throw new Error('behavior fail needs error_message');
  return async (msg, reply) => {
    if (delay) await sleep(delay);
    if (kind === 'fail') throw new ScenarioFailure(behavior.error_message);
    await reply(echoBody(msg, name, PEER));
  };
}

async function responderStart(cmd) {
  checkProfileMutant(cmd);
  if (cmd.client && cmd.client !== 'binding') throw new Error(`client ${cmd.client} not offered (no load capability)`);
  if (!cmd.name || !cmd.queue) throw new Error('name and queue required');
  if (responders.has(cmd.name)) throw new Error(`responder ${cmd.name} already started`);
  if (cmd.max_attempts !== undefined && cmd.max_attempts !== null) log(`responder ${cmd.name}: max_attempts ${cmd.max_attempts} ignored: the stack has no attempts`);
  const errors = { count: 0 };
  const handler = makeHandler(cmd.name, cmd.behavior || { reply: 'echo' }, errors);
  const conn = await openConnection();
  const props = { queue: cmd.queue };
  if (cmd.bind) props.queueBindings = [{ exchange: cmd.bind.exchange, queue: cmd.queue, routingKey: cmd.bind.routing_key || '' }];
  const consumer = conn.createConsumer(props, handler);
  try {
    await new Promise((resolve, reject) => {
      consumer.once('ready', resolve);
      consumer.once('error', reject); // the first error before 'ready': its setup failed
    });
  } catch (err) {
    await consumer.close().catch(() => {});
    closing.add(conn);
    await conn.close().catch(() => {});
    throw err;
  }
  // As the library's docs show: `sub.on('error', ...)`. A handler that throws is nacked
  // (requeue true by default) and its error emitted here; logged, at most 20 lines each.
  consumer.on('error', (err) => {
    errors.count += 1;
    if (errors.count <= 20 || errors.count % 1000 === 0) log(`responder ${cmd.name}: consumer error #${errors.count}: ${err && err.message}`);
  });
  watchConnection(conn, 'responder', cmd.name);
  responders.set(cmd.name, { conn, consumer, errors });
  return {};
}

async function responderStop(cmd) {
  const r = responders.get(cmd.name);
  if (!r) throw new Error(`unknown responder ${cmd.name}`);
  responders.delete(cmd.name);
  await r.consumer.close(); // cancels, waits for running handlers, closes its channel
  closing.add(r.conn);
  await r.conn.close();
  if (r.errors.count) log(`responder ${cmd.name}: ${r.errors.count} consumer error(s) in all`);
  return {};
}

async function counters(cmd) {
  throw new Error(`the stack has no counters (asked for ${cmd.of})`);
}

async function closeAll() {
  const all = [];
  for (const name of [...requesters.keys()]) all.push(requesterClose({ name }));
  for (const name of [...responders.keys()]) all.push(responderStop({ name }));
  await Promise.allSettled(all);
}

let shuttingDown = false;
async function shutdown() {
  shuttingDown = true;
  await closeAll();
  return {};
}

const OPS = {
  hello,
  'requester.open': requesterOpen,
  'requester.close': requesterClose,
  request,
  'responder.start': responderStart,
  'responder.stop': responderStop,
  counters,
  shutdown,
};

async function dispatch(cmd) {
  const op = OPS[cmd.op];
  try {
    if (!op) throw new Error(`unknown op ${cmd.op}`);
    if (cmd.op !== 'hello' && cmd.op !== 'counters' && cmd.op !== 'shutdown' && !amqpUrl) throw new Error('hello first');
    const result = await op(cmd);
    write({ id: cmd.id, ok: true, ...result });
    if (cmd.op === 'shutdown') process.stdout.write('', () => process.exit(0));
  } catch (err) {
    if (cmd.op !== 'counters') log(`${cmd.op} (id ${cmd.id}) failed: ${err && err.stack ? err.stack : err}`);
    write({ id: cmd.id, ok: false, error: (err && err.message) || String(err) });
  }
}

process.on('unhandledRejection', (err) => log(`unhandled rejection: ${err && err.stack ? err.stack : err}`));

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (e) {
    log(`not JSON on stdin: ${line.slice(0, 200)}`);
    return;
  }
  dispatch(cmd);
});
rl.on('close', async () => {
  if (shuttingDown) return;
  await closeAll();
  process.exit(0);
});
