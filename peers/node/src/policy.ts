// The knobs a requester or responder resolves once, when it is opened: one field per entry
// of catalogue/catalogue.yaml's `policies`, each defaulting to the value the wire spec
// requires. The main code paths read these fields and nothing else.
//
// This module is deliberately NOT part of the package's public API: index.ts does not
// re-export it and package.json's `exports` exposes only the entry point, so a service
// cannot import it. Only the conformance adapter (src/peer.ts) reaches it, with the
// openers `openRequester` (requester.ts) and `startResponder` (responder.ts), which are
// kept out of index.ts for the same reason. Values keep the catalogue's spelling.

import { DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT_MS, JSON_CONTENT_TYPE, STRIPPED_PREFIX } from './wire';

export interface RequesterPolicy {
  /** Write the reply address in acemq-reply-to (RR-1). */
  readonly writeHeaderAddress: boolean;
  /** Write the reply address in reply_to (RR-1). */
  readonly writeNativeAddress: boolean;
  /** Write acemq-reply-to as a byte array instead of a long string (RR-2). */
  readonly headerAddressAsBytes: boolean;
  /** Declare a reply queue per request and gather (RR-6). */
  readonly replyQueuePerRequest: boolean;
  /** Give x-queue-type classic when declaring the reply queue (RR-7). */
  readonly explicitReplyQueueType: boolean;
  /** How a reply finds its caller (RR-8). */
  readonly matchRepliesBy: 'correlation_id' | 'oldest_waiter';
  /** Count a timed-out call in TimedOut (RR-9). */
  readonly countTimeouts: boolean;
  /** Look at acemq-error before decoding (RR-10). */
  readonly readErrorHeader: boolean;
  /** A basic.return ends the call as refused (RR-13). */
  readonly honourReturns: boolean;
  /** A short string over 255 bytes (RR-18). */
  readonly longShortString: 'refuse' | 'truncate';
  /** A reply that is not JSON (RR-19). */
  readonly undecodableReply: 'decode_error' | 'drop';
  /** message_id of sendRequestMulti copies (SG-1). */
  readonly gatherCopyIds: 'shared' | 'distinct';
  /** How many copies sendRequestMulti publishes (SG-2). */
  readonly multiCopies: 'expected_count' | 'one';
  /** Which reply field finds the gather (SG-4). */
  readonly gatherDemuxBy: 'response_message_id' | 'correlation_id';
  /** Resolve as soon as expectedReplyCount is reached (SG-5). */
  readonly gatherResolvesEarly: boolean;
  /** A shortfall at the timeout (SG-6). */
  readonly gatherShortfall: 'reject' | 'resolve';
  /** No expectedReplyCount: wait the whole timeout, or take it as 1 (SG-7). */
  readonly gatherMissingCount: 'budget' | 'one' | 'copies';
  /** A gather reply for no pending gather (SG-8). */
  readonly gatherStrayReply: 'unmatched' | 'oldest_gather';
  /** The timeout of a request or gather given none, when the caller set no default either (RR-9). */
  readonly defaultTimeoutMs: number;
  /** Count a gather that ends at its timeout (a shortfall or a budget) in TimedOut (RR-9.4). */
  readonly countGatherTimeouts: boolean;
  /** What a call still pending at close() does: end at once as closed, or wait out its timeout (RR-9.5). */
  readonly pendingAtClose: 'end_closed' | 'wait';
  /** A basic.return of a gather's publish ends the gather as refused (RR-13.3). */
  readonly honourGatherReturns: boolean;
  /** Where the type argument travels: the AMQP type property, or a `type` header (SG-2.3). */
  readonly typeCarrier: 'property' | 'header';
  /** correlation_id of a gather given none: its requestMessageId, or nothing (SG-1). */
  readonly gatherDefaultCorrelation: 'request_message_id' | 'none';
  /** What reply_to holds: the reply queue, its name with `.stale` appended (RR-1.3), or an empty string (RR-3.3). */
  readonly nativeAddress: 'reply_queue' | 'stale' | 'empty';
  /** Add an x-acemq-hops header of 1 written as an unsigned 8-bit integer, AMQP `B` (WF-2.1). */
  readonly narrowIntHeader: boolean;
  /** Count a reply that finds no pending request in Unmatched (RR-8.2). */
  readonly countUnmatched: boolean;
  /** A reply that finds no pending call: dropped, or handed to the oldest waiting request (RR-8.3). */
  readonly unmatchedReply: 'drop' | 'oldest_waiter';
  /** How a request not answered in time ends: a timeout, or a reply with a null body (RR-9.1). */
  readonly timeoutOutcome: 'timeout' | 'null_reply';
  /** A reply carrying a header it does not know, not named x-... (RR-5.3). */
  readonly unknownReplyHeaders: 'ignore' | 'fail';
  /** Declare the reply queue exclusive (RR-7.2). */
  readonly exclusiveReplyQueue: boolean;
  /** Count a gather reply for no pending gather in Unmatched (SG-8.1). */
  readonly countGatherUnmatched: boolean;
  /** Messages publishRequest publishes to the exchange (SG-2.2). */
  readonly publishCopies: number;
  /** Copies sendRequestMulti publishes when given no expectedReplyCount (SG-2.1). */
  readonly multiCopiesWithoutCount: number;
  /** When a request not answered gives up: at its timeout, or half its timeout later (RR-9.6). */
  readonly requestDeadline: 'timeout' | 'late';
  /** A gather's timeout runs from its publish, or starts again at every reply it keeps (SG-9.1). */
  readonly gatherDeadline: 'fixed' | 'restart_per_reply';
  /** A failure reply for a pending gather: dropped, or kept as a null reply (SG-10.1). */
  readonly gatherFailureReply: 'drop' | 'keep';
  /** Count a failure reply a gather dropped in Unmatched (SG-10.2). */
  readonly countGatherFailures: boolean;
  /** A request's correlation_id: its message_id (RR-8.4), or none. */
  readonly requestCorrelationId: 'message_id' | 'none';
  /** A call pending when its connection is lost: ends at once as connection lost, or waits out its timeout (RR-20.1). */
  readonly onConnectionLost: 'end_lost' | 'wait';
  /** Reconnect and consume a new reply queue after a lost connection (RR-20.3). */
  readonly recoverConnection: boolean;
}

export type AddressSource = 'header' | 'native';

/** When Answered is counted (RR-15): before the reply is published, or once it is confirmed. */
export type AnsweredTiming = 'before_publish' | 'after_confirm';

export interface ResponderPolicy {
  /** Where the reply address is read, in order (RR-3). */
  readonly readOrder: readonly AddressSource[];
  /** What the reply's correlation_id copies: the request's id, its message_id else its correlation_id (RR-4.2). */
  readonly replyCorrelationFrom: 'request_id' | 'message_id' | 'correlation_id';
  /** Remove x-acemq-* before the handler (RR-5). */
  readonly stripEngineHeaders: boolean;
  /** Show the handler the spec's own acemq-* headers, acemq-reply-to among them (RR-5.2). */
  readonly passSpecHeaders: boolean;
  /** A throwing handler: reply with acemq-error, or send nothing and retry (RR-10). */
  readonly handlerFailure: 'error_reply' | 'retry';
  /** Dead-letter a failed request after its failure reply (RR-11). */
  readonly deadLetterFailures: boolean;
  /** Count a failure reply in Answered (RR-11). */
  readonly countFailuresAnswered: boolean;
  /** A request with no reply address (RR-12). */
  readonly unanswerable: 'accept' | 'dead_letter';
  /** A reply publish that failed (RR-14). */
  readonly undeliverableReply: 'requeue' | 'ack';
  /** When Answered is counted (RR-15). */
  readonly answeredTiming: AnsweredTiming;
  /** Take Answered back when the reply publish fails (RR-15). */
  readonly rollbackAnswered: boolean;
  /** When the counters come to exist (RR-16). */
  readonly countersCreated: 'before_subscribe' | 'after_first_delivery';
  /** The type `{queue}.dlq` is declared with (RR-17). */
  readonly dlqQueueType: 'quorum' | 'classic';
  /** Set responseMessageId on replies (SG-3). */
  readonly responseMessageId: boolean;
  /** `strict` fails a request with a bool, double, table or array header (WF-1). */
  readonly headerTypes: 'lenient' | 'strict';
  /** Attempts at an undeliverable reply when the responder is given none (RR-14.4). */
  readonly defaultMaxAttempts: number;
  /** The attempt number is x-delivery-count plus this (RR-14.3). */
  readonly attemptBase: 1 | 0;
  /** A failure reply that was not delivered goes to the retry policy, or is taken as sent (RR-14.1). */
  readonly failureReplyDelivery: 'checked' | 'unchecked';
  /**
   * A request body that is not JSON: a MalformedRequest failure reply then the dead-letter,
   * dropped, or the failure reply alone (RR-19.2 forbids the last two).
   */
  readonly malformedRequest: 'fail_reply' | 'drop' | 'reply_only';
  /** What a dead-letter copy keeps of the request: everything, or only its body, message_id and headers (RR-11.4). */
  readonly deadLetterCopy: 'full' | 'id_and_headers';
  /** An acemq-reply-to written as a byte array: read as UTF-8, or taken as absent (RR-2.2). */
  readonly bytesAddress: 'accept' | 'ignore';
  /** The content_type of a reply; `none` sends none (RR-4.3). */
  readonly replyContentType: 'application/json' | 'none';
  /** The header prefix removed before the handler when stripping (RR-5.2). */
  readonly stripPrefix: string;
  /** The body of a failure reply: empty, or `{"error": the acemq-error text}` (RR-10.1). */
  readonly failureBody: 'empty' | 'json';
  /** The ExceptionType of acemq-error: the unqualified name, or a module-qualified one (RR-10.2). */
  readonly errorTypeName: 'simple' | 'qualified';
  /** After a handler's failure reply, requeue the request until its last attempt (RR-11.2). */
  readonly retryFailures: boolean;
  /** Count a request with no reply address in Unanswerable (RR-12.1). */
  readonly countUnanswerable: boolean;
  /** How the request queue is declared: quorum, or passively first and classic when missing (RR-17.1). */
  readonly requestQueue: 'quorum' | 'classic_if_missing';
  /** The last attempt at an undeliverable reply: dead-letter the request, or ack it (RR-14.2). */
  readonly lastAttempt: 'dead_letter' | 'ack';
  /** A reply to amq.rabbitmq.reply-to.*: at most once, without mandatory (RR-14.5), or checked like any reply. */
  readonly directReplyTo: 'at_most_once' | 'checked';
  /** Reconnect, declare again and consume again after a lost connection (RR-20.2). */
  readonly recoverConnection: boolean;
  /** When a request is acknowledged: once settled (RR-14), or as soon as it is delivered (a breach of RR-20.4). */
  readonly ackTiming: 'after_handling' | 'on_delivery';
}

export const DEFAULT_REQUESTER_POLICY: RequesterPolicy = Object.freeze({
  writeHeaderAddress: true,
  writeNativeAddress: true,
  headerAddressAsBytes: false,
  replyQueuePerRequest: false,
  explicitReplyQueueType: true,
  matchRepliesBy: 'correlation_id',
  countTimeouts: true,
  readErrorHeader: true,
  honourReturns: true,
  longShortString: 'refuse',
  undecodableReply: 'decode_error',
  gatherCopyIds: 'shared',
  multiCopies: 'expected_count',
  gatherDemuxBy: 'response_message_id',
  gatherResolvesEarly: true,
  gatherShortfall: 'reject',
  gatherMissingCount: 'budget',
  gatherStrayReply: 'unmatched',
  defaultTimeoutMs: DEFAULT_TIMEOUT_MS,
  countGatherTimeouts: false,
  pendingAtClose: 'end_closed',
  honourGatherReturns: true,
  typeCarrier: 'property',
  gatherDefaultCorrelation: 'request_message_id',
  nativeAddress: 'reply_queue',
  narrowIntHeader: false,
  countUnmatched: true,
  unmatchedReply: 'drop',
  timeoutOutcome: 'timeout',
  unknownReplyHeaders: 'ignore',
  exclusiveReplyQueue: true,
  countGatherUnmatched: true,
  publishCopies: 1,
  multiCopiesWithoutCount: 1,
  requestDeadline: 'timeout',
  gatherDeadline: 'fixed',
  gatherFailureReply: 'drop',
  countGatherFailures: true,
  requestCorrelationId: 'message_id',
  onConnectionLost: 'end_lost',
  recoverConnection: true,
});

export const DEFAULT_RESPONDER_POLICY: ResponderPolicy = Object.freeze({
  readOrder: Object.freeze(['header', 'native'] as const),
  replyCorrelationFrom: 'request_id',
  stripEngineHeaders: true,
  passSpecHeaders: true,
  handlerFailure: 'error_reply',
  deadLetterFailures: true,
  countFailuresAnswered: false,
  unanswerable: 'accept',
  undeliverableReply: 'requeue',
  answeredTiming: 'before_publish',
  rollbackAnswered: true,
  countersCreated: 'before_subscribe',
  dlqQueueType: 'quorum',
  responseMessageId: true,
  headerTypes: 'lenient',
  defaultMaxAttempts: DEFAULT_MAX_ATTEMPTS,
  attemptBase: 1,
  failureReplyDelivery: 'checked',
  malformedRequest: 'fail_reply',
  deadLetterCopy: 'full',
  bytesAddress: 'accept',
  replyContentType: JSON_CONTENT_TYPE,
  stripPrefix: STRIPPED_PREFIX,
  failureBody: 'empty',
  errorTypeName: 'simple',
  retryFailures: false,
  countUnanswerable: true,
  requestQueue: 'quorum',
  lastAttempt: 'dead_letter',
  directReplyTo: 'at_most_once',
  recoverConnection: true,
  ackTiming: 'after_handling',
});

/** The defaults with some knobs changed, frozen: a policy never changes once opened. */
export function requesterPolicy(changes: Partial<RequesterPolicy> = {}): RequesterPolicy {
  return Object.freeze({ ...DEFAULT_REQUESTER_POLICY, ...changes });
}

export function responderPolicy(changes: Partial<ResponderPolicy> = {}): ResponderPolicy {
  return Object.freeze({ ...DEFAULT_RESPONDER_POLICY, ...changes });
}
