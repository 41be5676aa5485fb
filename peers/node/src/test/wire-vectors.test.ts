// Every case of catalogue/wire-vectors.json, run through the binding's pure functions.
// Header values are built in the file's typed notation and sent through amqplib's own
// field-table codec, so each function sees exactly what amqplib hands a consumer.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { ShortStringTooLongError } from '../errors';
import {
  type Headers,
  type ReplyToSource,
  attemptNumber,
  checkShortStrings,
  chooseReplyAddress,
  failureTextOf,
  handlerHeaders,
  headerString,
  retryDecision,
} from '../wire';
import { findUp } from './support';

const file = process.env.ACEMQ_WIRE_VECTORS || findUp(path.join('catalogue', 'wire-vectors.json'));
if (file === undefined) throw new Error('catalogue/wire-vectors.json not found above this folder; set ACEMQ_WIRE_VECTORS');
const vectors = JSON.parse(readFileSync(file, 'utf8')) as Record<string, { cases: Array<Record<string, any>> }>;

// amqplib keeps its codec out of its `exports`; the pinned 2.3.1 has it at lib/codec.js.
const codec = require(path.join(path.dirname(require.resolve('amqplib')), 'lib', 'codec.js')) as {
  encodeTable(buffer: Buffer, table: unknown, offset: number): number;
  decodeFields(slice: Buffer): Headers;
};

/** The notation as amqplib's typed values (`{'!': type, value}`), for its encoder. */
function typed(value: any): unknown {
  if (typeof value === 'string') return value;
  if ('bytes' in value) return Buffer.from(value.bytes, 'utf8');
  if ('long' in value) return { '!': 'int64', value: value.long };
  if ('int' in value) return { '!': 'int32', value: value.int };
  if ('byte' in value) return { '!': 'int8', value: value.byte };
  if ('bool' in value) return Boolean(value.bool);
  if ('double' in value) return { '!': 'double', value: value.double };
  if ('table' in value) return Object.fromEntries(Object.entries(value.table).map(([k, v]) => [k, typed(v)]));
  if ('array' in value) return (value.array as unknown[]).map(typed);
  if ('repeat' in value) return String(value.repeat).repeat(value.times);
  throw new Error(`unknown notation ${JSON.stringify(value)}`);
}

/** Headers as a consumer gets them: encoded and decoded by amqplib. */
function received(headers: Record<string, unknown> | undefined): Headers {
  const buffer = Buffer.alloc(65536);
  const size = codec.encodeTable(buffer, Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, typed(v)])), 0);
  return codec.decodeFields(buffer.subarray(4, size));
}

function text(value: any): string {
  return typeof value === 'string' ? value : (typed(value) as string);
}

const groups = new Set<string>();

function each(group: string, run: (c: Record<string, any>) => void): void {
  groups.add(group);
  describe(`wire vectors: ${group}`, () => {
    const cases = vectors[group]?.cases;
    it('has cases', () => assert.ok(cases && cases.length > 0, `no cases in group ${group}`));
    for (const c of cases ?? []) it(c.name, () => run(c));
  });
}

each('header_string', (c) => {
  const headers = received('value' in c ? { h: c.value } : {});
  assert.equal(headerString(headers, 'h') ?? null, c.expect, c.name);
});

each('reply_address', (c) => {
  const order = c.read_order as ReplyToSource[] | undefined;
  const found = chooseReplyAddress(received(c.headers), c.reply_to, order);
  assert.deepEqual(found ?? null, c.expect, c.name);
});

each('strip_engine_headers', (c) => {
  assert.deepEqual(Object.keys(handlerHeaders(received(c.headers))).sort(), [...c.kept].sort(), c.name);
});

each('failure_text', (c) => assert.equal(failureTextOf(c.type, c.message), c.expect, c.name));

each('delivery_attempt', (c) => assert.equal(attemptNumber(received(c.headers)), c.expect, c.name));

each('retry_decision', (c) => {
  const decision = c.max_attempts === undefined ? retryDecision(c.attempt) : retryDecision(c.attempt, c.max_attempts);
  assert.equal(decision, c.expect, c.name);
});

each('short_string', (c) => {
  const value = text(c.value);
  for (const property of ['messageId', 'correlationId', 'replyTo', 'type'] as const) {
    const check = () => checkShortStrings({ [property]: value });
    if (c.expect === 'accepted') assert.doesNotThrow(check, `${c.name} (${property})`);
    else assert.throws(check, ShortStringTooLongError, `${c.name} (${property})`);
  }
});

it('runs every group of the file', () => {
  const inFile = Object.keys(vectors).filter((key) => Array.isArray(vectors[key]?.cases));
  assert.deepEqual(inFile.filter((group) => !groups.has(group)), [], 'groups this test does not run');
});
