// The adapter's outcomes: a binding's timeout, as thrown or wrapped, is the timeout outcome
// (a gather's shortfall timeout_with_partial with its replies), never a refused call.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatherOutcome, requestOutcome } from '../adapter/outcomes';
import { ConnectionLostError, RequestTimedOutError, RequestTimeoutError, RequesterClosedError, ResponderFailedError } from '../errors';

/** The ways a caller can hand an error on: as it is, in a cause chain, in an AggregateError. */
function wrappings(err: Error): Array<[string, unknown]> {
  return [
    ['plain', err],
    ['cause', new Error('request failed', { cause: err })],
    ['nested cause', new Error('outer', { cause: new TypeError('middle', { cause: err }) })],
    ['aggregate', new AggregateError([new Error('other'), err], 'all failed')],
    ['rejected promise reason', new AggregateError([new Error('wrapper', { cause: err })])],
  ];
}

describe('adapter outcomes', () => {
  it("maps the binding's request timeout, plain and wrapped, to the timeout outcome (RR-9)", () => {
    for (const [how, err] of wrappings(new RequestTimedOutError('r1', 100))) {
      assert.deepEqual(requestOutcome(err, 3), { outcome: 'timeout' }, how);
    }
  });

  it("maps the binding's gather shortfall, plain and wrapped, to timeout_with_partial with its replies (SG-6)", () => {
    for (const [how, err] of wrappings(new RequestTimeoutError('g1', 3, [{ n: 1 }]))) {
      assert.deepEqual(gatherOutcome(err, 3), { outcome: 'timeout_with_partial', replies: [{ n: 1 }] }, how);
    }
  });

  it('maps the other call ends, wrapped too, and leaves anything else to be refused', () => {
    const failed = new Error('x', { cause: new ResponderFailedError('r1', 'ScenarioFailure: no') });
    assert.deepEqual(requestOutcome(failed, 3), { outcome: 'responder_failed', failure: 'ScenarioFailure: no' });
    assert.deepEqual(requestOutcome(new RequesterClosedError(), 3), { outcome: 'closed' });
    assert.equal(requestOutcome(new RequesterClosedError(), 2), undefined, 'closed is a version-3 outcome');
    assert.equal(requestOutcome(new Error('broker gone'), 3), undefined);
    assert.equal(gatherOutcome(new RequestTimedOutError('r1', 100), 3), undefined, "a request's timeout is no gather's");
    // A cause chain that loops ends the search.
    const loop = new Error('a') as Error & { cause?: unknown };
    loop.cause = new Error('b', { cause: loop });
    assert.equal(requestOutcome(loop, 3), undefined);
  });

  it('maps a call its connection\'s loss ended to connection_lost with the reason from version 5, a refusal before (RR-20.1)', () => {
    const reason = 'Connection closed: 320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - Closed via management plugin"';
    for (const [how, err] of wrappings(new ConnectionLostError(reason))) {
      assert.deepEqual(requestOutcome(err, 5), { outcome: 'connection_lost', reason }, how);
      assert.deepEqual(gatherOutcome(err, 5), { outcome: 'connection_lost', reason }, how);
      assert.equal(requestOutcome(err, 4), undefined, `${how}: no such outcome in version 4`);
      assert.equal(gatherOutcome(err, 4), undefined, how);
    }
    assert.deepEqual(requestOutcome(new RequestTimedOutError('r1', 100), 5), { outcome: 'timeout' }, 'a timeout stays a timeout');
  });
});
