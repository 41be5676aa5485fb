// acemq for Node.js: request/reply and the bus's scatter-gather over RabbitMQ (amqplib).
//
// This is the package's whole public API (package.json `exports` exposes nothing else).
// The policy module and the openers that take a policy are deliberately left out: they
// exist for the conformance adapter only.

export * from './errors';
// amqplib's own connection options (TLS among them), as `socketOptions` of both sides take them.
export type { SocketOptions } from 'amqplib';
export { PendingGather } from './gather';
export type { PendingGatherOptions } from './gather';
export { ConfirmPublisher } from './publisher';
export {
  Requester,
  newMessageId,
  type GatherCallOptions,
  type PublishRequestOptions,
  type RequestOptions,
  type RequesterObserver,
  type RequesterOptions,
  type SendRequestMultiOptions,
  type UnmatchedReply,
} from './requester';
export {
  Responder,
  deadLetterQueue,
  type Handler,
  type RequestContext,
  type ResponderObserver,
  type ResponderOptions,
} from './responder';
// The wire rules a service may want on its own; what only a defective policy does
// (truncating short strings, strict header types) stays inside.
export {
  DEAD_LETTER_REASON_HEADER,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_TIMEOUT_MS,
  DELIVERY_COUNT_HEADER,
  ERROR_HEADER,
  JSON_CONTENT_TYPE,
  REPLY_TO_HEADER,
  RESPONSE_MESSAGE_ID_HEADER,
  SHORT_STRING_MAX_BYTES,
  STRIPPED_PREFIX,
  attemptNumber,
  checkShortStrings,
  chooseReplyAddress,
  decodeJson,
  encodeJson,
  failureText,
  failureTextOf,
  handlerHeaders,
  headerString,
  nonEmpty,
  retryDecision,
  unqualifiedTypeName,
  type Headers,
  type ReplyAddress,
  type ReplyToSource,
  type RetryDecision,
  type ShortStringProperties,
} from './wire';
