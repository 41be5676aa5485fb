// Wire rules shared by the requester, the responder and the gathers: header names, how
// header values are read, and the checks every publish goes through. Pure functions only,
// so they are unit tested without a broker.

import { ShortStringTooLongError } from './errors';

/** The reply address header (RR-1); deliberately outside the stripped `x-acemq-` namespace. */
export const REPLY_TO_HEADER = 'acemq-reply-to';
/** The failure header of a failure reply (RR-10). */
export const ERROR_HEADER = 'acemq-error';
/** Why a request was published to `{queue}.dlq` (RR-11, RR-14). */
export const DEAD_LETTER_REASON_HEADER = 'acemq-dead-letter-reason';
/** The bus's reply header that carries the request's message_id back (SG-3, SG-4). */
export const RESPONSE_MESSAGE_ID_HEADER = 'responseMessageId';
/** RabbitMQ's direct reply-to: the broker gives a responder reply_to amq.rabbitmq.reply-to.<token>. */
export const DIRECT_REPLY_TO_PREFIX = 'amq.rabbitmq.reply-to.';

/** Whether an address is one of RabbitMQ's direct reply-to (RR-14.5: a reply to it is at most once). */
export function isDirectReplyTo(address: string): boolean {
  return address.startsWith(DIRECT_REPLY_TO_PREFIX);
}

/** A request's id (RR-4.2, SG-3.1): its message_id, or its correlation_id when it has none. */
export function requestId(messageId: string | null, correlationId: string | null): string | null {
  return messageId ? messageId : correlationId;
}
/** The engine's private header namespace, stripped before a handler sees a request (RR-5). */
export const STRIPPED_PREFIX = 'x-acemq-';
/** The quorum queue's redelivery counter (RR-14). */
export const DELIVERY_COUNT_HEADER = 'x-delivery-count';

export const JSON_CONTENT_TYPE = 'application/json';
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_ATTEMPTS = 3;
export const SHORT_STRING_MAX_BYTES = 255;

export type Headers = Record<string, unknown>;

/**
 * Reads a string header the way RR-2 asks: a long string or a byte array (UTF-8).
 * Anything else, and an empty value, is treated as absent.
 */
export function headerString(headers: Headers | undefined, name: string): string | undefined {
  const value = headers?.[name];
  let text: string | undefined;
  if (typeof value === 'string') text = value;
  else if (Buffer.isBuffer(value)) text = value.toString('utf8');
  else if (value instanceof Uint8Array) text = Buffer.from(value).toString('utf8');
  return text === undefined || text === '' ? undefined : text;
}

/** Empty and absent are the same (RR-3): amqp091-go cannot write an empty property. */
export function nonEmpty(value: string | undefined | null): string | undefined {
  return value === undefined || value === null || value === '' ? undefined : value;
}

export type ReplyToSource = 'header' | 'native';

export interface ReplyAddress {
  address: string;
  source: ReplyToSource;
}

/** RR-3's order: the header first, then the native property. */
export const HEADER_THEN_NATIVE: readonly ReplyToSource[] = ['header', 'native'];

/**
 * Where a responder sends its reply (RR-3): the first non-empty address in `readOrder`;
 * undefined when the request is unanswerable (RR-12).
 */
export function chooseReplyAddress(
  headers: Headers | undefined,
  nativeReplyTo: string | undefined,
  readOrder: readonly ReplyToSource[] = HEADER_THEN_NATIVE,
  acceptBytes = true,
): ReplyAddress | undefined {
  // RR-2.2: a byte-array header is an address like a string one (taken as absent, a breach).
  const header = acceptBytes || typeof headers?.[REPLY_TO_HEADER] === 'string' ? headerString(headers, REPLY_TO_HEADER) : undefined;
  for (const source of readOrder) {
    const address = source === 'header' ? header : nonEmpty(nativeReplyTo);
    if (address !== undefined) return { address, source };
  }
  return undefined;
}

/**
 * The headers a handler is shown (RR-5): `x-acemq-*` removed when `strip` is on (`prefix`
 * is the namespace removed; a wider one is a breach of RR-5.2).
 */
export function handlerHeaders(headers: Headers | undefined, strip = true, prefix = STRIPPED_PREFIX): Headers {
  const shown: Headers = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!strip || !name.startsWith(prefix)) shown[name] = value;
  }
  return shown;
}

/**
 * RR-14's attempt number: the quorum queue's `x-delivery-count` plus one, 1 when absent
 * (`base` is that one; RR-14.3). amqplib decodes every AMQP integer type as a number (a
 * BigInt is accepted too); anything else, a string included, is not a count.
 */
export function attemptNumber(headers: Headers | undefined, base = 1): number {
  const raw = headers?.[DELIVERY_COUNT_HEADER];
  const count = typeof raw === 'bigint' ? Number(raw) : raw;
  return typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count + base : base;
}

export type RetryDecision = 'requeue' | 'dead_letter';

/** RR-14: after a failed reply on `attempt`, try again until the last attempt. */
export function retryDecision(attempt: number, maxAttempts: number = DEFAULT_MAX_ATTEMPTS): RetryDecision {
  return attempt < maxAttempts ? 'requeue' : 'dead_letter';
}

/**
 * A type name without its namespace, package, module, nesting or pointer mark (RR-10):
 * what follows the last `.`, `::`, `/` or `$`, leading `*` and `&` dropped.
 */
export function unqualifiedTypeName(typeName: string): string {
  const last = typeName.split(/::|[./$]/).pop() ?? typeName;
  return last.replace(/^[*&]+/, '');
}

/** `{TypeName}: {message}` (RR-10) from a type name as a language reports it. */
export function failureTextOf(typeName: string, message: string): string {
  return `${unqualifiedTypeName(typeName)}: ${message}`;
}

/**
 * The module JavaScript has no name for: what a qualified type name is prefixed with
 * (RR-10.2 asks for the unqualified one).
 */
export const QUALIFYING_MODULE = 'acemq';

/**
 * The failure text of a thrown value (RR-10): an Error is named by its class, a thrown
 * non-Error by its JavaScript type; `qualified` prefixes the module (a breach of RR-10.2).
 */
export function failureText(error: unknown, qualified = false): string {
  const text =
    error instanceof Error
      ? failureTextOf(error.constructor?.name || error.name || 'Error', error.message)
      : failureTextOf(error === null ? 'null' : typeof error, String(error));
  return qualified ? `${QUALIFYING_MODULE}.${text}` : text;
}

export interface ShortStringProperties {
  messageId?: string | undefined;
  correlationId?: string | undefined;
  replyTo?: string | undefined;
  type?: string | undefined;
}

/**
 * Refuses a short-string property longer than 255 bytes of UTF-8 (RR-18): a client that
 * truncates sends an id that correlates with nothing.
 */
export function checkShortStrings(properties: ShortStringProperties): void {
  for (const [name, value] of Object.entries(properties)) {
    if (typeof value !== 'string') continue;
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > SHORT_STRING_MAX_BYTES) throw new ShortStringTooLongError(name, bytes);
  }
}

/**
 * What a policy that truncates does instead of RR-18's refusal: every short string cut to
 * 255 bytes, on a UTF-8 character boundary. Absent properties stay absent.
 */
export function truncateShortStrings(properties: ShortStringProperties): ShortStringProperties {
  const cut: ShortStringProperties = {};
  for (const [name, value] of Object.entries(properties) as Array<[keyof ShortStringProperties, string | undefined]>) {
    if (typeof value === 'string') cut[name] = truncateUtf8(value, SHORT_STRING_MAX_BYTES);
  }
  return cut;
}

export function truncateUtf8(value: string, maxBytes: number): string {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length <= maxBytes) return value;
  let end = maxBytes;
  // Back off over continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/**
 * What strict header typing (a breach of WF-1) refuses: the first header whose value is a
 * boolean, a floating-point number, a table or an array. amqplib decodes a table as a plain object,
 * and a decimal or a timestamp as a tagged object (`{'!': 'decimal', value}`), which is not
 * a table; it decodes an integral double as an integer, which cannot be told apart.
 */
export function firstMalformedHeader(headers: Headers | undefined): string | undefined {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (typeof value === 'boolean' || Array.isArray(value)) return name;
    if (typeof value === 'number' && !Number.isInteger(value)) return name;
    if (isTable(value)) return name;
  }
  return undefined;
}

function isTable(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value) || value instanceof Uint8Array) return false;
  const tag = (value as Record<string, unknown>)['!'];
  return !(tag === 'decimal' || tag === 'timestamp');
}

/** The JSON body of a request or reply (RR-19). */
export function encodeJson(value: unknown): Buffer {
  const text = JSON.stringify(value);
  // JSON.stringify(undefined) is undefined; null is the JSON for "nothing".
  return Buffer.from(text === undefined ? 'null' : text, 'utf8');
}

export function decodeJson(body: Buffer): unknown {
  return JSON.parse(body.toString('utf8'));
}
