// The wire spec's mutant catalogue: named, deliberate defects a requester or responder can
// be opened with, so the conformance suite can show it catches each one. Never use them in
// a service.

/** Requester and gatherer mutants: both act on a Requester, so both are given to its open(). */
export const REQUESTER_MUTANTS = [
  'native-only',
  'header-bytes',
  'queue-per-request',
  'late-reply-to-next',
  'ignores-error-header',
  'gather-by-correlation-id',
  'shortfall-resolves',
  'implicit-queue-type',
  'timeouts-not-counted',
  'ignores-returns',
  'truncates-short-strings',
  'drops-undecodable',
  'copies-distinct-ids',
  'multi-one-copy',
  'no-early-resolve',
  'no-count-means-one',
  'stray-reply-to-oldest-gather',
] as const;

export const RESPONDER_MUTANTS = [
  'native-first',
  'no-strip',
  'no-dlq-on-failure',
  'counts-failures',
  'dead-letter-unanswerable',
  'no-rollback',
  'answered-after-publish',
  'counters-after-subscribe',
  'correlation-from-correlation-id',
  'acks-undeliverable',
  'classic-dlq',
  'no-response-message-id',
  'strict-header-types',
] as const;

export type RequesterMutant = (typeof REQUESTER_MUTANTS)[number];
export type ResponderMutant = (typeof RESPONDER_MUTANTS)[number];

export const ALL_MUTANTS: readonly string[] = [...REQUESTER_MUTANTS, ...RESPONDER_MUTANTS];

export function isRequesterMutant(name: string): name is RequesterMutant {
  return (REQUESTER_MUTANTS as readonly string[]).includes(name);
}

export function isResponderMutant(name: string): name is ResponderMutant {
  return (RESPONDER_MUTANTS as readonly string[]).includes(name);
}

/** The only profile: the Node bus is not part of the acemq release history. */
export const PROFILES = ['current'] as const;
export type Profile = (typeof PROFILES)[number];
