import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requesterPolicy } from '../policy';
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

  it('finds a gather by correlation_id when the policy demultiplexes by it', () => {
    const policy = requesterPolicy({ gatherDemuxBy: 'correlation_id' });
    assert.deepEqual(routeReply({ correlationId: 'gather-1', responseMessageId: undefined }, gathers, requests, policy), {
      kind: 'gather',
      requestMessageId: 'gather-1',
    });
    assert.equal(routeReply({ correlationId: 'c-1', responseMessageId: 'gather-1' }, gathers, requests, policy).kind, 'unmatched');
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

  it('gives any reply to the oldest caller when the policy matches the oldest waiter', () => {
    const policy = requesterPolicy({ matchRepliesBy: 'oldest_waiter' });
    assert.deepEqual(routeReply({ correlationId: 'gone', responseMessageId: undefined }, gathers, requests, policy), {
      kind: 'request',
      requestId: 'req-old',
    });
    assert.equal(routeReply({ correlationId: 'gone', responseMessageId: undefined }, gathers, new Map(), policy).kind, 'unmatched');
  });

  it('adds a stray gather reply to the oldest gather, marked stray, when the policy says so', () => {
    const policy = requesterPolicy({ gatherStrayReply: 'oldest_gather' });
    const two = new Map<string, unknown>([
      ['gather-old', null],
      ['gather-new', null],
    ]);
    assert.deepEqual(routeReply({ correlationId: 'c-1', responseMessageId: 'elsewhere' }, two, requests, policy), {
      kind: 'gather',
      requestMessageId: 'gather-old',
      stray: true,
    });
    assert.deepEqual(routeReply({ correlationId: 'c-1', responseMessageId: 'gather-new' }, two, requests, policy), {
      kind: 'gather',
      requestMessageId: 'gather-new',
    }, 'a reply naming a pending gather is no stray');
    assert.equal(routeReply({ correlationId: 'req-new', responseMessageId: 'req-new' }, two, requests, policy).kind, 'request');
    assert.equal(routeReply({ correlationId: 'c-1', responseMessageId: 'elsewhere' }, new Map(), requests, policy).kind, 'unmatched');
    assert.equal(routeReply({ correlationId: 'c-1', responseMessageId: undefined }, two, requests, policy).kind, 'unmatched');
  });
});
