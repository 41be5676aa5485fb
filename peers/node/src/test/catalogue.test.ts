// The adapter's table against catalogue/catalogue.yaml, and the binding kept clean of it:
// the table must give every mutant the side and policy values the catalogue gives, offer
// exactly the profiles that list this peer, and no catalogue name may reach the binding.

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { MUTANTS, PROFILES, requesterPolicyFor, responderPolicyFor } from '../adapter/catalogue';
import * as entry from '../index';
import { DEFAULT_REQUESTER_POLICY, DEFAULT_RESPONDER_POLICY } from '../policy';
import { PEER_DIR, findUp } from './support';

const file = findUp(path.join('catalogue', 'catalogue.yaml'));
if (file === undefined) throw new Error('catalogue/catalogue.yaml not found above this folder');
const lines = readFileSync(file, 'utf8').split('\n');

/**
 * The lines indented under a top-level key, e.g. `mutants:`. A comment in column 0 does not
 * end the section (YAML ignores it; the catalogue has one inside `mutants:`).
 */
function section(key: string): string[] {
  const start = lines.indexOf(`${key}:`);
  assert.ok(start >= 0, `no ${key}: in the catalogue`);
  const end = lines.findIndex((line, i) => i > start && /^[^\s#]/.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** A YAML flow value as the catalogue writes them: scalars, [lists] and {maps}, no quotes inside. */
function flow(text: string): unknown {
  const value = text.trim();
  const inner = () => {
    const parts: string[] = [];
    let depth = 0;
    let part = '';
    for (const ch of value.slice(1, -1)) {
      if (ch === ',' && depth === 0) {
        parts.push(part);
        part = '';
        continue;
      }
      if ('[{'.includes(ch)) depth++;
      if (']}'.includes(ch)) depth--;
      part += ch;
    }
    return part.trim() === '' ? parts : [...parts, part];
  };
  if (value.startsWith('[')) return inner().map(flow);
  if (value.startsWith('{')) {
    return Object.fromEntries(
      inner().map((pair) => {
        const colon = pair.indexOf(':');
        return [pair.slice(0, colon).trim(), flow(pair.slice(colon + 1))];
      }),
    );
  }
  if (value === 'true' || value === 'false') return value === 'true';
  if (/^-?\d+$/.test(value)) return Number(value);
  return value.replace(/^"(.*)"$/, '$1');
}

describe('the adapter table against the catalogue', () => {
  const catalogued = new Map<string, { side: string; policy: Record<string, unknown> }>();
  for (const line of section('mutants')) {
    const match = /^ {2}([a-z0-9-]+):\s+\{side: (\w+), clause: [^,]+, policy: (\{.*?\}), (?:only_where: "[^"]*", )?does:/.exec(line);
    if (match) catalogued.set(match[1]!, { side: match[2]!, policy: flow(match[3]!) as Record<string, unknown> });
  }

  it('reads the 67 mutants of the catalogue', () => assert.equal(catalogued.size, 67));

  it('has every catalogue mutant, with its side and policy values, and no other', () => {
    assert.deepEqual(Object.keys(MUTANTS).sort(), [...catalogued.keys()].sort());
    for (const [name, expected] of catalogued) assert.deepEqual(MUTANTS[name], expected, name);
  });

  it('offers current and every profile that lists this peer', () => {
    const listed = ['current'];
    let profile: string | undefined;
    for (const line of section('profiles')) {
      const header = /^ {2}(\S+):$/.exec(line);
      if (header) profile = header[1];
      if (/^ {6}node:/.test(line) && profile !== undefined) listed.push(profile);
    }
    assert.deepEqual(Object.keys(PROFILES).sort(), listed.sort());
  });

  it('turns every mutant into a policy that differs from the default where it acts', () => {
    for (const [name, { side }] of Object.entries(MUTANTS)) {
      const requester = requesterPolicyFor('current', name);
      const responder = responderPolicyFor('current', name);
      if (side === 'responder') {
        assert.notDeepEqual(responder, DEFAULT_RESPONDER_POLICY, name);
        assert.deepEqual(requester, DEFAULT_REQUESTER_POLICY, `${name} on the requester runs as current`);
      } else {
        assert.notDeepEqual(requester, DEFAULT_REQUESTER_POLICY, name);
        assert.deepEqual(responder, DEFAULT_RESPONDER_POLICY, `${name} on the responder runs as current`);
      }
    }
  });

  it('counts after the confirm with no added delay', () =>
    assert.equal(responderPolicyFor(undefined, 'answered-after-publish').answeredTiming, 'after_confirm'));

  it('refuses unknown names, naming the valid ones', () => {
    assert.throws(() => requesterPolicyFor('0.3.0', null), /valid: current/);
    assert.throws(() => responderPolicyFor('current', 'nope'), /valid: native-only/);
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

  it('names no catalogue mutant or profile in its source', () => {
    const src = path.join(PEER_DIR, 'src');
    const forbidden = [...Object.keys(MUTANTS), '0.3.0', '0.5.0', '0.7.12'];
    for (const name of readdirSync(src).filter((f) => f.endsWith('.ts') && f !== 'peer.ts')) {
      const text = readFileSync(path.join(src, name), 'utf8');
      for (const word of forbidden) assert.ok(!text.includes(word), `src/${name} names ${word}`);
    }
  });
});
