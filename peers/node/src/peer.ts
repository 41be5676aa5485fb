// The acemq-interop peer adapter: the JSON-lines protocol of docs/peer-protocol.md on
// stdin/stdout, driving the binding. Every command runs as its own async task, so a
// pending request never delays another answer. stdout carries protocol lines only; the
// log goes to stderr.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as readline from 'node:readline';
import {
  ALL_MUTANTS,
  PROFILES,
  ReplyDecodeError,
  RequestTimedOutError,
  RequestTimeoutError,
  Requester,
  Responder,
  ResponderFailedError,
  isRequesterMutant,
  isResponderMutant,
  newMessageId,
  type Handler,
  type RequestContext,
  type RequesterMutant,
  type ResponderMutant,
} from './index';

const PROTOCOL = 1;
const PEER = 'node';
const SHUTDOWN_BOUND_MS = 5_000;

/** The error type every adapter raises for `{"reply": "fail"}`, so the text matches across languages. */
class ScenarioFailure extends Error {}

/** A command the peer cannot carry out: answered `ok: false`. */
class CommandError extends Error {}

type Command = Record<string, unknown> & { id: number; op: string };
type Result = Record<string, unknown>;

let amqpUrl: string | undefined;
const requesters = new Map<string, Requester>();
const responders = new Map<string, Responder>();

function write(line: Result): void {
  // One write call per line: Node runs this on one thread and pipes are written in order.
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString()} ${message}\n`);
}

function packageVersion(packageJson: string): string {
  return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
}

function clientVersion(): string {
  // amqplib's exports map hides its package.json; it sits beside the resolved entry point.
  const entry = require.resolve('amqplib');
  return `amqplib ${packageVersion(path.join(path.dirname(entry), 'package.json'))}`;
}

function bindingVersion(): string {
  return `acemq-node ${packageVersion(path.join(__dirname, '..', 'package.json'))}`;
}

// -- argument helpers ---------------------------------------------------------

function str(cmd: Command, field: string): string {
  const value = cmd[field];
  if (typeof value !== 'string' || value === '') throw new CommandError(`'${field}' must be a non-empty string`);
  return value;
}

function optStr(cmd: Command, field: string): string | undefined {
  const value = cmd[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new CommandError(`'${field}' must be a string`);
  return value;
}

function optInt(cmd: Command | Record<string, unknown>, field: string, min: number): number | undefined {
  const value = cmd[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new CommandError(`'${field}' must be an integer >= ${min}`);
  }
  return value;
}

function url(): string {
  if (amqpUrl === undefined) throw new CommandError("no broker yet: send 'hello' with amqp_url first");
  return amqpUrl;
}

function checkProfile(cmd: Command): void {
  const profile = cmd.profile ?? 'current';
  if (!(PROFILES as readonly unknown[]).includes(profile)) {
    throw new CommandError(`profile ${JSON.stringify(profile)} is not supported; supported: ${PROFILES.join(', ')}`);
  }
}

function mutantFor<T extends string>(cmd: Command, side: string, accepts: (name: string) => name is T): T | undefined {
  const mutant = cmd.mutant;
  if (mutant === undefined || mutant === null) return undefined;
  if (typeof mutant !== 'string' || !accepts(mutant)) {
    throw new CommandError(`mutant ${JSON.stringify(mutant)} is not a ${side} mutant of this peer`);
  }
  return mutant;
}

function requester(name: string): Requester {
  const found = requesters.get(name);
  if (!found) throw new CommandError(`no requester named '${name}'`);
  return found;
}

function elapsedSince(start: number): number {
  return Math.round((performance.now() - start) * 10) / 10;
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

// -- the echo handler -----------------------------------------------------------

function seen(context: RequestContext): Result {
  return {
    message_id: context.messageId,
    correlation_id: context.correlationId,
    reply_to: context.replyTo,
    reply_to_source: context.replyToSource,
    headers: Object.keys(context.headers).sort(),
    attempt: context.attempt,
  };
}

function scenarioHandler(name: string, behavior: Record<string, unknown>): Handler<unknown, unknown> {
  const reply = behavior.reply ?? 'echo';
  if (reply !== 'echo' && reply !== 'fail') throw new CommandError(`behavior.reply must be 'echo' or 'fail'`);
  const delayMs = optInt(behavior, 'delay_ms', 0) ?? 0;
  const errorMessage = typeof behavior.error_message === 'string' ? behavior.error_message : 'scenario failure';
  return async (body, context) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (reply === 'fail') throw new ScenarioFailure(errorMessage);
    const echo: Result = { echo: body, responder: name, peer: PEER };
    if (typeof body === 'object' && body !== null && !Array.isArray(body) && 'correlationId' in body) {
      echo.correlationId = (body as Record<string, unknown>).correlationId;
    }
    echo.seen = seen(context);
    return echo;
  };
}

// -- commands -------------------------------------------------------------------

async function hello(cmd: Command): Promise<Result> {
  if (cmd.protocol !== undefined && cmd.protocol !== PROTOCOL) {
    throw new CommandError(`this peer speaks protocol ${PROTOCOL}, not ${String(cmd.protocol)}`);
  }
  amqpUrl = optStr(cmd, 'amqp_url') ?? amqpUrl;
  return {
    protocol: PROTOCOL,
    peer: PEER,
    language: 'TypeScript',
    binding: bindingVersion(),
    client: clientVersion(),
    profiles: [...PROFILES],
    mutants: [...ALL_MUTANTS],
    capabilities: ['request', 'respond', 'gather'],
  };
}

async function openRequester(cmd: Command): Promise<Result> {
  const name = str(cmd, 'name');
  checkProfile(cmd);
  const mutant: RequesterMutant | undefined = mutantFor(cmd, 'requester', isRequesterMutant);
  if (requesters.has(name) || responders.has(name)) throw new CommandError(`the name '${name}' is taken`);
  const opened = await Requester.open(url(), {
    mutant,
    observer: {
      unmatched: (reply) => write({ event: 'unmatched', requester: name, correlation_id: reply.correlationId }),
    },
  });
  if (requesters.has(name)) {
    await opened.close();
    throw new CommandError(`the name '${name}' is taken`);
  }
  requesters.set(name, opened);
  return { reply_queue: opened.replyQueue };
}

async function closeRequester(cmd: Command): Promise<Result> {
  const name = str(cmd, 'name');
  const found = requester(name);
  requesters.delete(name);
  await found.close();
  return {};
}

async function request(cmd: Command): Promise<Result> {
  const target = requester(str(cmd, 'requester'));
  const exchange = optStr(cmd, 'exchange') ?? '';
  const routingKey = optStr(cmd, 'routing_key') ?? '';
  const timeoutMs = optInt(cmd, 'timeout_ms', 1);
  const requestId = newMessageId();
  const start = performance.now();
  const done = (fields: Result): Result => ({ ...fields, request_id: requestId, elapsed_ms: elapsedSince(start) });
  try {
    const reply = await target.request<unknown, unknown>(exchange, routingKey, cmd.body ?? null, {
      timeoutMs,
      messageId: requestId,
    });
    return done({ outcome: 'reply', reply });
  } catch (err) {
    if (err instanceof RequestTimedOutError) return done({ outcome: 'timeout' });
    if (err instanceof ResponderFailedError) return done({ outcome: 'responder_failed', failure: err.failure });
    if (err instanceof ReplyDecodeError) return done({ outcome: 'decode_error', error: err.message });
    throw err;
  }
}

async function gather(cmd: Command): Promise<Result> {
  const target = requester(str(cmd, 'requester'));
  const mode = cmd.mode ?? 'multi';
  const type = optStr(cmd, 'type') ?? 'GatherRequest';
  const body = cmd.body ?? null;
  const requestMessageId = newMessageId();
  const common = {
    expectedReplyCount: optInt(cmd, 'expected_reply_count', 1),
    timeoutMs: optInt(cmd, 'timeout_ms', 1) ?? 30_000,
    correlationId: optStr(cmd, 'correlation_id'),
    requestMessageId,
  };
  const start = performance.now();
  const done = (fields: Result): Result => ({ ...fields, request_id: requestMessageId, elapsed_ms: elapsedSince(start) });
  try {
    let replies: unknown[];
    if (mode === 'multi') {
      replies = await target.sendRequestMulti(type, body, { ...common, endpoint: str(cmd, 'endpoint') });
    } else if (mode === 'publish') {
      replies = await target.publishRequest(type, body, () => undefined, { ...common, exchange: str(cmd, 'exchange') });
    } else {
      throw new CommandError(`mode must be 'multi' or 'publish', not ${JSON.stringify(mode)}`);
    }
    return done({ outcome: 'replies', replies });
  } catch (err) {
    if (err instanceof RequestTimeoutError) return done({ outcome: 'timeout_with_partial', replies: err.partialReplies });
    throw err;
  }
}

async function startResponder(cmd: Command): Promise<Result> {
  const name = str(cmd, 'name');
  const queue = str(cmd, 'queue');
  checkProfile(cmd);
  const mutant: ResponderMutant | undefined = mutantFor(cmd, 'responder', isResponderMutant);
  const behavior = (cmd.behavior ?? { reply: 'echo' }) as Record<string, unknown>;
  if (typeof behavior !== 'object' || behavior === null) throw new CommandError("'behavior' must be an object");
  const handler = scenarioHandler(name, behavior);
  let bind: { exchange: string; routingKey: string } | undefined;
  if (cmd.bind !== undefined && cmd.bind !== null) {
    const given = cmd.bind as Record<string, unknown>;
    if (typeof given.exchange !== 'string') throw new CommandError("'bind.exchange' must be a string");
    bind = { exchange: given.exchange, routingKey: typeof given.routing_key === 'string' ? given.routing_key : '' };
  }
  if (requesters.has(name) || responders.has(name)) throw new CommandError(`the name '${name}' is taken`);
  const started = await Responder.start(url(), queue, handler, {
    bind,
    maxAttempts: optInt(cmd, 'max_attempts', 1),
    mutant,
    observer: {
      handled: (context) =>
        write({ event: 'handled', responder: name, message_id: context.messageId, attempt: context.attempt, seen: seen(context) }),
      replied: (e) => write({ event: 'replied', responder: name, message_id: e.messageId, failure: e.failure }),
      replyFailed: (e) =>
        write({ event: 'reply_failed', responder: name, message_id: e.messageId, attempt: e.attempt, error: e.error }),
      deadLettered: (e) => write({ event: 'dead_lettered', responder: name, message_id: e.messageId, reason: e.reason }),
      unanswerable: (e) => write({ event: 'unanswerable', responder: name, message_id: e.messageId }),
    },
  });
  if (requesters.has(name) || responders.has(name)) {
    await started.stop();
    throw new CommandError(`the name '${name}' is taken`);
  }
  responders.set(name, started);
  return {};
}

async function stopResponder(cmd: Command): Promise<Result> {
  const name = str(cmd, 'name');
  const found = responders.get(name);
  if (!found) throw new CommandError(`no responder named '${name}'`);
  responders.delete(name);
  await found.stop();
  return {};
}

async function counters(cmd: Command): Promise<Result> {
  const name = str(cmd, 'of');
  const asRequester = requesters.get(name);
  if (asRequester) return { counters: { timed_out: asRequester.timedOut, unmatched: asRequester.unmatched } };
  const asResponder = responders.get(name);
  if (asResponder) return { counters: { answered: asResponder.answered, unanswerable: asResponder.unanswerable } };
  throw new CommandError(`no requester or responder named '${name}'`);
}

const OPS: Record<string, (cmd: Command) => Promise<Result>> = {
  hello,
  'requester.open': openRequester,
  'requester.close': closeRequester,
  request,
  gather,
  'responder.start': startResponder,
  'responder.stop': stopResponder,
  counters,
};

// -- the loop -------------------------------------------------------------------

async function closeAll(): Promise<void> {
  const closing = [
    ...[...requesters.values()].map((r) => r.close()),
    ...[...responders.values()].map((r) => r.stop()),
  ];
  requesters.clear();
  responders.clear();
  await Promise.race([
    Promise.allSettled(closing),
    new Promise((resolve) => setTimeout(resolve, SHUTDOWN_BOUND_MS).unref()),
  ]);
}

let exiting = false;

function exit(): void {
  if (exiting) return;
  exiting = true;
  void closeAll().finally(() => {
    // Exit only once stdout has taken every line written so far.
    process.stdout.write('', () => process.exit(0));
  });
}

function dispatch(line: string): void {
  if (line.trim() === '') return;
  let cmd: Command;
  try {
    cmd = JSON.parse(line) as Command;
  } catch (err) {
    log(`ignored a line that is not JSON: ${line} (${errorText(err)})`);
    return;
  }
  if (typeof cmd !== 'object' || cmd === null || typeof cmd.id !== 'number') {
    log(`ignored a command without an integer id: ${line}`);
    return;
  }
  const { id } = cmd;
  if (cmd.op === 'shutdown') {
    write({ id, ok: true });
    exit();
    return;
  }
  const op = OPS[cmd.op];
  if (!op) {
    write({ id, ok: false, error: `unknown op ${JSON.stringify(cmd.op)}` });
    return;
  }
  op(cmd).then(
    (result) => write({ id, ok: true, ...result }),
    (err: unknown) => {
      if (!(err instanceof CommandError)) log(`command ${id} (${cmd.op}) failed: ${errorText(err)}`);
      write({ id, ok: false, error: err instanceof CommandError ? err.message : errorText(err) });
    },
  );
}

function main(): void {
  process.on('unhandledRejection', (reason) => log(`unhandled rejection: ${errorText(reason)}`));
  process.stdout.on('error', (err) => {
    log(`stdout failed: ${err.message}`);
    process.exit(1);
  });
  const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on('line', dispatch);
  input.on('close', exit);
}

main();
