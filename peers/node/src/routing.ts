// Which pending call a reply on the shared reply queue belongs to (RR-8, SG-4). Pure, so
// the routing rules and every policy value are unit tested without a broker.

import type { RequesterPolicy } from './policy';

export type ReplyRoute =
  // `stray`: the reply names no pending gather and is handed to one anyway (a breach of SG-8.2).
  | { kind: 'gather'; requestMessageId: string; stray?: true }
  | { kind: 'request'; requestId: string }
  | { kind: 'unmatched' };

export interface ReplyKeys {
  correlationId: string | undefined;
  responseMessageId: string | undefined;
}

/** The routing knobs of a requester's policy. */
export type RoutingPolicy = Pick<RequesterPolicy, 'gatherDemuxBy' | 'matchRepliesBy' | 'gatherStrayReply' | 'unmatchedReply'>;

const SPEC_ROUTING: RoutingPolicy = {
  gatherDemuxBy: 'response_message_id',
  matchRepliesBy: 'correlation_id',
  gatherStrayReply: 'unmatched',
  unmatchedReply: 'drop',
};

/**
 * Gathers are keyed by requestMessageId and found by the `responseMessageId` header only:
 * correlation_id is shared by every copy of a gather and may be a business id. Requests
 * are found by correlation_id. Anything else, including a reply for a call that already
 * ended, is Unmatched.
 *
 * `pendingGathers` and `pendingRequests` are keyed by id, in the order the calls were made
 * (Maps keep insertion order, so "oldest" is the first key).
 */
export function routeReply(
  reply: ReplyKeys,
  pendingGathers: ReadonlySet<string> | ReadonlyMap<string, unknown>,
  pendingRequests: ReadonlyMap<string, unknown>,
  policy: RoutingPolicy = SPEC_ROUTING,
): ReplyRoute {
  const gatherKey = policy.gatherDemuxBy === 'correlation_id' ? reply.correlationId : reply.responseMessageId;
  if (gatherKey !== undefined && pendingGathers.has(gatherKey)) {
    return { kind: 'gather', requestMessageId: gatherKey };
  }
  if (policy.matchRepliesBy === 'oldest_waiter') {
    for (const requestId of pendingRequests.keys()) return { kind: 'request', requestId };
    return { kind: 'unmatched' };
  }
  if (reply.correlationId !== undefined && pendingRequests.has(reply.correlationId)) {
    return { kind: 'request', requestId: reply.correlationId };
  }
  if (policy.gatherStrayReply === 'oldest_gather' && reply.responseMessageId !== undefined) {
    for (const requestMessageId of pendingGathers.keys()) return { kind: 'gather', requestMessageId, stray: true };
  }
  // A reply nobody waits for handed to the oldest request still waiting: a breach of RR-8.3.
  if (policy.unmatchedReply === 'oldest_waiter') {
    for (const requestId of pendingRequests.keys()) return { kind: 'request', requestId };
  }
  return { kind: 'unmatched' };
}
