import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ShortStringTooLongError } from '../errors';
import {
  attemptNumber,
  checkShortStrings,
  chooseReplyAddress,
  encodeJson,
  failureText,
  firstMalformedHeader,
  handlerHeaders,
  headerString,
  truncateShortStrings,
  truncateUtf8,
} from '../wire';

describe('headerString (RR-2)', () => {
  it('reads a long string', () => assert.equal(headerString({ h: 'q1' }, 'h'), 'q1'));
  it('reads a byte array as UTF-8', () => assert.equal(headerString({ h: Buffer.from('qé', 'utf8') }, 'h'), 'qé'));
  it('treats empty, absent and non-string values as absent', () => {
    assert.equal(headerString({ h: '' }, 'h'), undefined);
    assert.equal(headerString({ h: Buffer.alloc(0) }, 'h'), undefined);
    assert.equal(headerString({}, 'h'), undefined);
    assert.equal(headerString(undefined, 'h'), undefined);
    assert.equal(headerString({ h: 5 }, 'h'), undefined);
  });
});

describe('chooseReplyAddress (RR-3)', () => {
  it('prefers the header', () =>
    assert.deepEqual(chooseReplyAddress({ 'acemq-reply-to': 'h' }, 'n'), { address: 'h', source: 'header' }));
  it('falls back to the native property', () =>
    assert.deepEqual(chooseReplyAddress({}, 'n'), { address: 'n', source: 'native' }));
  it('treats an empty header as absent', () =>
    assert.deepEqual(chooseReplyAddress({ 'acemq-reply-to': '' }, 'n'), { address: 'n', source: 'native' }));
  it('accepts the header as a byte array', () =>
    assert.deepEqual(chooseReplyAddress({ 'acemq-reply-to': Buffer.from('h') }, undefined), {
      address: 'h',
      source: 'header',
    }));
  it('finds nothing when both are absent or empty', () => {
    assert.equal(chooseReplyAddress(undefined, undefined), undefined);
    assert.equal(chooseReplyAddress({ 'acemq-reply-to': '' }, ''), undefined);
  });
  it('reads native first for the native-first mutant', () =>
    assert.deepEqual(chooseReplyAddress({ 'acemq-reply-to': 'h' }, 'n', true), { address: 'n', source: 'native' }));
});

describe('handlerHeaders (RR-5)', () => {
  const headers = { 'x-acemq-secret': 's', 'acemq-reply-to': 'q', 'x-custom': 1 };
  it('strips the x-acemq- namespace and keeps the rest', () =>
    assert.deepEqual(Object.keys(handlerHeaders(headers)).sort(), ['acemq-reply-to', 'x-custom']));
  it('keeps everything for the no-strip mutant', () =>
    assert.deepEqual(Object.keys(handlerHeaders(headers, true)).sort(), ['acemq-reply-to', 'x-acemq-secret', 'x-custom']));
});

describe('attemptNumber (RR-14)', () => {
  it('is 1 without x-delivery-count', () => assert.equal(attemptNumber({}), 1));
  it('is the count plus one for any integer encoding', () => {
    assert.equal(attemptNumber({ 'x-delivery-count': 0 }), 1);
    assert.equal(attemptNumber({ 'x-delivery-count': 2 }), 3);
    assert.equal(attemptNumber({ 'x-delivery-count': 2n }), 3);
    assert.equal(attemptNumber({ 'x-delivery-count': '4' }), 5);
  });
  it('ignores values that are not a count', () => {
    assert.equal(attemptNumber({ 'x-delivery-count': -1 }), 1);
    assert.equal(attemptNumber({ 'x-delivery-count': 1.5 }), 1);
    assert.equal(attemptNumber({ 'x-delivery-count': 'x' }), 1);
  });
});

describe('failureText (RR-10)', () => {
  class ScenarioFailure extends Error {}
  it('is {Type}: {message} with the class name', () => {
    assert.equal(failureText(new ScenarioFailure('no price')), 'ScenarioFailure: no price');
    assert.equal(failureText(new TypeError('bad')), 'TypeError: bad');
  });
  it('names a thrown non-Error by its JavaScript type', () => assert.equal(failureText('oops'), 'string: oops'));
});

describe('checkShortStrings (RR-18)', () => {
  it('accepts 255 bytes', () => assert.doesNotThrow(() => checkShortStrings({ correlationId: 'a'.repeat(255) })));
  it('refuses 256 bytes, counted in UTF-8', () => {
    assert.throws(() => checkShortStrings({ messageId: 'a'.repeat(256) }), ShortStringTooLongError);
    assert.throws(() => checkShortStrings({ replyTo: 'é'.repeat(128) }), ShortStringTooLongError);
  });
  it('ignores absent properties', () => assert.doesNotThrow(() => checkShortStrings({ type: undefined })));
});

describe('truncateShortStrings (the truncates-short-strings mutant)', () => {
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

describe('firstMalformedHeader (the strict-header-types mutant)', () => {
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
