import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestTimeoutError } from '../errors';
import { PendingGather } from '../gather';

describe('PendingGather', () => {
  it('resolves as soon as the count is reached (SG-5)', async () => {
    const gather = new PendingGather<number>('m1', { expectedReplyCount: 2, timeoutMs: 5_000 });
    const start = Date.now();
    assert.equal(gather.add(1), true);
    assert.equal(gather.add(2), true);
    assert.deepEqual(await gather.result, [1, 2]);
    assert.ok(Date.now() - start < 1_000);
    assert.equal(gather.add(3), false, 'a reply after the gather ended is not taken');
  });

  it('rejects a shortfall with the partial replies in arrival order (SG-6)', async () => {
    const gather = new PendingGather<string>('m2', { expectedReplyCount: 3, timeoutMs: 30 });
    gather.add('b');
    gather.add('a');
    await assert.rejects(gather.result, (err: unknown) => {
      assert.ok(err instanceof RequestTimeoutError);
      assert.deepEqual(err.partialReplies, ['b', 'a']);
      assert.equal(err.requestMessageId, 'm2');
      return true;
    });
  });

  it('resolves a shortfall when the policy says resolve', async () => {
    const gather = new PendingGather<string>('m3', { expectedReplyCount: 3, timeoutMs: 20, shortfall: 'resolve' });
    gather.add('x');
    assert.deepEqual(await gather.result, ['x']);
  });

  it('waits for the timeout with the count reached without early resolution', async () => {
    const gather = new PendingGather<number>('m9', { expectedReplyCount: 1, timeoutMs: 60, resolvesEarly: false });
    const start = Date.now();
    gather.add(1);
    assert.equal(gather.isSettled, false);
    assert.deepEqual(await gather.result, [1]);
    assert.ok(Date.now() - start >= 55);
  });

  it('still rejects a shortfall without early resolution', async () => {
    const gather = new PendingGather<number>('m10', { expectedReplyCount: 2, timeoutMs: 20, resolvesEarly: false });
    gather.add(1);
    await assert.rejects(gather.result, RequestTimeoutError);
  });

  it('without a count resolves at the timeout, not earlier (SG-7)', async () => {
    const gather = new PendingGather<number>('m4', { timeoutMs: 60 });
    const start = Date.now();
    gather.add(1);
    gather.add(2);
    assert.deepEqual(await gather.result, [1, 2]);
    assert.ok(Date.now() - start >= 55);
  });

  it('without a count and no replies resolves with an empty list', async () => {
    assert.deepEqual(await new PendingGather<number>('m5', { timeoutMs: 10 }).result, []);
  });

  it('calls onReply once per reply in order, and survives a throwing callback', async () => {
    const seen: number[] = [];
    const gather = new PendingGather<number>('m6', {
      expectedReplyCount: 2,
      timeoutMs: 1_000,
      onReply: (reply) => {
        seen.push(reply);
        if (reply === 1) throw new Error('callback bug');
      },
    });
    gather.add(1);
    gather.add(2);
    assert.deepEqual(await gather.result, [1, 2]);
    assert.deepEqual(seen, [1, 2]);
  });

  it('tells its owner when it settles', async () => {
    const gather = new PendingGather<number>('m7', { expectedReplyCount: 1, timeoutMs: 1_000 });
    let settled = 0;
    gather.onSettled(() => settled++);
    gather.add(1);
    await gather.result;
    assert.equal(settled, 1);
    assert.equal(gather.isSettled, true);
  });

  it('ends at its timeout however many replies came, or late when every reply restarts it (SG-9.1)', async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (const deadline of ['fixed', 'restart_per_reply'] as const) {
      const start = Date.now();
      const budget = new PendingGather<number>('m11', { timeoutMs: 400, deadline });
      const shortfall = new PendingGather<number>('m12', { expectedReplyCount: 3, timeoutMs: 400, deadline });
      await sleep(300);
      budget.add(1);
      shortfall.add(1);
      assert.deepEqual(await budget.result, [1]);
      const budgetMs = Date.now() - start;
      await assert.rejects(shortfall.result, RequestTimeoutError);
      const shortfallMs = Date.now() - start;
      if (deadline === 'fixed') {
        // Upper bounds short of where a restarted timeout can end (300 + 400 ms), with room for a loaded machine.
        assert.ok(budgetMs < 690 && shortfallMs < 690, `ended at the timeout: ${budgetMs}, ${shortfallMs} ms`);
      } else {
        assert.ok(budgetMs >= 695 && shortfallMs >= 695, `a whole timeout after the reply: ${budgetMs}, ${shortfallMs} ms`);
      }
    }
  });

  it('takes no reply once it ended at its timeout (SG-8.1)', async () => {
    const gather = new PendingGather<number>('m13', { expectedReplyCount: 2, timeoutMs: 10 });
    gather.add(1);
    await assert.rejects(gather.result, RequestTimeoutError);
    assert.equal(gather.add(2), false);
    assert.deepEqual(gather.replies, [1]);
  });

  it('refuses a count that is not a positive integer', () => {
    assert.throws(() => new PendingGather('m8', { expectedReplyCount: 0, timeoutMs: 10 }), RangeError);
  });
});
