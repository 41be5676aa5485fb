// The responder: consumes a quorum request queue, runs a handler, and replies to the
// address the request named (RR-3..RR-5, RR-10..RR-17).

import * as amqp from 'amqplib';
import type { ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { ResponderMutant } from './mutants';
import { ConfirmPublisher } from './publisher';
import {
  DEAD_LETTER_REASON_HEADER,
  DEFAULT_MAX_ATTEMPTS,
  DELIVERY_COUNT_HEADER,
  ERROR_HEADER,
  type Headers,
  JSON_CONTENT_TYPE,
  RESPONSE_MESSAGE_ID_HEADER,
  type ReplyToSource,
  attemptNumber,
  chooseReplyAddress,
  decodeJson,
  encodeJson,
  failureText,
  firstMalformedHeader,
  handlerHeaders,
  nonEmpty,
} from './wire';

/** What a handler is told about the request it is answering. */
export interface RequestContext {
  queue: string;
  messageId: string | null;
  correlationId: string | null;
  replyTo: string;
  replyToSource: ReplyToSource;
  /** The application headers, `x-acemq-*` removed (RR-5). */
  headers: Headers;
  /** 1 on first delivery; RR-14's retry attempt after that. */
  attempt: number;
}

export type Handler<TReq, TRes> = (request: TReq, context: RequestContext) => TRes | Promise<TRes>;

/** Hooks for what happens inside a responder; every one is optional. */
export interface ResponderObserver {
  /** The handler is about to run. */
  handled?(context: RequestContext): void;
  /** A reply was confirmed and not returned; `failure` is its acemq-error text, if any. */
  replied?(event: { messageId: string | null; failure: string | null }): void;
  /** A reply publish was returned, nacked or lost with the channel (RR-14). */
  replyFailed?(event: { messageId: string | null; attempt: number; error: string }): void;
  /** The request was published to `{queue}.dlq`, confirmed, and acknowledged. */
  deadLettered?(event: { messageId: string | null; reason: string }): void;
  /** A request with no reply address was counted and acknowledged (RR-12). */
  unanswerable?(event: { messageId: string | null }): void;
}

export interface ResponderOptions {
  /** Bind the request queue to this exchange (declared by someone else) before consuming. */
  bind?: { exchange: string; routingKey: string } | undefined;
  /** Attempts at delivering a reply before the request is dead-lettered (RR-14). */
  maxAttempts?: number | undefined;
  /** Unacknowledged requests in flight at once. */
  prefetch?: number | undefined;
  observer?: ResponderObserver | undefined;
  /** A deliberate defect from the wire spec's catalogue, for conformance testing only. */
  mutant?: ResponderMutant | undefined;
}

/** The reply publish failed: the request goes to the retry policy (RR-14). */
class ReplyNotDelivered extends Error {}

const MUTANT_WINDOW_MS = 1000;

export class Responder<TReq = unknown, TRes = unknown> {
  // Both exist, at zero, before the consumer is registered (RR-16).
  private answeredCount = 0;
  private unanswerableCount = 0;
  private lazyCountersMade = false; // only for the counters-after-subscribe mutant
  private consumerTag: string | undefined;
  private stopped = false;
  private readonly maxAttempts: number;

  private constructor(
    private readonly connection: ChannelModel,
    private readonly channel: ConfirmChannel,
    private readonly publisher: ConfirmPublisher,
    readonly queue: string,
    private readonly handler: Handler<TReq, TRes>,
    private readonly options: ResponderOptions,
  ) {
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${options.maxAttempts}`);
    }
  }

  /**
   * Declares `queue` and `{queue}.dlq` as durable quorum queues (RR-17), binds the queue when
   * asked, and returns once the consumer is registered.
   */
  static async start<TReq, TRes>(
    url: string,
    queue: string,
    handler: Handler<TReq, TRes>,
    options: ResponderOptions = {},
  ): Promise<Responder<TReq, TRes>> {
    const connection = await amqp.connect(url);
    try {
      connection.on('error', (err: Error) => console.error(`responder ${queue} connection error: ${err.message}`));
      const channel = await connection.createConfirmChannel();
      channel.on('error', (err: Error) => console.error(`responder ${queue} channel error: ${err.message}`));
      const quorum = { durable: true, arguments: { 'x-queue-type': 'quorum' } };
      // The classic-dlq mutant breaks RR-17: a classic dead-letter queue.
      const dlq = options.mutant === 'classic-dlq' ? { durable: true, arguments: { 'x-queue-type': 'classic' } } : quorum;
      await channel.assertQueue(queue, quorum);
      await channel.assertQueue(deadLetterQueue(queue), dlq);
      if (options.bind) await channel.bindQueue(queue, options.bind.exchange, options.bind.routingKey);
      await channel.prefetch(options.prefetch ?? 10);
      const responder = new Responder(connection, channel, new ConfirmPublisher(channel), queue, handler, options);
      await responder.subscribe();
      return responder;
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** Requests answered: counted before the reply left, taken back if it was not delivered. */
  get answered(): number {
    return this.answeredCount;
  }

  /** Requests that named nowhere to reply. */
  get unanswerable(): number {
    return this.unanswerableCount;
  }

  /** Cancels the consumer and closes the connection; unacknowledged requests go back. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.consumerTag !== undefined) await this.channel.cancel(this.consumerTag).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }

  private async subscribe(): Promise<void> {
    const { consumerTag } = await this.channel.consume(this.queue, (msg) => {
      if (msg) void this.onRequest(msg);
      else console.error(`responder ${this.queue}: consumer cancelled by the broker`);
    });
    this.consumerTag = consumerTag;
  }

  private async onRequest(msg: ConsumeMessage): Promise<void> {
    try {
      await this.process(msg);
    } catch (err) {
      // Only reachable when the channel is gone; the broker requeues what was not acked.
      console.error(`responder ${this.queue}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async process(msg: ConsumeMessage): Promise<void> {
    const mutant = this.options.mutant;
    const props = msg.properties;
    const messageId = nonEmpty(props.messageId as string | undefined) ?? null;
    const address = chooseReplyAddress(props.headers, props.replyTo as string | undefined, mutant === 'native-first');
    if (!address) {
      this.unanswerableCount++;
      if (mutant === 'dead-letter-unanswerable') {
        await this.deadLetter(msg, 'Unanswerable: the request names no reply address');
      } else {
        this.channel.ack(msg);
      }
      this.options.observer?.unanswerable?.({ messageId });
      return;
    }

    const context: RequestContext = {
      queue: this.queue,
      messageId,
      correlationId: nonEmpty(props.correlationId as string | undefined) ?? null,
      replyTo: address.address,
      replyToSource: address.source,
      headers: handlerHeaders(props.headers, mutant === 'no-strip'),
      attempt: attemptNumber(props.headers),
    };
    // The strict-header-types mutant breaks WF-1: a header of a type it does not expect fails
    // the request as a throwing handler would, and the handler never runs.
    const malformed = mutant === 'strict-header-types' ? firstMalformedHeader(props.headers) : undefined;
    if (malformed !== undefined) {
      await this.replyWithFailure(msg, context, `MalformedHeader: ${malformed}`);
      return;
    }
    this.options.observer?.handled?.(context);

    let result: TRes;
    try {
      result = await this.handler(decodeJson(msg.content) as TReq, context);
    } catch (err) {
      await this.replyWithFailure(msg, context, failureText(err));
      return;
    }

    let counted = mutant !== 'answered-after-publish';
    if (mutant === 'counters-after-subscribe' && !this.lazyCountersMade) {
      // counters-after-subscribe mutant (RR-16): a counter made lazily, once the first
      // delivery has been handled, never counts that delivery.
      this.lazyCountersMade = true;
      counted = false;
    }
    if (counted) this.answeredCount++;
    try {
      await this.sendReply(context, encodeJson(result), {});
    } catch (err) {
      if (counted && mutant !== 'no-rollback') this.answeredCount--;
      await this.retryOrDeadLetter(msg, context, err);
      return;
    }
    this.channel.ack(msg);
    this.options.observer?.replied?.({ messageId, failure: null });
    if (mutant === 'answered-after-publish') setTimeout(() => this.answeredCount++, MUTANT_WINDOW_MS);
  }

  /** RR-10 then RR-11: the failure goes back to the caller, the request to `{queue}.dlq`. */
  private async replyWithFailure(msg: ConsumeMessage, context: RequestContext, failure: string): Promise<void> {
    const mutant = this.options.mutant;
    const counted = mutant === 'counts-failures';
    if (counted) this.answeredCount++;
    try {
      await this.sendReply(context, Buffer.alloc(0), { [ERROR_HEADER]: failure });
    } catch (err) {
      if (counted) this.answeredCount--;
      await this.retryOrDeadLetter(msg, context, err);
      return;
    }
    this.options.observer?.replied?.({ messageId: context.messageId, failure });
    if (mutant === 'no-dlq-on-failure') this.channel.ack(msg);
    else await this.deadLetter(msg, failure);
  }

  /** RR-4: default exchange, both correlation keys, JSON content type. */
  private async sendReply(context: RequestContext, body: Buffer, headers: Headers): Promise<void> {
    const mutant = this.options.mutant;
    const replyHeaders: Headers = { ...headers };
    // The no-response-message-id mutant breaks SG-3: a bus gatherer cannot demultiplex the reply.
    if (context.messageId !== null && mutant !== 'no-response-message-id') {
      replyHeaders[RESPONSE_MESSAGE_ID_HEADER] = context.messageId;
    }
    // The correlation-from-correlation-id mutant breaks RR-4: the requester waits on its message_id.
    const correlationId = mutant === 'correlation-from-correlation-id' ? context.correlationId : context.messageId;
    try {
      await this.publisher.publish('', context.replyTo, body, {
        correlationId: correlationId ?? undefined,
        contentType: JSON_CONTENT_TYPE,
        headers: replyHeaders,
      });
    } catch (err) {
      throw new ReplyNotDelivered(err instanceof Error ? err.message : String(err));
    }
  }

  /** RR-14: back to the queue for another attempt, or to `{queue}.dlq` after the last one. */
  private async retryOrDeadLetter(msg: ConsumeMessage, context: RequestContext, err: unknown): Promise<void> {
    const error = err instanceof Error ? err.message : String(err);
    this.options.observer?.replyFailed?.({ messageId: context.messageId, attempt: context.attempt, error });
    if (this.options.mutant === 'acks-undeliverable') {
      // The acks-undeliverable mutant breaks RR-14: the request is acknowledged into nowhere.
      this.channel.ack(msg);
    } else if (context.attempt >= this.maxAttempts) {
      await this.deadLetter(msg, `UndeliverableReply: ${error}`);
    } else {
      // amqplib requeues by default; said explicitly because the retry depends on it.
      this.channel.nack(msg, false, true);
    }
  }

  /**
   * Publishes the request as it arrived (body, ids, headers) to `{queue}.dlq` with the
   * reason, then acknowledges it. If the dead-letter cannot be published the request is
   * requeued rather than acknowledged into nowhere.
   */
  private async deadLetter(msg: ConsumeMessage, reason: string): Promise<void> {
    const props = msg.properties;
    const headers: Headers = { ...(props.headers ?? {}) };
    // The broker's own redelivery count belongs to the request queue, not the dead-letter.
    delete headers[DELIVERY_COUNT_HEADER];
    headers[DEAD_LETTER_REASON_HEADER] = reason;
    try {
      await this.publisher.publish('', deadLetterQueue(this.queue), msg.content, {
        messageId: nonEmpty(props.messageId as string | undefined),
        correlationId: nonEmpty(props.correlationId as string | undefined),
        replyTo: nonEmpty(props.replyTo as string | undefined),
        type: nonEmpty(props.type as string | undefined),
        contentType: (props.contentType as string | undefined) ?? JSON_CONTENT_TYPE,
        headers,
        persistent: true,
      });
    } catch (err) {
      console.error(`responder ${this.queue}: dead-letter failed, requeueing: ${String(err)}`);
      this.channel.nack(msg, false, true);
      return;
    }
    this.channel.ack(msg);
    this.options.observer?.deadLettered?.({ messageId: nonEmpty(props.messageId as string | undefined) ?? null, reason });
  }
}

export function deadLetterQueue(queue: string): string {
  return `${queue}.dlq`;
}
