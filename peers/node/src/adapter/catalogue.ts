// The adapter's table from catalogue names to binding policies: every mutant of
// catalogue/catalogue.yaml with the side it acts on and the policy values it sets, and the
// profiles this peer offers. Written in the catalogue's own spelling so it can be read
// against the file line by line (src/test/catalogue.test.ts does exactly that), then
// turned into the binding's policy types. Only the adapter knows these names.

import {
  DEFAULT_REQUESTER_POLICY,
  DEFAULT_RESPONDER_POLICY,
  type RequesterPolicy,
  type ResponderPolicy,
  requesterPolicy,
  responderPolicy,
} from '../policy';

type Value = boolean | number | string | string[];
export type Knobs = Readonly<Record<string, Value>>;
export type Side = 'requester' | 'responder' | 'gatherer';

export const MUTANTS: Readonly<Record<string, { side: Side; policy: Knobs }>> = {
  'native-only': { side: 'requester', policy: { write_header_address: false } },
  'header-bytes': { side: 'requester', policy: { header_address_as_bytes: true } },
  'queue-per-request': { side: 'requester', policy: { reply_queue_per_request: true } },
  'late-reply-to-next': { side: 'requester', policy: { match_replies_by: 'oldest_waiter' } },
  'ignores-error-header': { side: 'requester', policy: { read_error_header: false } },
  'native-first': { side: 'responder', policy: { read_order: ['native', 'header'] } },
  'no-strip': { side: 'responder', policy: { strip_engine_headers: false } },
  'no-dlq-on-failure': { side: 'responder', policy: { dead_letter_failures: false } },
  'counts-failures': { side: 'responder', policy: { count_failures_answered: true } },
  'dead-letter-unanswerable': { side: 'responder', policy: { unanswerable: 'dead_letter' } },
  'no-rollback': { side: 'responder', policy: { rollback_answered: false } },
  'answered-after-publish': { side: 'responder', policy: { answered_timing: 'after_confirm' } },
  'counters-after-subscribe': { side: 'responder', policy: { counters_created: 'after_first_delivery' } },
  'gather-by-correlation-id': { side: 'gatherer', policy: { gather_demux_by: 'correlation_id' } },
  'shortfall-resolves': { side: 'gatherer', policy: { gather_shortfall: 'resolve' } },
  'implicit-queue-type': { side: 'requester', policy: { explicit_reply_queue_type: false } },
  'timeouts-not-counted': { side: 'requester', policy: { count_timeouts: false } },
  'ignores-returns': { side: 'requester', policy: { honour_returns: false } },
  'truncates-short-strings': { side: 'requester', policy: { long_short_string: 'truncate' } },
  'drops-undecodable': { side: 'requester', policy: { undecodable_reply: 'drop' } },
  'correlation-from-correlation-id': { side: 'responder', policy: { reply_correlation_from: 'correlation_id' } },
  'acks-undeliverable': { side: 'responder', policy: { undeliverable_reply: 'ack' } },
  'classic-dlq': { side: 'responder', policy: { dlq_queue_type: 'classic' } },
  'no-response-message-id': { side: 'responder', policy: { response_message_id: false } },
  'strict-header-types': { side: 'responder', policy: { header_types: 'strict' } },
  'copies-distinct-ids': { side: 'gatherer', policy: { gather_copy_ids: 'distinct' } },
  'multi-one-copy': { side: 'gatherer', policy: { multi_copies: 'one' } },
  'no-early-resolve': { side: 'gatherer', policy: { gather_resolves_early: false } },
  'no-count-means-one': { side: 'gatherer', policy: { gather_missing_count: 'one' } },
  'stray-reply-to-oldest-gather': { side: 'gatherer', policy: { gather_stray_reply: 'oldest_gather' } },
  'default-timeout-10s': { side: 'requester', policy: { default_timeout_ms: 10000 } },
  'default-attempts-5': { side: 'responder', policy: { default_max_attempts: 5 } },
  'attempt-from-zero': { side: 'responder', policy: { attempt_base: 0 } },
  'gather-no-default-correlation': { side: 'gatherer', policy: { gather_default_correlation: 'none' } },
  'gather-timeouts-counted': { side: 'gatherer', policy: { count_gather_timeouts: true } },
  'close-abandons-pending': { side: 'requester', policy: { pending_at_close: 'wait' } },
  'gather-ignores-returns': { side: 'gatherer', policy: { honour_gather_returns: false } },
  'type-in-header': { side: 'requester', policy: { type_carrier: 'header' } },
  'failure-reply-unchecked': { side: 'responder', policy: { failure_reply_delivery: 'unchecked' } },
  'malformed-request-dropped': { side: 'responder', policy: { malformed_request: 'drop' } },
  'header-only-address': { side: 'requester', policy: { write_native_address: false } },
  'mismatched-addresses': { side: 'requester', policy: { native_address: 'stale' } },
  'empty-native-address': { side: 'requester', policy: { native_address: 'empty' } },
  'narrow-int-header': { side: 'requester', policy: { narrow_int_header: true } },
  'unmatched-not-counted': { side: 'requester', policy: { count_unmatched: false } },
  'unmatched-to-waiter': { side: 'requester', policy: { unmatched_reply: 'oldest_waiter' } },
  'timeout-as-null-reply': { side: 'requester', policy: { timeout_outcome: 'null_reply' } },
  'fails-on-unknown-headers': { side: 'requester', policy: { unknown_reply_headers: 'fail' } },
  'shared-reply-queue': { side: 'requester', policy: { exclusive_reply_queue: false } },
  'gather-unmatched-not-counted': { side: 'gatherer', policy: { count_gather_unmatched: false } },
  'publish-twice': { side: 'gatherer', policy: { publish_copies: 2 } },
  'no-count-no-copy': { side: 'gatherer', policy: { multi_copies_without_count: 0 } },
  'header-only-reader': { side: 'responder', policy: { read_order: ['header'] } },
  'ignores-bytes-address': { side: 'responder', policy: { bytes_address: 'ignore' } },
  'no-content-type': { side: 'responder', policy: { reply_content_type: 'none' } },
  'strips-x-headers': { side: 'responder', policy: { strip_prefix: 'x-' } },
  'failure-with-body': { side: 'responder', policy: { failure_body: 'json' } },
  'qualified-error-type': { side: 'responder', policy: { error_type_name: 'qualified' } },
  'retries-failures': { side: 'responder', policy: { retry_failures: true } },
  'unanswerable-not-counted': { side: 'responder', policy: { count_unanswerable: false } },
  'classic-request-queue': { side: 'responder', policy: { request_queue: 'classic_if_missing' } },
  'late-timeout': { side: 'requester', policy: { request_deadline: 'late' } },
  'budget-restarts-per-reply': { side: 'gatherer', policy: { gather_deadline: 'restart_per_reply' } },
  'gather-keeps-failures': { side: 'gatherer', policy: { gather_failure_reply: 'keep' } },
  'gather-failures-not-counted': { side: 'gatherer', policy: { count_gather_failures: false } },
  'hides-acemq-headers': { side: 'responder', policy: { pass_spec_headers: false } },
  'last-attempt-acked': { side: 'responder', policy: { last_attempt: 'ack' } },
};

/**
 * `profiles.<profile>.peers.node` of the catalogue: no release profile lists this peer (the
 * Node bus is not part of the acemq history), so only "current", every policy at its default.
 */
export const PROFILES: Readonly<Record<string, { requester: Knobs; responder: Knobs }>> = {
  current: { requester: {}, responder: {} },
};

/** An unknown profile or mutant; the message names the valid ones. */
export class UnknownNameError extends Error {}

function camel(knob: string): string {
  return knob.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/**
 * Catalogue knobs in the binding's spelling. A knob the binding's policy does not have is a
 * bug in this table, so it throws.
 */
function toPolicyFields(knobs: Knobs, defaults: object): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [knob, value] of Object.entries(knobs)) {
    if (!(camel(knob) in defaults)) throw new Error(`the binding's policy has no knob ${knob}`);
    fields[camel(knob)] = value;
  }
  return fields;
}

function knobsFor(side: 'requester' | 'responder', profile: unknown, mutant: unknown): Knobs {
  const name = profile ?? 'current';
  const release = typeof name === 'string' ? PROFILES[name] : undefined;
  if (release === undefined) {
    throw new UnknownNameError(`profile ${JSON.stringify(name)} is not offered; valid: ${Object.keys(PROFILES).join(', ')}`);
  }
  if (mutant === undefined || mutant === null) return release[side];
  const defect = typeof mutant === 'string' ? MUTANTS[mutant] : undefined;
  if (defect === undefined) {
    throw new UnknownNameError(`mutant ${JSON.stringify(mutant)} is not in the catalogue; valid: ${Object.keys(MUTANTS).join(', ')}`);
  }
  // Gatherer mutants act on a requester; a mutant given on the other side runs as current.
  const actsHere = (defect.side === 'responder') === (side === 'responder');
  return actsHere ? { ...release[side], ...defect.policy } : release[side];
}

export function requesterPolicyFor(profile: unknown, mutant: unknown): RequesterPolicy {
  const fields = toPolicyFields(knobsFor('requester', profile, mutant), DEFAULT_REQUESTER_POLICY);
  return requesterPolicy(fields as Partial<RequesterPolicy>);
}

export function responderPolicyFor(profile: unknown, mutant: unknown): ResponderPolicy {
  const fields = toPolicyFields(knobsFor('responder', profile, mutant), DEFAULT_RESPONDER_POLICY);
  return responderPolicy(fields as Partial<ResponderPolicy>);
}
