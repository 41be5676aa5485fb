// The events a binding responder's observer writes (docs/peer-protocol.md, Events), kept
// out of peer.ts, which runs its loop when loaded, so `events: false` is unit tested.

import type { RequestContext, ResponderObserver } from '../index';

export type Line = Record<string, unknown>;

/** What the handler saw, as the echo body and the `handled` event report it. */
export function seen(context: RequestContext): Line {
  return {
    message_id: context.messageId,
    correlation_id: context.correlationId,
    reply_to: context.replyTo,
    reply_to_source: context.replyToSource,
    headers: Object.keys(context.headers).sort(),
    attempt: context.attempt,
  };
}

/**
 * The observer of responder `name`. With `events` false (protocol 4, a load) it has no
 * per-request hook at all, so the binding calls none and nothing is written per request;
 * `connectionLost` stays, since a lost connection is a fault the harness must still hear of,
 * and so does `recovered` (version 5), which is no per-request event either.
 */
export function responderObserver(
  name: string,
  write: (line: Line) => void,
  events: boolean,
  connectionLost: ((reason: string) => void) | undefined,
  recovered?: (() => void) | undefined,
): ResponderObserver {
  if (!events) return { connectionLost, recovered };
  return {
    handled: (context) =>
      write({ event: 'handled', responder: name, message_id: context.messageId, attempt: context.attempt, seen: seen(context) }),
    replied: (e) => write({ event: 'replied', responder: name, message_id: e.messageId, failure: e.failure }),
    replyFailed: (e) => write({ event: 'reply_failed', responder: name, message_id: e.messageId, attempt: e.attempt, error: e.error }),
    deadLettered: (e) => write({ event: 'dead_lettered', responder: name, message_id: e.messageId, reason: e.reason }),
    unanswerable: (e) => write({ event: 'unanswerable', responder: name, message_id: e.messageId }),
    connectionLost,
    recovered,
  };
}
