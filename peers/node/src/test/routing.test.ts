import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { routeReply } from '../routing';

const gathers = new Set(['gather-1']);
const requests = new Map<string, unknown>([
  ['req-old', null],
  ['req-new', null],
]);

describe('routeReply', () => {
  it('finds a gather by responseMessageId, whatever the correlation_id (SG-4)', () =>
    assert.deepEqual(routeReply({ correlationId: 'c-1', responseMessageId: 'gather-1' }, gathers, requests), {
      kind: 'gather',
      requestMessageId: 'gather-1',
    }));

  it('does not find a gather by correlation_id', () =>
    assert.deepEqual(routeReply({ correlationId: 'gather-1', responseMessageId: undefined }, gathers, requests), {
      kind: 'unmatched',
    }));

  it('finds a gather by correlation_id for the gather-by-correlation-id mutant', () => {
    const mutants = { gatherByCorrelationId: true };
    assert.deepEqual(routeReply({ correlationId: 'gather-1', responseMessageId: undefined }, gathers, requests, mutants), {
      kind: 'gather',
      requestMessageId: 'gather-1',
    });
    assert.equal(routeReply({ correlationId: 'c-1', responseMessageId: 'gather-1' }, gathers, requests, mutants).kind, 'unmatched');
  });

  it('finds a request by correlation_id (RR-8)', () =>
    assert.deepEqual(routeReply({ correlationId: 'req-new', responseMessageId: 'req-new' }, gathers, requests), {
      kind: 'request',
      requestId: 'req-new',
    }));

  it('counts a reply for nobody as unmatched', () => {
    assert.equal(routeReply({ correlationId: 'gone', responseMessageId: 'gone' }, gathers, requests).kind, 'unmatched');
    assert.equal(routeReply({ correlationId: undefined, responseMessageId: undefined }, gathers, requests).kind, 'unmatched');
  });

  it('gives any reply to the oldest caller for the late-reply-to-next mutant', () => {
    const mutants = { lateReplyToNext: true };
    assert.deepEqual(routeReply({ correlationId: 'gone', responseMessageId: undefined }, gathers, requests, mutants), {
      kind: 'request',
      requestId: 'req-old',
    });
    assert.equal(routeReply({ correlationId: 'gone', responseMessageId: undefined }, gathers, new Map(), mutants).kind, 'unmatched');
  });

  it('adds a stray gather reply to the oldest gather for the stray-reply-to-oldest-gather mutant', () => {
    const mutants = { strayReplyToOldestGather: true };
    const two = new Map<string, unknown>([
      ['gather-old', null],
      ['gather-new', null],
    ]);
    assert.deepEqual(routeReply({ correlationId: 'c-1', responseMessageId: 'elsewhere' }, two, requests, mutants), {
      kind: 'gather',
      requestMessageId: 'gather-old',
    });
    assert.equal(routeReply({ correlationId: 'req-new', responseMessageId: 'req-new' }, two, requests, mutants).kind, 'request');
    assert.equal(routeReply({ correlationId: 'c-1', responseMessageId: 'elsewhere' }, new Map(), requests, mutants).kind, 'unmatched');
    assert.equal(routeReply({ correlationId: 'c-1', responseMessageId: undefined }, two, requests, mutants).kind, 'unmatched');
  });
});
