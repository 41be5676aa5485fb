// The acemq-interop peer adapter: the JSON-lines protocol of docs/peer-protocol.md on
// stdin/stdout, driving the binding. Every command runs as its own async task, so a
// pending request never delays another answer. stdout carries protocol lines only; the
// log goes to stderr.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as readline from 'node:readline';
import { responderObserver, seen } from './adapter/events';
import { padBody, runLoad, type Call } from './adapter/load';
import { gatherOutcome, requestOutcome, unwrapped } from './adapter/outcomes';
import { KNOBS, PolicyError, requesterPolicyFrom, responderPolicyFrom } from './adapter/policies';
import { RawRequester, RawResponder, RawTimeoutError } from './adapter/raw';
import {
  RequestTimedOutError,
  Requester,
  Responder,
  newMessageId,
  type Handler,
  type SocketOptions,
} from './index';
// The policy doors: kept out of the package entry, reached by this adapter only.
import { openRequester } from './requester';
import { startResponder } from './responder';

const PROTOCOLS = [1, 2, 3, 4, 5];
/** The version whose commands carry policy values instead of profile and mutant names. */
const POLICY_PROTOCOL = 4;
/**
 * The version whose roles connect under the harness's connection name to its list of nodes,
 * and are told `recovered`; a call their connection's loss ended is `connection_lost`.
 */
const RECOVERY_PROTOCOL = 5;
const PEER = 'node';
const SHUTDOWN_BOUND_MS = 5_000;

/** The error type every adapter raises for `{"reply": "fail"}`, so the text matches across languages. */
class ScenarioFailure extends Error {}

/** A command the peer cannot carry out: answered `ok: false`. */
class CommandError extends Error {}

type Command = Record<string, unknown> & { id: number; op: string };
type Result = Record<string, unknown>;

let amqpUrl: string | undefined;
/** hello's `amqp_urls` (version 5): every broker node, `amqp_url` first. */
let amqpUrls: string[] | undefined;
/** A TLS run's (hello's `tls`): every connection, binding or raw, trusts this CA only. */
let socketOptions: SocketOptions | undefined;
/**
 * The version `hello` settled on; 2 adds `load`, `client: raw` and `connection_lost`; 3 adds
 * `type`, the `closed` outcome and the fixed shapes of `unmatched` and the echo body; 4 sends
 * policy values (`policy`) and `events: false`; 5 adds `amqp_urls`, `connection_name`, the
 * `connection_lost` outcome and the `recovered` event.
 */
let protocol = 1;
const requesters = new Map<string, Requester>();
const responders = new Map<string, Responder | RawResponder>();

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

/**
 * The object without its undefined fields: an optional field the harness left out is left
 * out of the binding call too, so the binding's own default applies (protocol 2).
 */
function given<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}

function url(): string {
  if (amqpUrl === undefined) throw new CommandError("no broker yet: send 'hello' with amqp_url first");
  return amqpUrl;
}

function optStrings(cmd: Command, field: string): string[] | undefined {
  const value = cmd[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string' && item !== '')) {
    throw new CommandError(`'${field}' must be a non-empty list of non-empty strings`);
  }
  return value as string[];
}

/**
 * Where a role connects and under which name. Version 5: the command's `amqp_urls` (else
 * hello's, else `[amqp_url]`) and its `connection_name`; before it, hello's `amqp_url` and no
 * name, as that harness expects.
 */
function connectionOf(cmd: Command): { urls: string[]; connectionName: string | undefined } {
  if (protocol < RECOVERY_PROTOCOL) return { urls: [url()], connectionName: undefined };
  return { urls: optStrings(cmd, 'amqp_urls') ?? amqpUrls ?? [url()], connectionName: optStr(cmd, 'connection_name') };
}

/** `recovered` is a version-5 event. */
function recovered(side: 'requester' | 'responder', name: string): (() => void) | undefined {
  return protocol >= RECOVERY_PROTOCOL ? () => write({ event: 'recovered', [side]: name }) : undefined;
}

/**
 * The policy a `requester.open`, `responder.start` or `load` opens with: from protocol 4 its
 * `policy` values, field by field (`profile` and `mutant` are never looked up). Before it,
 * hello offered the profile `current` and no mutant, so the binding runs as it ships.
 */
function policyOf<T>(cmd: Command, from: (values: unknown) => T): T {
  if (protocol < POLICY_PROTOCOL) {
    if ((cmd.profile ?? 'current') !== 'current' || (cmd.mutant ?? null) !== null) {
      throw new CommandError(`before protocol ${POLICY_PROTOCOL} this peer offers the profile current and no mutant`);
    }
    return from({});
  }
  try {
    return from(cmd.policy ?? {});
  } catch (err) {
    if (err instanceof PolicyError) throw new CommandError(err.message);
    throw err;
  }
}

function takenCheck(name: string): void {
  if (requesters.has(name) || responders.has(name)) throw new CommandError(`the name '${name}' is taken`);
}

/** `connection_lost` is a version-2 event. */
function lost(side: 'requester' | 'responder', name: string): ((reason: string) => void) | undefined {
  return protocol >= 2 ? (reason) => write({ event: 'connection_lost', [side]: name, reason }) : undefined;
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
  if (!(err instanceof Error)) return String(err);
  // Node's code says what a bare message does not (SELF_SIGNED_CERT_IN_CHAIN: a TLS
  // verification failure; ECONNREFUSED...).
  const code = (err as NodeJS.ErrnoException).code;
  return code ? `${err.name} ${code}: ${err.message}` : `${err.name}: ${err.message}`;
}

// -- the echo handler -----------------------------------------------------------

function scenarioHandler(name: string, behavior: Record<string, unknown>): Handler<unknown, unknown> {
  const reply = behavior.reply ?? 'echo';
  if (reply !== 'echo' && reply !== 'fail') throw new CommandError(`behavior.reply must be 'echo' or 'fail'`);
  const delayMs = optInt(behavior, 'delay_ms', 0) ?? 0;
  let errorMessage = behavior.error_message;
  if (reply === 'fail' && typeof errorMessage !== 'string') {
    // Version 2 requires it; version 1 harnesses may leave it out.
    if (protocol >= 2) throw new CommandError("behavior.error_message is required when reply is 'fail'");
    errorMessage = 'scenario failure';
  }
  return async (body, context) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (reply === 'fail') throw new ScenarioFailure(String(errorMessage));
    const echo: Result = { echo: body, responder: name, peer: PEER };
    const carries = typeof body === 'object' && body !== null && !Array.isArray(body) && 'correlationId' in body;
    if (carries) echo.correlationId = (body as Record<string, unknown>).correlationId;
    // Version 3 fixes the shape: always there, null when the body has none.
    else if (protocol >= 3) echo.correlationId = null;
    echo.seen = seen(context);
    return echo;
  };
}

// -- commands -------------------------------------------------------------------

async function hello(cmd: Command): Promise<Result> {
  // The harness lists what it speaks in `protocols` (version 2); a version-1 hello has only
  // `protocol`. The answer is the highest version both speak.
  const offered = Array.isArray(cmd.protocols) ? cmd.protocols : [cmd.protocol ?? 1];
  const common = PROTOCOLS.filter((version) => offered.includes(version));
  if (common.length === 0) {
    throw new CommandError(`this peer speaks protocols ${PROTOCOLS.join(', ')}, not ${JSON.stringify(offered)}`);
  }
  protocol = Math.max(...common);
  amqpUrl = optStr(cmd, 'amqp_url') ?? amqpUrl;
  amqpUrls = optStrings(cmd, 'amqp_urls');
  socketOptions = tlsOptions(cmd.tls);
  // Version 4: the knobs this adapter can set (amqplib reaches every value the catalogue
  // asks for, an empty reply_to and a B header included, so nothing is unreachable).
  // Before it, the binding as it ships: the adapter knows no catalogue name.
  const offer = protocol >= POLICY_PROTOCOL ? { knobs: KNOBS } : { profiles: ['current'], mutants: [] };
  return {
    protocol,
    peer: PEER,
    language: 'TypeScript',
    binding: bindingVersion(),
    client: clientVersion(),
    ...offer,
    capabilities: [...(protocol >= 2 ? ['request', 'respond', 'gather', 'load'] : ['request', 'respond', 'gather']), 'tls'],
  };
}

/**
 * amqplib's socket options for hello's `tls`: the CA file's certificates as the only trust
 * anchors. Node verifies the chain and the broker's name (the URL's host, an IP SAN for
 * 127.0.0.1) by default; nothing here turns either off.
 */
function tlsOptions(tls: unknown): SocketOptions | undefined {
  if (tls === undefined || tls === null) return undefined;
  const caFile = typeof tls === 'object' ? (tls as Record<string, unknown>).ca_file : undefined;
  if (typeof caFile !== 'string') throw new CommandError('tls must be {"ca_file": "/path/ca.pem"}');
  try {
    return { ca: [readFileSync(caFile)] };
  } catch (err) {
    throw new CommandError(`tls.ca_file ${caFile}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function requesterOpen(cmd: Command): Promise<Result> {
  const name = str(cmd, 'name');
  const policy = policyOf(cmd, requesterPolicyFrom);
  takenCheck(name);
  const { urls, connectionName } = connectionOf(cmd);
  const opened = await openRequester(
    urls,
    {
      connectionName,
      observer: {
        unmatched: (reply) =>
          write({
            event: 'unmatched',
            requester: name,
            correlation_id: reply.correlationId,
            // Version 3: both keys, since the requester cannot tell a request's reply from a gather's.
            ...(protocol >= 3 ? { response_message_id: reply.responseMessageId } : {}),
          }),
        connectionLost: lost('requester', name),
        recovered: recovered('requester', name),
      },
      socketOptions,
    },
    policy,
  );
  if (requesters.has(name)) {
    await opened.close();
    throw new CommandError(`the name '${name}' is taken`);
  }
  requesters.set(name, opened);
  return { reply_queue: opened.replyQueue };
}

/**
 * The binding's close() fails every pending call before it awaits the connection's close,
 * and each call's answer is written as soon as its promise settles, so the answers of the
 * calls it ended are out before this one (version 3).
 */
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
  const type = protocol >= 3 ? optStr(cmd, 'type') : undefined;
  const requestId = newMessageId();
  const start = performance.now();
  const done = (fields: Result): Result => ({ ...fields, request_id: requestId, elapsed_ms: elapsedSince(start) });
  try {
    const reply = await target.request<unknown, unknown>(exchange, routingKey, cmd.body ?? null, given({
      timeoutMs,
      messageId: requestId,
      type,
    }));
    return done({ outcome: 'reply', reply });
  } catch (err) {
    const outcome = requestOutcome(err, protocol);
    if (outcome) return done(outcome);
    throw err;
  }
}

async function gather(cmd: Command): Promise<Result> {
  const target = requester(str(cmd, 'requester'));
  const mode = cmd.mode ?? 'multi';
  // Version 3 passes an absent type through (no type property); before it, a fixed one.
  const type = protocol >= 3 ? optStr(cmd, 'type') : (optStr(cmd, 'type') ?? 'GatherRequest');
  const body = cmd.body ?? null;
  const requestMessageId = newMessageId();
  const common = given({
    expectedReplyCount: optInt(cmd, 'expected_reply_count', 1),
    timeoutMs: optInt(cmd, 'timeout_ms', 1),
    correlationId: optStr(cmd, 'correlation_id'),
    requestMessageId,
  });
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
    const outcome = gatherOutcome(err, protocol);
    if (outcome) return done(outcome);
    throw err;
  }
}

async function responderStart(cmd: Command): Promise<Result> {
  const name = str(cmd, 'name');
  const queue = str(cmd, 'queue');
  const client = cmd.client ?? 'binding';
  if (protocol >= 2 && client === 'raw') {
    takenCheck(name);
    const raw = await RawResponder.start(url(), queue, socketOptions);
    if (requesters.has(name) || responders.has(name)) {
      await raw.stop();
      throw new CommandError(`the name '${name}' is taken`);
    }
    responders.set(name, raw);
    return {};
  }
  if (client !== 'binding') throw new CommandError(`client must be 'binding' or 'raw', not ${JSON.stringify(client)}`);
  const policy = policyOf(cmd, responderPolicyFrom);
  const behavior = (cmd.behavior ?? { reply: 'echo' }) as Record<string, unknown>;
  if (typeof behavior !== 'object' || behavior === null) throw new CommandError("'behavior' must be an object");
  const handler = scenarioHandler(name, behavior);
  let bind: { exchange: string; routingKey: string } | undefined;
  if (cmd.bind !== undefined && cmd.bind !== null) {
    const given = cmd.bind as Record<string, unknown>;
    if (typeof given.exchange !== 'string') throw new CommandError("'bind.exchange' must be a string");
    bind = { exchange: given.exchange, routingKey: typeof given.routing_key === 'string' ? given.routing_key : '' };
  }
  takenCheck(name);
  const { urls, connectionName } = connectionOf(cmd);
  const started = await startResponder(urls, queue, handler, {
    ...given({ bind, maxAttempts: optInt(cmd, 'max_attempts', 1) }),
    connectionName,
    // Version 4's `events: false` (a load): no event per request.
    observer: responderObserver(
      name,
      write,
      protocol < POLICY_PROTOCOL || cmd.events !== false,
      lost('responder', name),
      recovered('responder', name),
    ),
    socketOptions,
  }, policy);
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
  if (asResponder instanceof RawResponder) return { counters: {} };
  if (asResponder) return { counters: { answered: asResponder.answered, unanswerable: asResponder.unanswerable } };
  throw new CommandError(`no requester or responder named '${name}'`);
}

async function load(cmd: Command): Promise<Result> {
  if (protocol < 2) throw new CommandError("'load' is a protocol 2 command");
  const client = cmd.client;
  const exchange = optStr(cmd, 'exchange') ?? '';
  const routingKey = str(cmd, 'routing_key');
  const requests = optInt(cmd, 'requests', 0);
  if (requests === undefined) throw new CommandError("'requests' is required");
  const inFlight = optInt(cmd, 'in_flight', 1) ?? 1;
  const bodyBytes = optInt(cmd, 'body_bytes', 0) ?? 0;
  const timeoutMs = optInt(cmd, 'timeout_ms', 1);
  const settings = { requests, inFlight, warmup: optInt(cmd, 'warmup', 0) ?? 0 };
  const body = padBody(bodyBytes);
  const shape = { client, in_flight: inFlight, body_bytes: bodyBytes };

  if (client === 'binding') {
    const target = await openRequester(url(), { socketOptions }, policyOf(cmd, requesterPolicyFrom));
    try {
      const options = given({ timeoutMs });
      const call: Call = () => target.request(exchange, routingKey, body, options);
      const figures = await runLoad(call, settings, (err) => unwrapped(err).some((e) => e instanceof RequestTimedOutError));
      return { load: { ...shape, ...figures } };
    } finally {
      await target.close();
    }
  }
  if (client === 'raw') {
    const target = await RawRequester.open(url(), socketOptions);
    try {
      const encoded = Buffer.from(JSON.stringify(body), 'utf8');
      const call: Call = () => target.request(exchange, routingKey, encoded, timeoutMs ?? 30_000);
      const figures = await runLoad(call, settings, (err) => err instanceof RawTimeoutError);
      return { load: { ...shape, ...figures } };
    } finally {
      await target.close();
    }
  }
  throw new CommandError(`client must be 'binding' or 'raw', not ${JSON.stringify(client)}`);
}

const OPS: Record<string, (cmd: Command) => Promise<Result>> = {
  hello,
  'requester.open': requesterOpen,
  'requester.close': closeRequester,
  request,
  gather,
  'responder.start': responderStart,
  'responder.stop': stopResponder,
  counters,
  load,
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
