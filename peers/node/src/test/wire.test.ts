// What only this binding's JavaScript side does; the shared rules are in wire-vectors.test.ts.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  attemptNumber,
  encodeJson,
  failureText,
  firstMalformedHeader,
  headerString,
  truncateShortStrings,
  truncateUtf8,
  isDirectReplyTo,
  requestId,
} from '../wire';

describe('headerString (RR-2)', () => {
  it('reads a Uint8Array as UTF-8 too', () => assert.equal(headerString({ h: new Uint8Array([113, 49]) }, 'h'), 'q1'));
});

describe('attemptNumber (RR-14)', () => {
  it('accepts a BigInt count', () => assert.equal(attemptNumber({ 'x-delivery-count': 2n }), 3));
  it('ignores a count that is not an integer', () => assert.equal(attemptNumber({ 'x-delivery-count': 1.5 }), 1));
});

describe('failureText (RR-10)', () => {
  class ScenarioFailure extends Error {}
  it('names an Error by its class', () => {
    assert.equal(failureText(new ScenarioFailure('no price')), 'ScenarioFailure: no price');
    assert.equal(failureText(new TypeError('bad')), 'TypeError: bad');
  });
  it('names a thrown non-Error by its JavaScript type', () => assert.equal(failureText('oops'), 'string: oops'));
});

describe('truncateShortStrings (the truncating policy)', () => {
  it('cuts every long property to 255 bytes and leaves short and absent ones alone', () =>
    assert.deepEqual(truncateShortStrings({ correlationId: 'c'.repeat(300), messageId: 'm', type: undefined }), {
      correlationId: 'c'.repeat(255),
      messageId: 'm',
    }));
  it('never splits a UTF-8 character', () => {
    const cut = truncateUtf8('a' + 'é'.repeat(200), 255); // 1 + 2n bytes: 255 bytes fits 127 of them
    assert.equal(cut, 'a' + 'é'.repeat(127));
    assert.equal(truncateUtf8('é'.repeat(200), 255), 'é'.repeat(127));
  });
});

describe('firstMalformedHeader (strict header types)', () => {
  it('accepts strings, byte arrays, integers, decimals and timestamps', () =>
    assert.equal(
      firstMalformedHeader({
        s: 'x',
        x: Buffer.from('y'),
        l: 9_000_000_000,
        b: -7,
        dec: { '!': 'decimal', value: { places: 1, digits: 5 } },
        ts: { '!': 'timestamp', value: 1 },
      }),
      undefined,
    ));
  it('names the first boolean, floating-point number, table or array', () => {
    assert.equal(firstMalformedHeader({ s: 'x', flag: true, ratio: 0.25 }), 'flag');
    assert.equal(firstMalformedHeader({ ratio: 0.25 }), 'ratio');
    assert.equal(firstMalformedHeader({ table: { k: 'v' } }), 'table');
    assert.equal(firstMalformedHeader({ list: ['a', 2] }), 'list');
  });
  it('finds nothing without headers', () => assert.equal(firstMalformedHeader(undefined), undefined));
});

describe('encodeJson (RR-19)', () => {
  it('encodes any JSON value', () => assert.equal(encodeJson({ a: [1] }).toString(), '{"a":[1]}'));
  it('encodes undefined as null', () => assert.equal(encodeJson(undefined).toString(), 'null'));
});

it('a request without message_id is known by its correlation_id (RR-4.2, SG-3.1)', () => {
  assert.equal(requestId('m-1', 'c-1'), 'm-1');
  assert.equal(requestId(null, '1'), '1');
  assert.equal(requestId('', '2'), '2');
  assert.equal(requestId(null, null), null);
});

it('a direct reply-to address is recognised (RR-14.5)', () => {
  assert.ok(isDirectReplyTo('amq.rabbitmq.reply-to.g1h2AA5y.H8JZ'));
  assert.ok(!isDirectReplyTo('amq.gen-1'));
});
