// One pending scatter-gather: collects replies for one requestMessageId and settles by the
// rules SG-5..SG-7. No AMQP here, so it is unit tested with plain timers.

import { RequestTimeoutError } from './errors';

export interface PendingGatherOptions<TRes> {
  /** Resolve as soon as this many replies arrived (SG-5); reject on a shortfall (SG-6). */
  expectedReplyCount?: number | undefined;
  timeoutMs: number;
  /** Called once per reply, in arrival order (publishRequest's onReply). */
  onReply?: ((reply: TRes) => void) | undefined;
  /** SG-6: a shortfall rejects (the default) or resolves with the partial replies. */
  shortfall?: 'reject' | 'resolve' | undefined;
  /** SG-5: resolve once the count is reached (the default), or only at the timeout. */
  resolvesEarly?: boolean | undefined;
  /** Called once if the gather ends at its timeout (a shortfall or a budget). */
  onTimeout?: (() => void) | undefined;
  /** SG-9.1: the timeout runs from the start (the default), or restarts at every reply kept. */
  deadline?: 'fixed' | 'restart_per_reply' | undefined;
}

export class PendingGather<TRes> {
  readonly replies: TRes[] = [];
  readonly result: Promise<TRes[]>;
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  private resolveResult!: (replies: TRes[]) => void;
  private rejectResult!: (error: Error) => void;
  private readonly settledListeners: Array<() => void> = [];

  constructor(
    readonly requestMessageId: string,
    private readonly options: PendingGatherOptions<TRes>,
  ) {
    const count = options.expectedReplyCount;
    if (count !== undefined && (!Number.isInteger(count) || count < 1)) {
      throw new RangeError(`expectedReplyCount must be a positive integer, got ${count}`);
    }
    this.result = new Promise<TRes[]>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    this.arm();
  }

  private arm(): void {
    this.timer = setTimeout(() => this.onTimeout(), this.options.timeoutMs);
  }

  get isSettled(): boolean {
    return this.settled;
  }

  /** Runs once when the gather resolves or rejects, so its owner can forget it (SG-8). */
  onSettled(listener: () => void): void {
    if (this.settled) listener();
    else this.settledListeners.push(listener);
  }

  /**
   * Adds a reply; false when the gather has already ended (the reply is Unmatched). The
   * check and the push happen in one synchronous step, and reaching the count settles (and
   * unregisters) the gather in that same step, so no reply can slip into a finished gather.
   */
  add(reply: TRes): boolean {
    if (this.settled) return false;
    this.replies.push(reply);
    try {
      this.options.onReply?.(reply);
    } catch (error) {
      // A throwing callback is the caller's bug; it must not lose the reply or the gather.
      console.error(`onReply for gather ${this.requestMessageId} threw:`, error);
    }
    const count = this.options.expectedReplyCount;
    // Without early resolution (a breach of SG-5) the count is only looked at when time is up.
    if (count !== undefined && this.replies.length >= count && this.options.resolvesEarly !== false) {
      this.settle(() => this.resolveResult([...this.replies]));
    } else if (this.options.deadline === 'restart_per_reply' && !this.settled) {
      // A breach of SG-9.1: every reply buys the gather a whole timeout more.
      clearTimeout(this.timer);
      this.arm();
    }
    return true;
  }

  /** Ends the gather with an error (a returned publish, a closed requester). */
  fail(error: Error): void {
    this.settle(() => this.rejectResult(error));
  }

  private onTimeout(): void {
    if (this.settled) return;
    this.options.onTimeout?.();
    const count = this.options.expectedReplyCount;
    const replies = [...this.replies];
    const reached = count !== undefined && replies.length >= count; // only without early resolution
    if (count === undefined || reached || this.options.shortfall === 'resolve') {
      this.settle(() => this.resolveResult(replies));
    } else {
      this.settle(() => this.rejectResult(new RequestTimeoutError<TRes>(this.requestMessageId, count, replies)));
    }
  }

  private settle(finish: () => void): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    finish();
    for (const listener of this.settledListeners.splice(0)) listener();
  }
}
