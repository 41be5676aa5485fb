// Errors a caller of the binding can tell apart with `instanceof`.

/** A request got no reply within its timeout (RR-9). The request may still be carried out. */
export class RequestTimedOutError extends Error {
  constructor(
    readonly requestId: string,
    readonly timeoutMs: number,
  ) {
    super(`no reply to request ${requestId} within ${timeoutMs} ms`);
    this.name = 'RequestTimedOutError';
  }
}

/** The responder's handler failed; `failure` is its `acemq-error` text (RR-10). */
export class ResponderFailedError extends Error {
  constructor(
    readonly requestId: string,
    readonly failure: string,
  ) {
    super(`responder failed: ${failure}`);
    this.name = 'ResponderFailedError';
  }
}

/** A reply without `acemq-error` whose body is not JSON (RR-19). */
export class ReplyDecodeError extends Error {
  constructor(
    readonly requestId: string,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'ReplyDecodeError';
  }
}

/**
 * A gather with `expectedReplyCount` ran out of time before the count (SG-6); the replies
 * that did arrive are attached, in arrival order.
 */
export class RequestTimeoutError<TRes = unknown> extends Error {
  constructor(
    readonly requestMessageId: string,
    readonly expectedReplyCount: number,
    readonly partialReplies: TRes[],
  ) {
    super(
      `gather ${requestMessageId}: ${partialReplies.length} of ${expectedReplyCount} replies before the timeout`,
    );
    this.name = 'RequestTimeoutError';
  }
}

/** The broker did not take a publish: it returned it (unroutable) or nacked it (RR-13). */
export class PublishFailedError extends Error {
  constructor(
    message: string,
    readonly returned: boolean,
  ) {
    super(message);
    this.name = 'PublishFailedError';
  }
}

/** A short-string property over 255 bytes, refused rather than truncated (RR-18). */
export class ShortStringTooLongError extends Error {
  constructor(
    readonly property: string,
    readonly bytes: number,
  ) {
    super(`${property} is ${bytes} bytes; an AMQP short string holds at most 255`);
    this.name = 'ShortStringTooLongError';
  }
}

/** The requester was closed while the call was pending. */
export class RequesterClosedError extends Error {
  constructor() {
    super('requester closed');
    this.name = 'RequesterClosedError';
  }
}

/**
 * The requester's connection was lost while the call was pending, or before its publish was
 * confirmed (RR-20.1): its reply queue went with the connection, so no reply can reach it.
 * The request may still be carried out. `reason` is amqplib's text for the loss.
 */
export class ConnectionLostError extends Error {
  constructor(readonly reason: string) {
    super(`connection lost: ${reason}`);
    this.name = 'ConnectionLostError';
  }
}
