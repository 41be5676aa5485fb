// The connection a requester or responder owns: opened on the first reachable node of its
// list under its connection name, and opened again after a loss. amqplib 2.x's opt-in
// recovery reconnects to a single URL, so the binding runs its own loop over the nodes.

import { setTimeout as sleep } from 'node:timers/promises';
import * as amqp from 'amqplib';
import type { ChannelModel, SocketOptions } from 'amqplib';

/** The first reconnection attempt waits this long after the loss... */
export const FIRST_RETRY_DELAY_MS = 250;
/** ...and each next one twice as long, up to this. */
export const MAX_RETRY_DELAY_MS = 5_000;
/**
 * A dial that does not answer is given up after this. A node that is down refuses at once;
 * five seconds, tried first, gave up on handshakes a loaded broker was still completing (the
 * suite's stress run: `connect ETIMEDOUT` on opening a requester).
 */
const CONNECT_TIMEOUT_MS = 30_000;

/** Where and under which name a requester or responder connects. */
export interface ConnectionSettings {
  /** The broker's nodes, the preferred one first. */
  readonly urls: readonly string[];
  /** The connection_name client property (shown in the management UI), on every connection. */
  readonly connectionName?: string | undefined;
  readonly socketOptions?: SocketOptions | undefined;
}

/** The wait before reconnection attempt `attempt` (from 0). */
export function retryDelayMs(attempt: number): number {
  return Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(attempt, 16));
}

/** `url` or a list of them, as the openers take it. */
export function urlList(url: string | readonly string[]): readonly string[] {
  const urls = typeof url === 'string' ? [url] : [...url];
  if (urls.length === 0) throw new RangeError('no broker URL to connect to');
  return urls;
}

export interface Connected {
  connection: ChannelModel;
  /** The index of its node in `urls`. */
  node: number;
}

/** Connects to the first node that answers, trying them in turn from `urls[from]`. */
export async function connectFrom(settings: ConnectionSettings, from: number): Promise<Connected> {
  const { urls } = settings;
  const socketOptions: SocketOptions = {
    timeout: CONNECT_TIMEOUT_MS,
    ...settings.socketOptions,
    clientProperties: {
      ...settings.socketOptions?.clientProperties,
      ...(settings.connectionName !== undefined ? { connection_name: settings.connectionName } : {}),
    },
  };
  let failure: unknown;
  for (let i = 0; i < urls.length; i++) {
    const node = (from + i) % urls.length;
    try {
      return { connection: await amqp.connect(urls[node]!, socketOptions), node };
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}

/**
 * Connects again after node `lost` was lost, with retryDelayMs's backoff, until `open` takes
 * a new connection (true) or `signal` aborts (false). A connection `open` refused is closed
 * and the next attempt made.
 */
export async function reconnect(
  settings: ConnectionSettings,
  lost: number,
  open: (connected: Connected) => Promise<void>,
  signal: AbortSignal,
  log: (message: string) => void = (message) => console.error(message),
): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      await sleep(retryDelayMs(attempt), undefined, { signal });
    } catch {
      return false; // aborted: closed meanwhile
    }
    let connected: Connected | undefined;
    try {
      connected = await connectFrom(settings, lost + 1);
      await open(connected);
      return true;
    } catch (err) {
      if (connected) await connected.connection.close().catch(() => undefined);
      log(`reconnecting ${settings.connectionName ?? ''}, attempt ${attempt + 1}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
