// Which pending call a reply on the shared reply queue belongs to (RR-8, SG-4). Pure, so
// the routing rules and their mutants are unit tested without a broker.

export type ReplyRoute =
  | { kind: 'gather'; requestMessageId: string }
  | { kind: 'request'; requestId: string }
  | { kind: 'unmatched' };

export interface ReplyKeys {
  correlationId: string | undefined;
  responseMessageId: string | undefined;
}

export interface RoutingMutants {
  /** `gather-by-correlation-id`: find the gather by the reply's correlation_id (breaks SG-4). */
  gatherByCorrelationId?: boolean;
  /** `late-reply-to-next`: give a request reply to the oldest waiting caller (breaks RR-8). */
  lateReplyToNext?: boolean;
  /** `stray-reply-to-oldest-gather`: a gather reply for no pending gather joins the oldest (breaks SG-8). */
  strayReplyToOldestGather?: boolean;
}

/**
 * Gathers are keyed by requestMessageId and found by the `responseMessageId` header only:
 * correlation_id is shared by every copy of a gather and may be a business id. Requests
 * are found by correlation_id. Anything else, including a reply for a call that already
 * ended, is Unmatched.
 *
 * `pendingGathers` and `pendingRequests` are keyed by id, in the order the calls were made.
 */
export function routeReply(
  reply: ReplyKeys,
  pendingGathers: ReadonlySet<string> | ReadonlyMap<string, unknown>,
  pendingRequests: ReadonlyMap<string, unknown>,
  mutants: RoutingMutants = {},
): ReplyRoute {
  const gatherKey = mutants.gatherByCorrelationId ? reply.correlationId : reply.responseMessageId;
  if (gatherKey !== undefined && pendingGathers.has(gatherKey)) {
    return { kind: 'gather', requestMessageId: gatherKey };
  }
  if (mutants.lateReplyToNext) {
    for (const requestId of pendingRequests.keys()) return { kind: 'request', requestId };
    return { kind: 'unmatched' };
  }
  if (reply.correlationId !== undefined && pendingRequests.has(reply.correlationId)) {
    return { kind: 'request', requestId: reply.correlationId };
  }
  if (mutants.strayReplyToOldestGather && reply.responseMessageId !== undefined) {
    for (const requestMessageId of pendingGathers.keys()) return { kind: 'gather', requestMessageId };
  }
  return { kind: 'unmatched' };
}
