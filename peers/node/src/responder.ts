// The responder: consumes a quorum request queue, runs a handler, and replies to the
// address the request named (RR-3..RR-5, RR-10..RR-17).

import type { ChannelModel, ConfirmChannel, ConsumeMessage, SocketOptions } from 'amqplib';
import { type Connected, type ConnectionSettings, connectFrom, reconnect, urlList } from './connection';
import { DEFAULT_RESPONDER_POLICY, type ResponderPolicy } from './policy';
import { ConfirmPublisher } from './publisher';
import {
  DEAD_LETTER_REASON_HEADER,
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
  isDirectReplyTo,
  nonEmpty,
  requestId,
  retryDecision,
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
  /**
   * The broker or the network closed the responder's connection or channel (not stop()),
   * each time it happens: the responder connects again.
   */
  connectionLost?(reason: string): void;
  /** The responder is connected again after a loss, has declared its queues and consumes. */
  recovered?(): void;
}

export interface ResponderOptions {
  /** Bind the request queue to this exchange (declared by someone else) before consuming. */
  bind?: { exchange: string; routingKey: string } | undefined;
  /** Attempts at delivering a reply before the request is dead-lettered (RR-14); 3 when not given. */
  maxAttempts?: number | undefined;
  /** Unacknowledged requests in flight at once. */
  prefetch?: number | undefined;
  /** The connection's client-provided name (shown in the management UI), on every connection. */
  connectionName?: string | undefined;
  observer?: ResponderObserver | undefined;
  /**
   * amqplib's socket options for the connection (passed to `amqp.connect`): for an
   * `amqps://` URL, the TLS settings, e.g. `{ ca: [readFileSync('our-ca.pem')] }` to trust a
   * CA of your own (Node checks the chain and the broker's name against the URL's host).
   */
  socketOptions?: SocketOptions | undefined;
}

/** The spec's own header namespace (acemq-reply-to, acemq-error...): not the engine's to hide. */
const SPEC_HEADER_PREFIX = 'acemq-';

/** How long stop() waits for answered requests to be settled before it closes anyway. */
const STOP_SETTLE_BOUND_MS = 5_000;

/** How long stop() waits for the broker to close the channel (its acks taken) before it closes the connection anyway. */
const STOP_CLOSE_BOUND_MS = 5_000;

/** `work`, or a rejection once `boundMs` elapsed. */
function withinMs<T>(work: Promise<T>, boundMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${boundMs} ms`)), boundMs);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/** The reply publish failed: the request goes to the retry policy (RR-14). */
class ReplyNotDelivered extends Error {}

type Starter = <TReq, TRes>(
  url: string | readonly string[],
  queue: string,
  handler: Handler<TReq, TRes>,
  options: ResponderOptions,
  policy: ResponderPolicy,
) => Promise<Responder<TReq, TRes>>;
let startWithPolicy: Starter;

/**
 * Starts a responder with a policy other than the spec's. Not exported from the package
 * entry (index.ts): only the conformance adapter, which is part of this package, calls it.
 */
export function startResponder<TReq, TRes>(
  url: string | readonly string[],
  queue: string,
  handler: Handler<TReq, TRes>,
  options: ResponderOptions,
  policy: ResponderPolicy,
): Promise<Responder<TReq, TRes>> {
  return startWithPolicy(url, queue, handler, options, policy);
}

export class Responder<TReq = unknown, TRes = unknown> {
  // Both exist, at zero, before the consumer is registered (RR-16)...
  private answeredCount = 0;
  private unanswerableCount = 0;
  // ...unless the policy makes them lazily, on the first delivery, which then goes uncounted.
  private countersMade: boolean;
  private stopped = false;
  /** Requests past their handler whose settling is not done yet: stop() waits for them. */
  private readonly unsettled = new Set<Promise<void>>();
  private readonly maxAttempts: number;
  /** The connection the responder consumes on; undefined while it is lost. */
  private session: RequestSession | undefined;
  /** Each request's connection: its reply, ack and dead-letter go on its channel only. */
  private readonly sessionOf = new WeakMap<ConsumeMessage, RequestSession>();
  /** Requests acknowledged as they were delivered (a breach of RR-20.4): nothing left to settle. */
  private readonly ackedOnDelivery = new WeakSet<ConsumeMessage>();
  /** Set while a lost connection is being replaced; aborted by stop(). */
  private recovering: AbortController | undefined;

  private constructor(
    private readonly settings: ConnectionSettings,
    readonly queue: string,
    private readonly handler: Handler<TReq, TRes>,
    private readonly options: ResponderOptions,
    private readonly policy: ResponderPolicy,
  ) {
    this.countersMade = policy.countersCreated === 'before_subscribe';
    this.maxAttempts = options.maxAttempts ?? policy.defaultMaxAttempts;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${options.maxAttempts}`);
    }
  }

  /**
   * Connects to the first reachable broker node of `url` (one URL or a list, the preferred
   * first) under `options.connectionName`, declares `queue` and `{queue}.dlq` as durable
   * quorum queues (RR-17), binds the queue when asked, and returns once the consumer is
   * registered. When the connection is lost it connects again (the first attempt within a
   * second, then backing off up to 5 s apart, through the nodes from the one after the lost
   * node) under the same name, declares the queues again and consumes again; the requests it
   * held and had not settled come back from the broker as their next attempt (RR-20).
   */
  static start<TReq, TRes>(
    url: string | readonly string[],
    queue: string,
    handler: Handler<TReq, TRes>,
    options: ResponderOptions = {},
  ): Promise<Responder<TReq, TRes>> {
    return Responder.connect(url, queue, handler, options, DEFAULT_RESPONDER_POLICY);
  }

  static {
    // The only way to a policy other than the spec's: see startResponder above.
    startWithPolicy = (url, queue, handler, options, policy) => Responder.connect(url, queue, handler, options, policy);
  }

  private static async connect<TReq, TRes>(
    url: string | readonly string[],
    queue: string,
    handler: Handler<TReq, TRes>,
    options: ResponderOptions,
    policy: ResponderPolicy,
  ): Promise<Responder<TReq, TRes>> {
    const settings: ConnectionSettings = {
      urls: urlList(url),
      connectionName: options.connectionName,
      socketOptions: options.socketOptions,
    };
    const responder = new Responder(settings, queue, handler, options, policy);
    const connected = await connectFrom(settings, 0);
    try {
      responder.session = await responder.openSession(connected);
      return responder;
    } catch (err) {
      await connected.connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** Declares the queues on a new connection and consumes the request queue; the loss is watched first. */
  private async openSession({ connection, node }: Connected): Promise<RequestSession> {
    const { queue, options, policy } = this;
    const connectionWatch = this.watch(connection, 'connection');
    const channel = await connection.createConfirmChannel();
    const channelWatch = this.watch(channel, 'channel');
    const queueType = (type: string) => ({ durable: true, arguments: { 'x-queue-type': type } });
    await declareRequestQueue(connection, channel, queue, policy.requestQueue);
    await channel.assertQueue(deadLetterQueue(queue), queueType(policy.dlqQueueType));
    if (options.bind) await channel.bindQueue(queue, options.bind.exchange, options.bind.routingKey);
    await channel.prefetch(options.prefetch ?? 10);
    const session: RequestSession = { connection, channel, node, publisher: new ConfirmPublisher(channel), lost: false };
    connectionWatch.session = channelWatch.session = session;
    await this.subscribe(session);
    const early = connectionWatch.cause ?? channelWatch.cause;
    if (early !== undefined) throw new Error(`connection lost while starting: ${early.message}`);
    return session;
  }

  /**
   * The loss of `session`'s connection or channel: its requests are settled no more (the
   * broker puts them back, to come again as their next attempt), the observer hears of it,
   * and the responder connects again (stays down, a breach of RR-20.2).
   */
  private lose(session: RequestSession, reason: string): void {
    if (session.lost) return;
    session.lost = true;
    if (this.session !== session) return;
    this.session = undefined;
    if (this.stopped) return;
    void session.connection.close().catch(() => undefined);
    this.options.observer?.connectionLost?.(reason);
    if (this.policy.recoverConnection) void this.recover(session.node);
  }

  private async recover(lostNode: number): Promise<void> {
    const recovering = new AbortController();
    this.recovering = recovering;
    const recovered = await reconnect(this.settings, lostNode, async (connected) => {
      const session = await this.openSession(connected);
      if (this.stopped) throw new Error('responder stopped'); // reconnect closes the connection
      this.session = session;
    }, recovering.signal);
    if (this.recovering === recovering) this.recovering = undefined;
    if (recovered && !this.stopped) this.options.observer?.recovered?.();
  }

  /** Requests answered: counted before the reply left, taken back if it was not delivered. */
  get answered(): number {
    return this.answeredCount;
  }

  /** Requests that named nowhere to reply. */
  get unanswerable(): number {
    return this.unanswerableCount;
  }

  /**
   * Cancels the consumer, waits (at most 5 s) until every request whose handler has returned
   * is settled, then closes the connection. Its reply may already be with the caller:
   * closing before its ack would put it back on the queue for the next responder to answer
   * a second time. Requests whose handler is still running are abandoned and go back.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.recovering?.abort();
    const session = this.session;
    if (session === undefined) {
      await this.settled(STOP_SETTLE_BOUND_MS);
      return;
    }
    if (session.consumerTag !== undefined) await session.channel.cancel(session.consumerTag).catch(() => undefined);
    if (!(await this.settled(STOP_SETTLE_BOUND_MS))) {
      console.error(`responder ${this.queue}: stopping with ${this.unsettled.size} answered requests not settled after ${STOP_SETTLE_BOUND_MS} ms`);
    }
    // The channel before the connection. amqplib buffers each channel's frames apart and
    // interleaves them on the socket, so the connection's Close (channel 0) can overtake an
    // ack still buffered on this channel: under load the broker then put an answered request
    // back on the queue, to be answered again by the next responder (RR-17). The channel's
    // Close follows its acks in one buffer, and its Close-Ok says the broker has them.
    await withinMs(session.channel.close(), STOP_CLOSE_BOUND_MS).catch(() => undefined);
    await session.connection.close().catch(() => undefined);
  }

  /** Tracks a request past its handler until its ack, requeue or dead-letter is done. */
  private settling(work: Promise<void>): Promise<void> {
    this.unsettled.add(work);
    const forget = () => this.unsettled.delete(work);
    work.then(forget, forget);
    return work;
  }

  /** True once nothing is being settled, false if that took longer than `boundMs`. */
  private async settled(boundMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), boundMs);
    });
    try {
      while (this.unsettled.size > 0) {
        const all = Promise.allSettled([...this.unsettled]).then(() => true as const);
        if (!(await Promise.race([all, expired]))) return false;
      }
      return true;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Watches what a session relies on: amqplib emits 'error' before a 'close' it did not ask
   * for; a stop() of ours, or a channel's close with its connection, has none. The returned
   * holder is given its session once it exists; a loss before that is kept in `cause`.
   */
  private watch(emitter: ChannelModel | ConfirmChannel, what: string): { session?: RequestSession; cause?: Error } {
    const holder: { session?: RequestSession; cause?: Error } = {};
    let failure: Error | undefined;
    emitter.on('error', (err: Error) => {
      failure = err;
      console.error(`responder ${this.queue} ${what} error: ${err.message}`);
    });
    emitter.on('close', (err?: Error) => {
      const cause = err ?? failure;
      if (cause === undefined) return;
      holder.cause = cause;
      if (holder.session) this.lose(holder.session, cause.message);
    });
    return holder;
  }

  private async subscribe(session: RequestSession): Promise<void> {
    const { consumerTag } = await session.channel.consume(this.queue, (msg) => {
      if (msg) {
        this.sessionOf.set(msg, session);
        void this.onRequest(msg);
      } else console.error(`responder ${this.queue}: consumer cancelled by the broker`);
    });
    session.consumerTag = consumerTag;
  }

  /** The request's connection was lost: whatever it was for, it is the broker's again. */
  private abandoned(msg: ConsumeMessage): boolean {
    const session = this.sessionOf.get(msg);
    return session === undefined || session.lost;
  }

  /** Acknowledges a request on its own channel; one already acknowledged or abandoned is left be. */
  private ack(msg: ConsumeMessage): void {
    if (this.ackedOnDelivery.has(msg) || this.abandoned(msg)) return;
    this.sessionOf.get(msg)!.channel.ack(msg);
  }

  /** Back to the queue for another attempt, said explicitly (amqplib requeues by default). */
  private requeue(msg: ConsumeMessage): void {
    if (this.ackedOnDelivery.has(msg) || this.abandoned(msg)) return;
    this.sessionOf.get(msg)!.channel.nack(msg, false, true);
  }

  /** The publisher on the request's own channel. */
  private publisherOf(msg: ConsumeMessage): ConfirmPublisher {
    const session = this.sessionOf.get(msg);
    if (session === undefined || session.lost) throw new ReplyNotDelivered('the connection was lost');
    return session.publisher;
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
    const policy = this.policy;
    // RR-20.4: acknowledged once settled, below (at once, a breach: a request held when the
    // connection is lost is gone with it).
    if (policy.ackTiming === 'on_delivery') {
      this.sessionOf.get(msg)!.channel.ack(msg);
      this.ackedOnDelivery.add(msg);
    }
    const props = msg.properties;
    const messageId = nonEmpty(props.messageId as string | undefined) ?? null;
    const address = chooseReplyAddress(
      props.headers,
      props.replyTo as string | undefined,
      policy.readOrder,
      policy.bytesAddress === 'accept',
    );
    if (!address) {
      // RR-12.1: counted (uncounted, a breach; the observer still hears of it).
      if (policy.countUnanswerable) this.unanswerableCount++;
      if (policy.unanswerable === 'dead_letter') {
        await this.settling(this.deadLetter(msg, 'Unanswerable: the request names no reply address'));
      } else {
        this.ack(msg);
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
      headers: this.shownHeaders(props.headers),
      attempt: attemptNumber(props.headers, policy.attemptBase),
    };
    // Strict header typing (a breach of WF-1): a header of a type it does not expect fails
    // the request as a throwing handler would, and the handler never runs.
    const malformed = policy.headerTypes === 'strict' ? firstMalformedHeader(props.headers) : undefined;
    if (malformed !== undefined) {
      await this.settling(this.handleFailure(msg, context, `MalformedHeader: ${malformed}`));
      return;
    }
    // RR-19.2: the handler takes a decoded request, so a body that is not JSON never reaches
    // it; the responder fails the request itself (dropped silently, a breach of RR-19.2).
    let request: TReq;
    try {
      request = decodeJson(msg.content) as TReq;
    } catch (err) {
      if (policy.malformedRequest === 'drop') this.ack(msg);
      // The failure reply without the dead-letter (reply_only) is a breach of RR-19.2 too.
      else await this.settling(this.handleFailure(msg, context, `MalformedRequest: ${err instanceof Error ? err.message : String(err)}`,
        false, policy.malformedRequest !== 'reply_only'));
      return;
    }
    this.options.observer?.handled?.(context);

    let result: TRes;
    try {
      result = await this.handler(request, context);
    } catch (err) {
      // Abandoned (stopped, or its connection lost): the request goes back with the channel.
      if (this.stopped || this.abandoned(msg)) return;
      await this.settling(this.handleFailure(msg, context, failureText(err, policy.errorTypeName === 'qualified'), true));
      return;
    }
    if (this.stopped || this.abandoned(msg)) return;
    await this.settling(this.answer(msg, context, result));
  }

  /**
   * RR-5.2: the handler sees every header but the engine's `x-acemq-*`; the spec's own
   * (acemq-reply-to and any acemq-*) stay (hidden with them, a breach).
   */
  private shownHeaders(headers: Headers | undefined): Headers {
    const shown = handlerHeaders(headers, this.policy.stripEngineHeaders, this.policy.stripPrefix);
    return this.policy.passSpecHeaders ? shown : handlerHeaders(shown, true, SPEC_HEADER_PREFIX);
  }

  /** The handler returned: RR-15's count, the reply, and the ack or the retry policy. */
  private async answer(msg: ConsumeMessage, context: RequestContext, result: TRes): Promise<void> {
    const policy = this.policy;
    const messageId = context.messageId;

    // RR-15: counted before the publish (once its confirm is in, a breach of RR-15.1: the
    // caller can hold the reply before it counts); with lazily made counters (a breach of
    // RR-16) the first delivery is never counted.
    const uncounted = !this.countersMade;
    this.countersMade = true;
    const counted = !uncounted && policy.answeredTiming === 'before_publish';
    if (counted) this.answeredCount++;
    try {
      await this.sendReply(msg, context, encodeJson(result), {});
    } catch (err) {
      // Counted after the confirm, a failed publish was never counted: nothing to take back.
      if (counted && policy.rollbackAnswered) this.answeredCount--;
      await this.retryOrDeadLetter(msg, context, err);
      return;
    }
    if (!uncounted && policy.answeredTiming === 'after_confirm') this.answeredCount++;
    this.ack(msg);
    this.options.observer?.replied?.({ messageId, failure: null });
  }

  /**
   * A failing request: RR-10 and RR-11, or the retry policy when it sends no failure reply.
   * `byHandler` is a handler's own failure, not one the responder found before running it.
   */
  private async handleFailure(msg: ConsumeMessage, context: RequestContext, failure: string, byHandler = false, deadLetter = true): Promise<void> {
    if (this.policy.handlerFailure === 'retry') {
      await this.retryOrDeadLetter(msg, context, failure, failure);
      return;
    }
    await this.replyWithFailure(msg, context, failure, byHandler, deadLetter);
  }

  /** RR-10 then RR-11: the failure goes back to the caller, the request to `{queue}.dlq`. */
  private async replyWithFailure(msg: ConsumeMessage, context: RequestContext, failure: string, byHandler: boolean, deadLetter = true): Promise<void> {
    const counted = this.policy.countFailuresAnswered;
    if (counted) this.answeredCount++;
    // RR-10.1: an empty body, the failure in the header only (also in the body, a breach).
    const body = this.policy.failureBody === 'json' ? encodeJson({ error: failure }) : Buffer.alloc(0);
    try {
      await this.sendReply(msg, context, body, { [ERROR_HEADER]: failure });
    } catch (err) {
      if (counted) this.answeredCount--;
      // RR-14.1: a failure reply is a reply, so one that was not delivered is retried and
      // RR-11's dead-letter (the caller has its answer) does not apply. Taken as sent (a
      // breach of RR-14.1), the request is dead-lettered with the failure, never retried.
      if (this.policy.failureReplyDelivery === 'checked') {
        await this.retryOrDeadLetter(msg, context, err);
      } else if (this.policy.deadLetterFailures) {
        await this.deadLetter(msg, failure);
      } else {
        this.ack(msg);
      }
      return;
    }
    this.options.observer?.replied?.({ messageId: context.messageId, failure });
    // RR-11.2: answered, so not retried (requeued until the last attempt, a breach).
    if (byHandler && this.policy.retryFailures && retryDecision(context.attempt, this.maxAttempts) === 'requeue') {
      this.requeue(msg);
    } else if (this.policy.deadLetterFailures && deadLetter) await this.deadLetter(msg, failure);
    else this.ack(msg);
  }

  /** RR-4: default exchange, both correlation keys, JSON content type. */
  private async sendReply(msg: ConsumeMessage, context: RequestContext, body: Buffer, headers: Headers): Promise<void> {
    const replyHeaders: Headers = { ...headers };
    // RR-4.2, SG-3.1: the request's id is its message_id, or its correlation_id when it has
    // none (a tutorial caller's).
    const id = requestId(context.messageId, context.correlationId);
    // SG-3: without responseMessageId a bus gatherer cannot demultiplex the reply.
    if (id !== null && this.policy.responseMessageId) {
      replyHeaders[RESPONSE_MESSAGE_ID_HEADER] = id;
    }
    // RR-4: the requester waits on its request's id (its correlation_id, or its message_id
    // alone, a breach: a tutorial caller sends none).
    const from = this.policy.replyCorrelationFrom;
    const correlationId = from === 'correlation_id' ? context.correlationId : from === 'message_id' ? context.messageId : id;
    // RR-14.5: the broker cannot say whether a direct reply-to reply was delivered (3.10 to 4.1
    // return every one, 4.2 none): sent once without mandatory, never retried or dead-lettered.
    const atMostOnce = isDirectReplyTo(context.replyTo) && this.policy.directReplyTo === 'at_most_once';
    try {
      await this.publisherOf(msg).publish('', context.replyTo, body, {
        mandatory: !atMostOnce,
        correlationId: correlationId ?? undefined,
        // RR-4.3 (none at all, a breach).
        contentType: this.policy.replyContentType === 'none' ? undefined : this.policy.replyContentType,
        headers: replyHeaders,
      });
    } catch (err) {
      if (atMostOnce) return; // at most once: counted, acknowledged, whatever its confirm said
      throw new ReplyNotDelivered(err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * RR-14: back to the queue for another attempt, or to `{queue}.dlq` after the last one.
   * `reason` is the dead-letter reason when it is not an undeliverable reply.
   */
  private async retryOrDeadLetter(msg: ConsumeMessage, context: RequestContext, err: unknown, reason?: string): Promise<void> {
    // Its connection lost meanwhile: the broker gives it again, as its next attempt (RR-20.4).
    if (this.abandoned(msg)) return;
    const error = err instanceof Error ? err.message : String(err);
    if (reason === undefined) {
      this.options.observer?.replyFailed?.({ messageId: context.messageId, attempt: context.attempt, error });
    }
    if (this.policy.undeliverableReply === 'ack') {
      // Acknowledged into nowhere (a breach of RR-14): nothing retried, nothing dead-lettered.
      this.ack(msg);
    } else if (retryDecision(context.attempt, this.maxAttempts) === 'dead_letter') {
      // RR-14.2: the last attempt dead-letters (acked into nowhere, a breach).
      if (reason === undefined && this.policy.lastAttempt === 'ack') this.ack(msg);
      else await this.deadLetter(msg, reason ?? `UndeliverableReply: ${error}`);
    } else {
      // amqplib requeues by default; said explicitly because the retry depends on it.
      this.requeue(msg);
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
    const full = this.policy.deadLetterCopy === 'full';
    try {
      await this.publisherOf(msg).publish('', deadLetterQueue(this.queue), msg.content, {
        messageId: nonEmpty(props.messageId as string | undefined),
        // RR-11.4: the copy is the request, to be answered later (id_and_headers drops these, a breach).
        correlationId: full ? nonEmpty(props.correlationId as string | undefined) : undefined,
        replyTo: full ? nonEmpty(props.replyTo as string | undefined) : undefined,
        type: nonEmpty(props.type as string | undefined),
        contentType: (props.contentType as string | undefined) ?? JSON_CONTENT_TYPE,
        headers,
        persistent: true,
      });
    } catch (err) {
      console.error(`responder ${this.queue}: dead-letter failed, requeueing: ${String(err)}`);
      this.requeue(msg);
      return;
    }
    this.ack(msg);
    this.options.observer?.deadLettered?.({ messageId: nonEmpty(props.messageId as string | undefined) ?? null, reason });
  }
}

/**
 * RR-17.1: the request queue is a durable quorum queue. Declared passively first and classic
 * when missing (a breach), a queue that exists is used as it is and a new one is classic,
 * whose requests carry no x-delivery-count to count attempts by (RR-14).
 */
export async function declareRequestQueue(
  connection: Pick<ChannelModel, 'createChannel'>,
  channel: Pick<ConfirmChannel, 'assertQueue'>,
  queue: string,
  how: ResponderPolicy['requestQueue'],
): Promise<void> {
  if (how === 'quorum') await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  else if (!(await queueExists(connection, queue))) await channel.assertQueue(queue, { durable: true });
}

/**
 * A passive declare on a throwaway channel: a missing queue is a 404 that closes the channel
 * it was asked on, so it must not be the responder's.
 */
async function queueExists(connection: Pick<ChannelModel, 'createChannel'>, queue: string): Promise<boolean> {
  const probe = await connection.createChannel();
  probe.on('error', () => undefined); // the 404's channel close, answered by the rejection below
  try {
    await probe.checkQueue(queue);
  } catch (err) {
    if ((err as { code?: unknown }).code === 404) return false;
    throw err;
  }
  await probe.close().catch(() => undefined);
  return true;
}

/** One connection's channel, publishing on it and consuming the request queue. */
interface RequestSession {
  readonly connection: ChannelModel;
  readonly channel: ConfirmChannel;
  readonly publisher: ConfirmPublisher;
  /** The index of its node in the responder's URLs. */
  readonly node: number;
  consumerTag?: string | undefined;
  /** Set once the connection or channel is lost. */
  lost: boolean;
}

export function deadLetterQueue(queue: string): string {
  return `${queue}.dlq`;
}
