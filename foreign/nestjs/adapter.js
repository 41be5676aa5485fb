#!/usr/bin/env node
// acemq-interop peer (protocol 3) for NestJS's RMQ transport, a stack that is not acemq, on its
// defaults: ClientRMQ (ClientProxyFactory.create({transport: Transport.RMQ})) as the caller, and a
// Nest microservice on Transport.RMQ (ServerRMQ) with a @MessagePattern handler as the
// responder. Plain JavaScript (ES modules, as @nestjs/* 12 are): the decorators are applied by
// hand, as TypeScript would. JSON lines on stdin/stdout (docs/peer-protocol.md); every log line,
// Nest's own included, goes to stderr.
import 'reflect-metadata';
import readline from 'node:readline';
import { readFileSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, Transport } from '@nestjs/microservices';
import { lastValueFrom, timeout } from 'rxjs';
import { outcomeOfError, outcomeOfValue } from './outcomes.js';
import { PATTERN, makeModule } from './nest-app.js';

// Read from node_modules (their package.json `exports` do not expose package.json).
const version = (name) => JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
const PEER = 'nestjs';
const PROTOCOLS = [1, 2, 3];

function write(obj) {
  // One write call per line: Node's single thread keeps each line whole and in order.
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}
function log(...args) {
  process.stderr.write(`${new Date().toISOString()} ${args.join(' ')}\n`);
}
const text = (m) => (m instanceof Error ? m.stack || m.message : typeof m === 'string' ? m : JSON.stringify(m));
// Nest's ConsoleLogger writes to stdout: every Nest logger is this one, to stderr.
const stderrLogger = Object.fromEntries(['log', 'error', 'warn', 'debug', 'verbose', 'fatal'].map((level) => [
  level, (message, ...rest) => log(`[nest ${level}]`, text(message), ...rest.map(text)),
]));
Logger.overrideLogger(stderrLogger);

let amqpUrl = null;
const requesters = new Map(); // name -> {clients: Map(queue -> ClientRMQ), closing}
const responders = new Map(); // name -> {app, closing}

// amqp-connection-manager reports every lost connection as 'disconnect' {err}. One the broker or
// the network caused is a fault of the run (protocol 2, connection_lost). One that follows a
// channel the broker closed for the stack's own doing is not: amqplib throws a channel error
// nobody listens for out of its frame loop and tears its connection down itself (README.md).
function watch(target, kind, name, state) {
  target.on('disconnect', (event) => {
    const err = event && event.err;
    const reason = (err && err.message) || String(err);
    log(`${kind} ${name}: disconnected: ${reason}`);
    if (state.closing || /^Channel closed by server/.test(reason)) return;
    write({ event: 'connection_lost', [kind]: name, reason });
  });
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
    binding: `@nestjs/microservices ${version('@nestjs/microservices')} RMQ transport (not acemq: ClientRMQ and ServerRMQ on their defaults)`,
    client: `amqplib ${version('amqplib')} via amqp-connection-manager ${version('amqp-connection-manager')}`,
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
  requesters.set(cmd.name, { clients: new Map(), closing: false });
  // A ClientRMQ is made for one queue (its `queue` option): one per queue this requester
  // calls, made at its first call. It replies through direct reply-to (its default
  // replyQueue), so it declares no reply queue of its own: there is none to name.
  return {};
}

function clientFor(r, name, queue) {
  let client = r.clients.get(queue);
  if (!client) {
    client = ClientProxyFactory.create({ transport: Transport.RMQ, options: { urls: [amqpUrl], queue } });
    watch(client, 'requester', name, r);
    r.clients.set(queue, client);
  }
  return client;
}

async function request(cmd) {
  const r = requesters.get(cmd.requester);
  if (!r) throw new Error(`unknown requester ${cmd.requester}`);
  if (cmd.exchange) throw new Error(`ClientRMQ sends to its queue through the default exchange; exchange ${cmd.exchange} is not offered`);
  const client = clientFor(r, cmd.requester, cmd.routing_key);
  const pattern = cmd.type === undefined || cmd.type === null ? PATTERN : cmd.type;
  // As the docs bound a call: `client.send(pattern, data).pipe(timeout(ms))`; without
  // timeout_ms, no timeout() at all: send() itself waits for ever.
  let call = client.send(pattern, cmd.body);
  if (cmd.timeout_ms !== undefined && cmd.timeout_ms !== null) call = call.pipe(timeout(cmd.timeout_ms));
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  let result;
  try {
    result = outcomeOfValue(await lastValueFrom(call));
  } catch (err) {
    result = outcomeOfError(err, { closing: r.closing });
    if (!result) throw err; // the stack's own error: the call was refused (ok: false)
  }
  // The stack puts no message_id on a request: there is no request_id to report.
  return { ...result, elapsed_ms: elapsed() };
}

async function requesterClose(cmd) {
  const r = requesters.get(cmd.name);
  if (!r) throw new Error(`unknown requester ${cmd.name}`);
  requesters.delete(cmd.name);
  r.closing = true;
  // ClientRMQ#close ends every call waiting for its reply with Error('Connection closed').
  await Promise.allSettled([...r.clients.values()].map((client) => client.close()));
  return {};
}

async function responderStart(cmd) {
  checkProfileMutant(cmd);
  if (cmd.client && cmd.client !== 'binding') throw new Error(`client ${cmd.client} not offered (no load capability)`);
  if (!cmd.name || !cmd.queue) throw new Error('name and queue required');
  if (responders.has(cmd.name)) throw new Error(`responder ${cmd.name} already started`);
  if (cmd.bind) throw new Error('ServerRMQ binds its queue only with its exchange/routingKey options: bind is not offered');
  if (cmd.max_attempts !== undefined && cmd.max_attempts !== null) log(`responder ${cmd.name}: max_attempts ${cmd.max_attempts} ignored: the stack has no attempts`);
  const app = await NestFactory.createMicroservice(makeModule(cmd.name, PEER, cmd.behavior || { reply: 'echo' }), {
    transport: Transport.RMQ,
    options: { urls: [amqpUrl], queue: cmd.queue },
    logger: stderrLogger,
    abortOnError: false, // an error at start is an answer (ok: false), not process.exit(1)
  });
  const state = { app, closing: false };
  watch(app, 'responder', cmd.name, state);
  // listen() resolves once ServerRMQ has declared its queue and asked to consume it. A
  // declaration the broker refuses never calls it back: bounded here, so the answer comes.
  let timer;
  try {
    await Promise.race([app.listen(), new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the Nest microservice did not start listening on ${cmd.queue} within 10 s (see its log)`)), 10000);
    })]);
  } catch (err) {
    state.closing = true;
    await app.close().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  responders.set(cmd.name, state);
  return {};
}

async function responderStop(cmd) {
  const r = responders.get(cmd.name);
  if (!r) throw new Error(`unknown responder ${cmd.name}`);
  responders.delete(cmd.name);
  r.closing = true;
  await r.app.close();
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
    if (cmd.op !== 'counters') log(`${cmd.op} (id ${cmd.id}) failed: ${err && err.stack ? err.stack : text(err)}`);
    write({ id: cmd.id, ok: false, error: (err && err.message) || text(err) });
  }
}

// amqp-connection-manager emits 'error' on a ChannelWrapper nobody listens to when a channel's
// setup fails (ClientRMQ's declaration of its queue refused): the throw becomes an unhandled
// rejection, which would end a plain Node process. This peer logs it and keeps serving.
process.on('unhandledRejection', (err) => log(`unhandled rejection: ${text(err)}`));

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
