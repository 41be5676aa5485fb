// Protocol 4's policy values set on the binding's policies by field name, the knobs hello
// names (each a catalogue knob at the catalogue's default, since a knob the harness leaves
// out keeps the binding's), `events: false`, and no catalogue name anywhere in this peer:
// the binding and the adapter hold none, the harness sends values.

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { responderObserver } from '../adapter/events';
import { KNOBS, PolicyError, knobName, requesterPolicyFrom, responderPolicyFrom } from '../adapter/policies';
import * as entry from '../index';
import type { RequestContext } from '../index';
import { DEFAULT_REQUESTER_POLICY, DEFAULT_RESPONDER_POLICY } from '../policy';
import { PEER_DIR, findUp } from './support';

function catalogue(): string {
  const file = findUp(path.join('catalogue', 'catalogue.yaml'));
  if (file === undefined) throw new Error('catalogue/catalogue.yaml not found above this folder');
  return readFileSync(file, 'utf8');
}

/**
 * The catalogue's `policies:` of one side, knob -> default. Each is a one-line flow mapping,
 * `    knob: {default: VALUE, ...}`, with VALUE a scalar, "a string" or [a, list].
 */
function catalogueDefaults(side: string): Map<string, unknown> {
  const policies = catalogue().split(/^policies:$/m)[1]!.split(/^\S/m)[0]!;
  const lines = policies.split(new RegExp(`^ {2}${side}:$`, 'm'))[1]!.split(/^ {2}\S/m)[0]!;
  const scalar = (text: string): unknown => {
    if (text === 'true' || text === 'false') return text === 'true';
    if (/^-?\d+$/.test(text)) return Number(text);
    return text.replace(/^"(.*)"$/, '$1');
  };
  const defaults = new Map<string, unknown>();
  for (const [, knob, value] of lines.matchAll(/^ {4}(\w+): \{default: (\[[^\]]*\]|"[^"]*"|[^,}]+)/gm)) {
    defaults.set(knob!, value!.startsWith('[') ? value!.slice(1, -1).split(',').map((item) => scalar(item.trim())) : scalar(value!));
  }
  return defaults;
}

/** A value of the field's kind other than its default. */
function another(value: unknown): unknown {
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'string') return `${value}-other`;
  return ['native'];
}

const sides = [
  { side: 'requester', defaults: DEFAULT_REQUESTER_POLICY as object, from: requesterPolicyFrom as (v: unknown) => object },
  { side: 'responder', defaults: DEFAULT_RESPONDER_POLICY as object, from: responderPolicyFrom as (v: unknown) => object },
] as const;

describe('policy values by knob name', () => {
  for (const { side, defaults, from } of sides) {
    const fields = Object.keys(defaults);

    it(`hello's ${side} knobs are exactly the policy's fields, snake_case`, () => {
      assert.deepEqual(KNOBS[side], fields.map(knobName));
      assert.equal(new Set(KNOBS[side]).size, fields.length);
      for (const knob of KNOBS[side]) assert.match(knob, /^[a-z]+(_[a-z]+)*$/);
    });

    it(`sets each ${side} knob on its own field and leaves the rest at the default`, () => {
      for (const field of fields) {
        const value = another((defaults as Record<string, unknown>)[field]);
        const policy = from({ [knobName(field)]: value }) as Record<string, unknown>;
        assert.deepEqual(policy[field], value, field);
        assert.deepEqual({ ...policy, [field]: undefined }, { ...defaults, [field]: undefined }, field);
      }
    });

    it(`takes {} as the ${side} as it ships`, () => assert.deepEqual(from({}), defaults));

    it(`offers only catalogue ${side} knobs, each defaulting to the catalogue's default`, () => {
      const catalogued = catalogueDefaults(side);
      assert.ok(catalogued.size > 20);
      for (const field of fields) {
        const knob = knobName(field);
        assert.ok(catalogued.has(knob), `${knob} is not a ${side} knob of the catalogue`);
        assert.deepEqual((defaults as Record<string, unknown>)[field], catalogued.get(knob), knob);
      }
    });

    it(`refuses an unknown ${side} knob, naming it`, () =>
      assert.throws(() => from({ write_header_adress: false }), (err: Error) =>
        err instanceof PolicyError && err.message.includes('write_header_adress')));

    it(`refuses a ${side} policy that is not an object`, () => {
      for (const bad of [null, [], 'x']) assert.throws(() => from(bad), PolicyError);
    });
  }

  it('converts JSON values to the fields, several at once', () => {
    const requester = requesterPolicyFrom({ write_native_address: false, match_replies_by: 'oldest_waiter', default_timeout_ms: 10000 });
    assert.equal(requester.writeNativeAddress, false);
    assert.equal(requester.matchRepliesBy, 'oldest_waiter');
    assert.equal(requester.defaultTimeoutMs, 10000);
    assert.equal(requester.writeHeaderAddress, true);
    const responder = responderPolicyFrom({ read_order: ['native', 'header'], attempt_base: 0 });
    assert.deepEqual(responder.readOrder, ['native', 'header']);
    assert.ok(Object.isFrozen(responder.readOrder));
    assert.equal(responder.attemptBase, 0);
  });

  it('refuses a value of the wrong kind, naming the knob', () => {
    const cases: Array<[(v: unknown) => object, Record<string, unknown>]> = [
      [requesterPolicyFrom, { count_timeouts: 'no' }],
      [requesterPolicyFrom, { default_timeout_ms: 1.5 }],
      [requesterPolicyFrom, { publish_copies: '2' }],
      [requesterPolicyFrom, { match_replies_by: 1 }],
      [responderPolicyFrom, { read_order: 'header' }],
      [responderPolicyFrom, { read_order: [1] }],
    ];
    for (const [from, values] of cases) {
      const [knob] = Object.keys(values);
      assert.throws(() => from(values), (err: Error) => err instanceof PolicyError && err.message.includes(knob!), knob);
    }
  });
});

describe('events: false', () => {
  const context = { messageId: 'm-1', correlationId: null, replyTo: 'q', replyToSource: 'header', headers: {}, attempt: 1 };
  /** Every per-request hook the binding may call, as it calls them. */
  function callEveryHook(observer: ReturnType<typeof responderObserver>): void {
    observer.handled?.(context as unknown as RequestContext);
    observer.replied?.({ messageId: 'm-1', failure: null });
    observer.replyFailed?.({ messageId: 'm-1', attempt: 1, error: 'NO_ROUTE' });
    observer.deadLettered?.({ messageId: 'm-1', reason: 'UndeliverableReply: NO_ROUTE' });
    observer.unanswerable?.({ messageId: 'm-1' });
  }

  it('writes every responder event by default', () => {
    const lines: Array<Record<string, unknown>> = [];
    callEveryHook(responderObserver('r', (line) => lines.push(line), true, undefined));
    assert.deepEqual(lines.map((line) => line.event), ['handled', 'replied', 'reply_failed', 'dead_lettered', 'unanswerable']);
  });

  it('writes no event at all when asked for none, and still tells of a lost connection', () => {
    const lines: Array<Record<string, unknown>> = [];
    const lost: string[] = [];
    const observer = responderObserver('r', (line) => lines.push(line), false, (reason) => lost.push(reason));
    callEveryHook(observer);
    assert.deepEqual(lines, []);
    observer.connectionLost?.('CONNECTION_FORCED');
    assert.deepEqual(lost, ['CONNECTION_FORCED']);
  });
});

describe('the binding keeps the policy to itself', () => {
  it('exports only its entry point', () => {
    const pkg = JSON.parse(readFileSync(path.join(PEER_DIR, 'package.json'), 'utf8')) as { exports: object };
    assert.deepEqual(Object.keys(pkg.exports), ['.']);
  });

  it('has no policy, mutant or profile in its public API', () => {
    const names = Object.keys(entry);
    for (const hidden of ['openRequester', 'startResponder', 'DEFAULT_REQUESTER_POLICY', 'requesterPolicy', 'responderPolicy']) {
      assert.ok(!names.includes(hidden), `${hidden} is exported from the entry point`);
    }
    assert.deepEqual(names.filter((name) => /mutant|profile|polic/i.test(name)), []);
  });

  it('names no catalogue mutant or release profile anywhere in the peer: binding, adapter or tests', () => {
    const text = catalogue();
    // The names, read from the catalogue here and nowhere else: a mutant is `  name: {side: ...`,
    // a profile `  name:` alone on its line under `profiles:`. `current` is every binding's.
    const mutants = [...text.matchAll(/^ {2}([a-z0-9-]+):\s+\{side:/gm)].map((m) => m[1]!);
    const profiles = [...text.split(/^profiles:$/m)[1]!.matchAll(/^ {2}(\S+):$/gm)].map((m) => m[1]!);
    assert.ok(mutants.length > 60 && profiles.includes('current'));
    const forbidden = [...mutants, ...profiles.filter((name) => name !== 'current')];
    const src = path.join(PEER_DIR, 'src');
    for (const folder of ['', 'adapter', 'test']) {
      for (const name of readdirSync(path.join(src, folder)).filter((f) => f.endsWith('.ts'))) {
        const text = readFileSync(path.join(src, folder, name), 'utf8');
        for (const word of forbidden) assert.ok(!text.includes(word), `src/${folder}/${name} names ${word}`);
      }
    }
  });
});
