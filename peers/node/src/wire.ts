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

/**
 * Where a responder sends its reply (RR-3): the header first, then the native property.
 * `nativeFirst` is the `native-first` mutant's reversed order.
 */
export function chooseReplyAddress(
  headers: Headers | undefined,
  nativeReplyTo: string | undefined,
  nativeFirst = false,
): ReplyAddress | undefined {
  const header = headerString(headers, REPLY_TO_HEADER);
  const native = nonEmpty(nativeReplyTo);
  const order: Array<[string | undefined, ReplyToSource]> = [
    [header, 'header'],
    [native, 'native'],
  ];
  if (nativeFirst) order.reverse();
  for (const [address, source] of order) {
    if (address !== undefined) return { address, source };
  }
  return undefined;
}

/** The headers a handler is shown (RR-5); `noStrip` is the `no-strip` mutant. */
export function handlerHeaders(headers: Headers | undefined, noStrip = false): Headers {
  const shown: Headers = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (noStrip || !name.startsWith(STRIPPED_PREFIX)) shown[name] = value;
  }
  return shown;
}

/**
 * RR-14's attempt number: the quorum queue's `x-delivery-count` plus one, 1 when absent.
 * The count may arrive as any integer type (amqplib gives numbers; a BigInt or a numeric
 * string is accepted too), so nothing but a non-negative integer is trusted.
 */
export function attemptNumber(headers: Headers | undefined): number {
  const raw = headers?.[DELIVERY_COUNT_HEADER];
  let count: number | undefined;
  if (typeof raw === 'number') count = raw;
  else if (typeof raw === 'bigint') count = Number(raw);
  else if (typeof raw === 'string' || Buffer.isBuffer(raw)) {
    const text = raw.toString().trim();
    if (/^\d+$/.test(text)) count = Number(text);
  }
  return count !== undefined && Number.isSafeInteger(count) && count >= 0 ? count + 1 : 1;
}

/**
 * `{TypeName}: {message}` (RR-10). The type is the error's class name, never namespaced;
 * a thrown non-Error is named after its JavaScript type.
 */
export function failureText(error: unknown): string {
  if (error instanceof Error) {
    const typeName = error.constructor?.name || error.name || 'Error';
    return `${typeName}: ${error.message}`;
  }
  const typeName = error === null ? 'null' : typeof error;
  return `${typeName}: ${String(error)}`;
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
 * The `truncates-short-strings` mutant (breaks RR-18): every short string cut to 255 bytes,
 * on a UTF-8 character boundary, instead of refused. Absent properties stay absent.
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
 * The `strict-header-types` mutant (breaks WF-1): the first header whose value is a boolean,
 * a floating-point number, a table or an array. amqplib decodes a table as a plain object,
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
