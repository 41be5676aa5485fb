// How the end of a binding call becomes the outcome `request` and `gather` answer with
// (docs/peer-protocol.md). A call's error may reach the adapter as the binding threw it or
// wrapped, by a service or a future binding, in an Error's `cause` or an AggregateError:
// the outcome is the binding error's whatever its wrapping, so a timeout is never answered
// as a refused call (`ok: false`). Kept out of peer.ts, which runs its loop when loaded, so
// the mapping is unit tested on its own.

import {
  ConnectionLostError,
  ReplyDecodeError,
  RequestTimedOutError,
  RequestTimeoutError,
  RequesterClosedError,
  ResponderFailedError,
} from '../index';

export type Outcome = Record<string, unknown>;

/** How deep a wrapping is looked into: a `cause` chain can be a cycle. */
const MAX_WRAPPING = 16;

/** The error, then what it wraps (`cause`, AggregateError's `errors`), nearest first. */
export function unwrapped(err: unknown): unknown[] {
  const found: unknown[] = [];
  const seen = new Set<unknown>();
  let level: unknown[] = [err];
  for (let depth = 0; depth < MAX_WRAPPING && level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const e of level) {
      if (e === undefined || e === null || seen.has(e)) continue;
      seen.add(e);
      found.push(e);
      if (e instanceof AggregateError) next.push(...e.errors);
      if (e instanceof Error && 'cause' in e) next.push(e.cause);
    }
    level = next;
  }
  return found;
}

/** The protocol version from which a call its connection's loss ended is an outcome (RR-20.1). */
export const CONNECTION_LOST_PROTOCOL = 5;

/**
 * Version 5's `connection_lost` with amqplib's text for the loss; before it such a call is
 * a refusal, as any other error.
 */
function lostOutcome(e: unknown, protocol: number): Outcome | undefined {
  if (e instanceof ConnectionLostError && protocol >= CONNECTION_LOST_PROTOCOL) return { outcome: 'connection_lost', reason: e.reason };
  return undefined;
}

/** The outcome of a request that ended with `err`; undefined: not a call's end, a refusal. */
export function requestOutcome(err: unknown, protocol: number): Outcome | undefined {
  for (const e of unwrapped(err)) {
    if (e instanceof RequestTimedOutError) return { outcome: 'timeout' };
    if (e instanceof ResponderFailedError) return { outcome: 'responder_failed', failure: e.failure };
    if (e instanceof ReplyDecodeError) return { outcome: 'decode_error', error: e.message };
    // Version 3's outcome; before it a closed call is a refusal.
    if (e instanceof RequesterClosedError && protocol >= 3) return { outcome: 'closed' };
    const lost = lostOutcome(e, protocol);
    if (lost) return lost;
  }
  return undefined;
}

/** The outcome of a gather that ended with `err`: a shortfall carries its partial replies (SG-6). */
export function gatherOutcome(err: unknown, protocol: number): Outcome | undefined {
  for (const e of unwrapped(err)) {
    if (e instanceof RequestTimeoutError) return { outcome: 'timeout_with_partial', replies: e.partialReplies };
    if (e instanceof RequesterClosedError && protocol >= 3) return { outcome: 'closed' };
    const lost = lostOutcome(e, protocol);
    if (lost) return lost;
  }
  return undefined;
}
