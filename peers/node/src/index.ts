// acemq for Node.js: request/reply and the bus's scatter-gather over RabbitMQ (amqplib).

export * from './errors';
export { PendingGather } from './gather';
export type { PendingGatherOptions } from './gather';
export * from './mutants';
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
export * from './wire';
