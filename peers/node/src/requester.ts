// The requester: acemq request/reply (RR-1..RR-19) and the bus's scatter-gather
// (sendRequestMulti / publishRequest, SG-1..SG-10) over one private reply queue.

import { randomUUID } from 'node:crypto';
import type { Channel, ChannelModel, ConsumeMessage, Options, SocketOptions } from 'amqplib';
import { type Connected, type ConnectionSettings, connectFrom, reconnect, urlList } from './connection';
import {
  ConnectionLostError,
  ReplyDecodeError,
  RequestTimedOutError,
  RequesterClosedError,
  ResponderFailedError,
} from './errors';
import { PendingGather } from './gather';
import { DEFAULT_REQUESTER_POLICY, type RequesterPolicy } from './policy';
import { ConfirmPublisher } from './publisher';
import { routeReply } from './routing';
import {
  ERROR_HEADER,
  JSON_CONTENT_TYPE,
  REPLY_TO_HEADER,
  RESPONSE_MESSAGE_ID_HEADER,
  type Headers,
  decodeJson,
  encodeJson,
  headerString,
  nonEmpty,
} from './wire';

/** A fresh id for a request or a gather (the bus's requestMessageId). */
export function newMessageId(): string {
  return randomUUID();
}

export interface UnmatchedReply {
  correlationId: string | null;
  responseMessageId: string | null;
}

/** Hooks for what happens inside a requester; every one is optional. */
export interface RequesterObserver {
  /** A reply was counted in Unmatched and dropped (RR-8, SG-8). */
  unmatched?(reply: UnmatchedReply): void;
  /**
   * The broker or the network closed the requester's connection or its reply channel (not
   * close()), each time it happens: the calls pending end with ConnectionLostError, and the
   * requester connects again. `reason` is amqplib's text.
   */
  connectionLost?(reason: string): void;
  /** The requester is connected again after a loss and consumes its new reply queue. */
  recovered?(): void;
}

export interface RequesterOptions {
  /** Per-call timeout of requests and gathers that give none (RR-9); 30 s when not given. */
  defaultTimeoutMs?: number;
  /** The connection's client-provided name (shown in the management UI), on every connection. */
  connectionName?: string | undefined;
  observer?: RequesterObserver | undefined;
  /**
   * amqplib's socket options for the connection (passed to `amqp.connect`): for an
   * `amqps://` URL, the TLS settings, e.g. `{ ca: [readFileSync('our-ca.pem')] }` to trust a
   * CA of your own (Node checks the chain and the broker's name against the URL's host).
   */
  socketOptions?: SocketOptions | undefined;
}

export interface RequestOptions {
  timeoutMs?: number | undefined;
  /** The request's type (SG-2.3), sent as the AMQP `type` property; none when not given. */
  type?: string | undefined;
  /** The request's message_id; a fresh one when not given. Doubles as an idempotency key. */
  messageId?: string | undefined;
}

export interface GatherCallOptions {
  /** Resolve once this many replies arrived; reject with RequestTimeoutError on a shortfall. */
  expectedReplyCount?: number | undefined;
  /** How long the gather waits (SG-5..SG-7); the requester's default (30 s) when not given. */
  timeoutMs?: number | undefined;
  /** The business correlationId of every copy; the requestMessageId when not given (SG-1). */
  correlationId?: string | undefined;
  /** The gather's requestMessageId; a fresh newMessageId() when not given. */
  requestMessageId?: string | undefined;
}

export interface SendRequestMultiOptions extends GatherCallOptions {
  /** The queue the copies are sent to, through the default exchange. */
  endpoint: string;
}

export interface PublishRequestOptions extends GatherCallOptions {
  /** The fanout exchange every responder's queue is bound to. */
  exchange: string;
}

type Opener = (url: string | readonly string[], options: RequesterOptions, policy: RequesterPolicy) => Promise<Requester>;
let openWithPolicy: Opener;

/**
 * Opens a requester with a policy other than the spec's. Not exported from the package
 * entry (index.ts): only the conformance adapter, which is part of this package, calls it.
 */
export function openRequester(url: string | readonly string[], options: RequesterOptions, policy: RequesterPolicy): Promise<Requester> {
  return openWithPolicy(url, options, policy);
}

/** How many gather ids a requester keeps to recognise their late replies (SG-8). */
const RECENT_GATHERS = 4096;

/**
 * The reply headers RR-5.3 names; any other is ignored. A strict reader (a breach) fails on
 * any other whose name does not start with `x-` (broker and client headers pass it).
 */
const KNOWN_REPLY_HEADERS: ReadonlySet<string> = new Set([ERROR_HEADER, RESPONSE_MESSAGE_ID_HEADER]);

/** The header a narrow-integer breach of WF-2.1 adds: a hop count nobody reads. */
const HOPS_HEADER = 'x-acemq-hops';

interface Waiter {
  /** The connection the call was sent on: its loss ends the call (RR-20.1). */
  session: ReplySession;
  settle(message: ConsumeMessage): void;
  fail(error: Error): void;
}

/** One connection's reply queue and publishing channel. */
interface ReplySession {
  readonly connection: ChannelModel;
  readonly channel: Channel;
  readonly replyQueue: string;
  /** The index of its node in the requester's URLs. */
  readonly node: number;
  publishing?: Promise<ConfirmPublisher> | undefined;
  /** Set, to the loss's reason, once the connection is lost. */
  lost?: string | undefined;
}

export class Requester {
  private timedOutCount = 0;
  private unmatchedCount = 0;
  private readonly waiters = new Map<string, Waiter>();
  private readonly gathers = new Map<string, PendingGather<unknown>>();
  /**
   * The requestMessageIds of recent gathers, pending or ended: a late reply that names one
   * is a gather's (SG-8), even when its correlation_id looks like a request's.
   */
  private readonly recentGathers = new Set<string>();
  private closed = false;
  /** The connection calls are sent on; undefined while it is lost. */
  private session: ReplySession | undefined;
  /** The gathers' connections, by requestMessageId, while they are pending. */
  private readonly gatherSessions = new Map<string, ReplySession>();
  /** The reason of the latest loss. */
  private lastLoss = 'connection closed';
  /** Set while a lost connection is being replaced; aborted by close(). */
  private recovering: AbortController | undefined;
  /** Calls waiting for the recovery, told when it is over (either way). */
  private readonly recoveryWaiters = new Set<() => void>();
  /** Of calls that give no timeout: the caller's default, else the spec's 30 s (RR-9). */
  private readonly defaultTimeoutMs: number;

  private constructor(
    private readonly settings: ConnectionSettings,
    private readonly options: RequesterOptions,
    private readonly policy: RequesterPolicy,
  ) {
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? policy.defaultTimeoutMs;
  }

  static {
    // The only way to a policy other than the spec's: see openRequester below.
    openWithPolicy = (url, options, policy) => Requester.connect(url, options, policy);
  }

  /**
   * Connects to the first reachable broker node of `url` (one URL or a list, the preferred
   * first) under `options.connectionName`, declares the reply queue and starts consuming it
   * before returning (RR-6, RR-7). When the connection is lost, the calls pending end with
   * ConnectionLostError and the requester connects again (the first attempt within a second,
   * then backing off up to 5 s apart, through the nodes from the one after the lost node)
   * under the same name, with a new reply queue that later calls name (RR-20); a call made
   * meanwhile waits for it, within its timeout.
   */
  static open(url: string | readonly string[], options: RequesterOptions = {}): Promise<Requester> {
    return Requester.connect(url, options, DEFAULT_REQUESTER_POLICY);
  }

  private static async connect(url: string | readonly string[], options: RequesterOptions, policy: RequesterPolicy): Promise<Requester> {
    const settings: ConnectionSettings = {
      urls: urlList(url),
      connectionName: options.connectionName,
      socketOptions: options.socketOptions,
    };
    const requester = new Requester(settings, options, policy);
    const connected = await connectFrom(settings, 0);
    try {
      requester.session = await requester.openSession(connected);
      return requester;
    } catch (err) {
      await connected.connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** The reply address calls name: after a recovery the new queue's, empty while it is lost. */
  get replyQueue(): string {
    return this.session?.replyQueue ?? '';
  }

  /** Declares a reply queue on a new connection and consumes it; the loss is watched first. */
  private async openSession({ connection, node }: Connected): Promise<ReplySession> {
    const connectionWatch = this.watch(connection, 'connection');
    const channel = await connection.createChannel();
    const channelWatch = this.watch(channel, 'reply channel');
    const session: ReplySession = { connection, channel, node, replyQueue: await declareReplyQueue(channel, this.policy) };
    await this.consume(channel, session.replyQueue);
    const early = connectionWatch.cause ?? channelWatch.cause;
    if (early !== undefined) throw new ConnectionLostError(early.message);
    connectionWatch.session = channelWatch.session = session;
    return session;
  }

  /**
   * The session a call is sent on: the current one, or while the requester is recovering the
   * next one, waited for within `waitMs`; past it, or when the requester stays down, the call
   * ends as lost (nothing was sent, so it is no timeout).
   */
  private async currentSession(waitMs: number): Promise<ReplySession> {
    for (;;) {
      if (this.closed) throw new RequesterClosedError();
      if (this.session) return this.session;
      if (!this.recovering) throw new ConnectionLostError(this.lastLoss);
      const over = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          this.recoveryWaiters.delete(wake);
          resolve(false);
        }, waitMs);
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        this.recoveryWaiters.add(wake);
      });
      if (!over) throw new ConnectionLostError(this.lastLoss);
    }
  }

  /**
   * The loss of `session`'s connection (or reply channel): the calls it carried end at once
   * (left to their timeout, a breach of RR-20.1), the observer hears of it, and the requester
   * connects again (stays down, a breach of RR-20.3).
   */
  private lose(session: ReplySession, reason: string): void {
    if (session.lost !== undefined) return;
    session.lost = reason;
    const current = this.session === session;
    if (current) {
      this.session = undefined;
      this.lastLoss = reason;
    }
    if (this.policy.onConnectionLost === 'end_lost') {
      for (const waiter of [...this.waiters.values()]) {
        if (waiter.session === session) waiter.fail(new ConnectionLostError(reason));
      }
      for (const [id, gather] of [...this.gathers.entries()]) {
        if (this.gatherSessions.get(id) === session) gather.fail(new ConnectionLostError(reason));
      }
    }
    if (!current || this.closed) return;
    // A reply channel lost alone: what is left of its connection goes too.
    void session.connection.close().catch(() => undefined);
    this.options.observer?.connectionLost?.(reason);
    if (this.policy.recoverConnection) void this.recover(session.node);
  }

  private async recover(lostNode: number): Promise<void> {
    const recovering = new AbortController();
    this.recovering = recovering;
    const recovered = await reconnect(this.settings, lostNode, async (connected) => {
      const session = await this.openSession(connected);
      if (this.closed) throw new RequesterClosedError(); // reconnect closes the connection
      this.session = session;
    }, recovering.signal);
    if (this.recovering === recovering) this.recovering = undefined;
    for (const wake of [...this.recoveryWaiters]) wake();
    this.recoveryWaiters.clear();
    if (recovered && !this.closed) this.options.observer?.recovered?.();
  }

  /** Requests that gave up before an answer arrived (RR-9). */
  get timedOut(): number {
    return this.timedOutCount;
  }

  /** Replies with nobody left waiting for them (RR-8, SG-8). */
  get unmatched(): number {
    return this.unmatchedCount;
  }

  /**
   * Sends one request and waits for its reply. Rejects with RequestTimedOutError,
   * ResponderFailedError, ReplyDecodeError, or PublishFailedError when the broker did not
   * route the request.
   */
  async request<TReq, TRes>(
    exchange: string,
    routingKey: string,
    message: TReq,
    options: RequestOptions = {},
  ): Promise<TRes> {
    this.ensureOpen();
    const requestId = options.messageId ?? newMessageId();
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    // Taken at once when up, so the call is registered in this same step (no reply can beat it).
    const session = this.session ?? (await this.currentSession(timeoutMs));
    const replyTo = await this.replyAddressForOneCall(session);

    // null: the call ended at its timeout as a null reply (a breach of RR-9.1).
    // RR-9.6: the timeout bounds the wait; armed half as long again, a breach that still
    // reports the call's own timeout.
    const deadlineMs = this.policy.requestDeadline === 'late' ? timeoutMs * 1.5 : timeoutMs;
    const reply = new Promise<ConsumeMessage | null>((resolve, reject) => {
      // Deleting the waiter is what ends the call: a reply routed after it is Unmatched (RR-8.2).
      const timer = setTimeout(() => {
        if (this.waiters.delete(requestId)) {
          if (this.policy.countTimeouts) this.timedOutCount++;
          if (this.policy.timeoutOutcome === 'null_reply') resolve(null);
          else reject(new RequestTimedOutError(requestId, timeoutMs));
        }
      }, deadlineMs);
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(requestId);
      };
      // Registered before the publish: a fast reply can overtake the publisher confirm.
      this.waiters.set(requestId, {
        session,
        settle: (msg) => {
          finish();
          resolve(msg);
        },
        fail: (err) => {
          finish();
          reject(err);
        },
      });
    });

    // close() can end the call while its publish is in flight, before anyone awaits `reply`.
    reply.catch(() => undefined);
    try {
      await (await this.publisher(session)).publish(exchange, routingKey, encodeJson(message), this.typed(options.type, {
        ...this.addressing(replyTo),
        messageId: requestId,
        // RR-8.4: correlation_id = message_id, so a responder that echoes it answers this call.
        correlationId: this.policy.requestCorrelationId === 'none' ? undefined : requestId,
        contentType: JSON_CONTENT_TYPE,
      }), this.policy.honourReturns);
    } catch (err) {
      // RR-20.1: a publish the connection's loss left unconfirmed is never taken as sent.
      const failure = session.lost !== undefined ? new ConnectionLostError(session.lost) : (err as Error);
      this.waiters.get(requestId)?.fail(failure);
      // A publish that failed because close() closed the connection: the call ended closed.
      const ended = await reply.then(() => undefined, (reason: unknown) => reason);
      throw ended instanceof RequesterClosedError || ended instanceof ConnectionLostError ? ended : failure;
    }
    const answer = await reply;
    return answer === null ? (null as TRes) : this.decodeReply<TRes>(requestId, answer);
  }

  /**
   * Scatter-gather to one endpoint queue served by competing consumers: publishes
   * `expectedReplyCount` copies (one when no count), all with the same message_id and
   * correlation_id, and gathers the replies (SG-2, SG-5..SG-7).
   */
  async sendRequestMulti<TReq, TRes>(
    type: string | undefined,
    message: TReq,
    options: SendRequestMultiOptions,
  ): Promise<TRes[]> {
    // One copy (a breach of SG-2) cannot reach several competing consumers; no count means
    // one copy (none at all, a breach of SG-2.1).
    const copies =
      this.policy.multiCopies === 'one' ? 1 : (options.expectedReplyCount ?? this.policy.multiCopiesWithoutCount);
    // The copies published taken as the count (a breach of SG-7.1): the gather resolves once
    // each was answered instead of spending its budget.
    const counted =
      options.expectedReplyCount === undefined && this.policy.gatherMissingCount === 'copies'
        ? { ...options, expectedReplyCount: Math.max(copies, 1) }
        : options;
    return this.gather<TReq, TRes>(type, message, undefined, counted, '', options.endpoint, copies);
  }

  /**
   * Broadcast-then-gather over a fanout exchange: one publish, one copy per bound queue.
   * `onReply` runs once per reply in arrival order; the promise settles like
   * sendRequestMulti's and resolves with the same replies.
   */
  async publishRequest<TReq, TRes>(
    type: string | undefined,
    message: TReq,
    onReply: (reply: TRes) => void,
    options: PublishRequestOptions,
  ): Promise<TRes[]> {
    // One publish; the fanout makes the copies (publishing it twice is a breach of SG-2.2).
    return this.gather<TReq, TRes>(type, message, onReply, options, options.exchange, '', this.policy.publishCopies);
  }

  /**
   * Ends every pending call at once with RequesterClosedError (RR-9.5: the reply queue goes
   * with the connection, so no reply can reach them any more) and closes the connection.
   * The calls are failed before the connection's close is awaited, so every caller has its
   * error by the time close() resolves.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.recovering?.abort();
    for (const wake of [...this.recoveryWaiters]) wake();
    // Left waiting (a breach of RR-9.5), each call ends at its own timeout instead.
    if (this.policy.pendingAtClose === 'end_closed') {
      for (const waiter of [...this.waiters.values()]) waiter.fail(new RequesterClosedError());
      for (const gather of [...this.gathers.values()]) gather.fail(new RequesterClosedError());
    }
    await this.session?.connection.close().catch(() => undefined);
  }

  private async gather<TReq, TRes>(
    type: string | undefined,
    message: TReq,
    onReply: ((reply: TRes) => void) | undefined,
    options: GatherCallOptions,
    exchange: string,
    routingKey: string,
    copies: number,
  ): Promise<TRes[]> {
    this.ensureOpen();
    const requestMessageId = options.requestMessageId ?? newMessageId();
    const policy = this.policy;
    const session = this.session ?? (await this.currentSession(options.timeoutMs ?? this.defaultTimeoutMs));
    // SG-1: the caller's correlationId, else the requestMessageId (left out, a breach of SG-1).
    const correlationId =
      options.correlationId ?? (policy.gatherDefaultCorrelation === 'request_message_id' ? requestMessageId : undefined);
    const pending = new PendingGather<TRes>(requestMessageId, {
      // SG-7: no count means the whole timeout is a budget, not a count of one.
      expectedReplyCount: options.expectedReplyCount ?? (policy.gatherMissingCount === 'one' ? 1 : undefined),
      timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs,
      onReply,
      shortfall: policy.gatherShortfall,
      resolvesEarly: policy.gatherResolvesEarly,
      // RR-9.4: a gather that ends at its timeout gave nothing up; counting it is a breach.
      onTimeout: policy.countGatherTimeouts ? () => this.timedOutCount++ : undefined,
      deadline: policy.gatherDeadline,
    });
    this.gathers.set(requestMessageId, pending as PendingGather<unknown>);
    this.gatherSessions.set(requestMessageId, session);
    this.remember(requestMessageId);
    // close() can end the gather while its publishes are in flight, before it is returned.
    pending.result.catch(() => undefined);
    pending.onSettled(() => {
      this.gathers.delete(requestMessageId);
      this.gatherSessions.delete(requestMessageId);
    });

    try {
      const properties = this.typed(type, {
        ...this.addressing(await this.replyAddressForOneCall(session)),
        correlationId,
        contentType: JSON_CONTENT_TYPE,
      });
      const body = encodeJson(message);
      const publisher = await this.publisher(session);
      for (let i = 0; i < copies; i++) {
        // Distinct ids (a breach of SG-1): only the first copy's replies find the gather.
        const messageId = policy.gatherCopyIds === 'distinct' && i > 0 ? newMessageId() : requestMessageId;
        // RR-13.3: a returned copy refuses the gather at once (ignored, a breach: it times out).
        await publisher.publish(exchange, routingKey, body, { ...properties, messageId }, policy.honourGatherReturns);
      }
    } catch (err) {
      // RR-20.1: copies the connection's loss left unconfirmed are never taken as sent.
      pending.fail(session.lost !== undefined ? new ConnectionLostError(session.lost) : (err as Error));
    }
    return pending.result;
  }

  /**
   * SG-2.3: the call's type as the AMQP `type` property (in a `type` header, a breach of
   * SG-2.3); no type given, none is sent.
   */
  private typed(type: string | undefined, properties: Options.Publish): Options.Publish {
    if (type === undefined) return properties;
    if (this.policy.typeCarrier === 'property') return { ...properties, type };
    return { ...properties, headers: { ...(properties.headers ?? {}), type } };
  }

  /** RR-1: the reply address in both places, as the policy says. */
  private addressing(replyTo: string): Pick<Options.Publish, 'replyTo' | 'headers'> {
    const { writeHeaderAddress, writeNativeAddress, headerAddressAsBytes, nativeAddress, narrowIntHeader } = this.policy;
    const headers: Headers = {};
    // A string, not a Buffer, by default: amqplib writes a Buffer as a byte array (RR-2).
    if (writeHeaderAddress) headers[REPLY_TO_HEADER] = headerAddressAsBytes ? Buffer.from(replyTo, 'utf8') : replyTo;
    // WF-2.1: header values in the portable types only (an unsigned 8-bit integer, a breach).
    if (narrowIntHeader) headers[HOPS_HEADER] = { '!': 'uint8', value: 1 };
    // RR-1.3: both places name the same queue (a stale name, a breach). amqplib sends an
    // empty string as a present, zero-length reply_to (RR-3.3: an empty one, a breach).
    const native = nativeAddress === 'stale' ? `${replyTo}.stale` : nativeAddress === 'empty' ? '' : replyTo;
    return writeNativeAddress ? { replyTo: native, headers } : { headers };
  }

  /** Remembers a gather's id, the oldest forgotten past a bound so the set cannot grow forever. */
  private remember(requestMessageId: string): void {
    this.recentGathers.add(requestMessageId);
    if (this.recentGathers.size > RECENT_GATHERS) {
      for (const oldest of this.recentGathers) {
        this.recentGathers.delete(oldest);
        break;
      }
    }
  }

  /**
   * A reply meant for a gather: its responseMessageId names a recent gather, or differs from
   * its correlation_id (a request's reply carries the request's message_id in both).
   */
  private isGatherReply(correlationId: string | undefined, responseMessageId: string | undefined): boolean {
    if (responseMessageId === undefined) return false;
    return this.recentGathers.has(responseMessageId) || responseMessageId !== correlationId;
  }

  private decodeReply<TRes>(requestId: string, msg: ConsumeMessage): TRes {
    if (this.policy.readErrorHeader) {
      const failure = headerString(msg.properties.headers, ERROR_HEADER);
      if (failure !== undefined) throw new ResponderFailedError(requestId, failure);
    }
    // RR-5.3: headers a requester does not know are ignored (failing the call, a breach).
    if (this.policy.unknownReplyHeaders === 'fail') {
      const unknown = Object.keys(msg.properties.headers ?? {}).find(
        (name) => !KNOWN_REPLY_HEADERS.has(name) && !name.startsWith('x-'),
      );
      if (unknown !== undefined) throw new ReplyDecodeError(requestId, `unexpected reply header ${unknown}`);
    }
    try {
      return decodeJson(msg.content) as TRes;
    } catch (err) {
      throw new ReplyDecodeError(requestId, err instanceof Error ? err.message : String(err));
    }
  }

  private async consume(channel: Channel, queue: string): Promise<void> {
    await channel.consume(queue, (msg) => {
      if (msg) this.onReply(msg);
    }, { noAck: true });
  }

  private onReply(msg: ConsumeMessage): void {
    const correlationId = nonEmpty(msg.properties.correlationId as string | undefined);
    const responseMessageId = headerString(msg.properties.headers, RESPONSE_MESSAGE_ID_HEADER);
    const route = routeReply({ correlationId, responseMessageId }, this.gathers, this.waiters, this.policy);
    if (route.kind === 'request' && !this.dropsUndecodable(msg)) {
      this.waiters.get(route.requestId)?.settle(msg);
      return;
    }
    const added = route.kind === 'gather' ? this.addToGather(route, msg) : 'dropped';
    if (added === 'added') return;
    // RR-8.2, SG-8.1, SG-10.2: counted, whichever kind of call it was for (uncounted, a
    // breach). A failure reply has its own knob, so breaching one rule leaves the other be.
    let counts: boolean;
    if (added === 'failure') counts = this.policy.countGatherFailures;
    else if (this.isGatherReply(correlationId, responseMessageId)) counts = this.policy.countGatherUnmatched;
    else counts = this.policy.countUnmatched;
    if (counts) this.unmatchedCount++;
    this.options.observer?.unmatched?.({
      correlationId: correlationId ?? null,
      responseMessageId: responseMessageId ?? null,
    });
  }

  /** Dropping (a breach of RR-19): a reply that is not JSON is taken for a stray. */
  private dropsUndecodable(msg: ConsumeMessage): boolean {
    if (this.policy.undecodableReply !== 'drop') return false;
    if (headerString(msg.properties.headers, ERROR_HEADER) !== undefined) return false;
    try {
      decodeJson(msg.content);
      return false;
    } catch {
      return true;
    }
  }

  /**
   * A reply for the gather it was routed to: `added`; `failure`, a failure reply the pending
   * gather it names keeps out (SG-10.1); `dropped`, the gather has ended (SG-8.1), or the
   * body is not JSON. Whether the gather is still open is decided inside the same
   * synchronous step that adds the reply (PendingGather.add), so a reply past the count or
   * the deadline is never added to the finished gather.
   */
  private addToGather(route: { requestMessageId: string; stray?: true }, msg: ConsumeMessage): 'added' | 'failure' | 'dropped' {
    const pending = this.gathers.get(route.requestMessageId);
    if (!pending || pending.isSettled) return 'dropped';
    if (headerString(msg.properties.headers, ERROR_HEADER) !== undefined) {
      // A stray failure reply (handed over by a breach of SG-8.2) is not this gather's: SG-8's.
      if (route.stray) return 'dropped';
      // A failure is not an answer (kept as a null reply, a breach of SG-10.1).
      if (this.policy.gatherFailureReply === 'drop') return 'failure';
      return pending.add(null) ? 'added' : 'dropped';
    }
    let reply: unknown;
    try {
      reply = decodeJson(msg.content);
    } catch {
      return 'dropped';
    }
    return pending.add(reply) ? 'added' : 'dropped';
  }

  /**
   * RR-6: the one reply queue. A queue per call (a breach of RR-6) is declared like the
   * requester's own and consumed until the requester closes.
   */
  private async replyAddressForOneCall(session: ReplySession): Promise<string> {
    if (!this.policy.replyQueuePerRequest) return session.replyQueue;
    const queue = await declareReplyQueue(session.channel, this.policy);
    await this.consume(session.channel, queue);
    return queue;
  }

  /**
   * The confirm channel requests are published on, opened again after the broker closed it
   * (a publish to a missing exchange is a channel error): the reply queue's consumer is on
   * another channel, so pending calls survive.
   */
  private publisher(session: ReplySession): Promise<ConfirmPublisher> {
    session.publishing ??= this.openPublisher(session);
    return session.publishing;
  }

  private async openPublisher(session: ReplySession): Promise<ConfirmPublisher> {
    try {
      const channel = await session.connection.createConfirmChannel();
      channel.on('error', (err: Error) => console.error(`requester publish channel error: ${err.message}`));
      channel.on('close', () => {
        session.publishing = undefined;
      });
      return new ConfirmPublisher(channel, this.policy);
    } catch (err) {
      session.publishing = undefined;
      throw err;
    }
  }

  /**
   * Watches what a session relies on: amqplib emits 'error' before a 'close' it did not ask
   * for; a close() of ours, or a channel's close with its connection, has none. The returned
   * holder is given its session once it exists; a loss before that is kept in `cause`, and
   * fails the session's opening.
   */
  private watch(emitter: ChannelModel | Channel, what: string): { session?: ReplySession; cause?: Error } {
    const holder: { session?: ReplySession; cause?: Error } = {};
    let failure: Error | undefined;
    emitter.on('error', (err: Error) => {
      failure = err;
      console.error(`requester ${what} error: ${err.message}`);
    });
    emitter.on('close', (err?: Error) => {
      const cause = err ?? failure;
      if (cause === undefined) return;
      holder.cause = cause;
      if (holder.session) this.lose(holder.session, cause.message);
    });
    return holder;
  }

  private ensureOpen(): void {
    if (this.closed) throw new RequesterClosedError();
  }
}

/**
 * RR-7: classic given explicitly, exclusive, auto-delete and non-durable (amqplib's
 * assertQueue is durable unless told otherwise).
 */
async function declareReplyQueue(channel: Channel, policy: RequesterPolicy): Promise<string> {
  const { queue } = await channel.assertQueue('', {
    durable: false,
    // Shared (a breach of RR-7.2), any connection could consume this requester's replies.
    exclusive: policy.exclusiveReplyQueue,
    autoDelete: true,
    // Left out (a breach of RR-7), the type is the server's default.
    arguments: policy.explicitReplyQueueType ? { 'x-queue-type': 'classic' } : {},
  });
  return queue;
}

