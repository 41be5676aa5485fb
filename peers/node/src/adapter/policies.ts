// Protocol 4's `policy` set on the binding's RequesterPolicy and ResponderPolicy: the
// catalogue spells a knob in snake_case (`write_header_address`), the binding's field is the
// same name in camelCase (`writeHeaderAddress`), and that naming convention is the whole
// mapping, one code path for every knob. The adapter keeps no catalogue: the knobs hello
// names are the policy objects' own fields, and the harness sends the values.

import {
  DEFAULT_REQUESTER_POLICY,
  DEFAULT_RESPONDER_POLICY,
  type RequesterPolicy,
  type ResponderPolicy,
  requesterPolicy,
  responderPolicy,
} from '../policy';

/** A knob the binding's policy lacks, or a value it cannot take: answered `ok: false` naming it. */
export class PolicyError extends Error {}

/** `writeHeaderAddress` -> `write_header_address`. */
export function knobName(field: string): string {
  return field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** hello's `knobs`: every field of the binding's two policy types, in the catalogue's spelling. */
export const KNOBS = {
  requester: Object.keys(DEFAULT_REQUESTER_POLICY).map(knobName),
  responder: Object.keys(DEFAULT_RESPONDER_POLICY).map(knobName),
};

/**
 * A JSON value as the field takes it. TypeScript's types are gone at run time, so the
 * field's default tells its kind: a boolean, a whole number, a string, or a list of strings
 * (`read_order`). Which strings a choice takes is a compile-time union only, not checked here.
 */
function converted(knob: string, value: unknown, byDefault: unknown): unknown {
  if (Array.isArray(byDefault)) {
    if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return Object.freeze([...value]);
  } else if (typeof byDefault === 'number') {
    if (Number.isInteger(value)) return value;
  } else if (typeof value === typeof byDefault) {
    return value;
  }
  const kind = Array.isArray(byDefault) ? 'a list of strings' : typeof byDefault === 'number' ? 'a whole number' : `a ${typeof byDefault}`;
  throw new PolicyError(`policy knob ${knob} cannot be ${JSON.stringify(value)}: the binding takes ${kind}`);
}

/** The fields `values` (knob -> JSON value) set, by name; knobs left out keep their default. */
function fieldsOf(values: unknown, defaults: object): Record<string, unknown> {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    throw new PolicyError(`'policy' must be an object of knob values, not ${JSON.stringify(values)}`);
  }
  const fieldOfKnob = new Map(Object.keys(defaults).map((field) => [knobName(field), field]));
  const fields: Record<string, unknown> = {};
  for (const [knob, value] of Object.entries(values)) {
    const field = fieldOfKnob.get(knob);
    if (field === undefined) throw new PolicyError(`unknown policy knob ${knob}: the binding's policy has no such field`);
    fields[field] = converted(knob, value, (defaults as Record<string, unknown>)[field]);
  }
  return fields;
}

export function requesterPolicyFrom(values: unknown): RequesterPolicy {
  return requesterPolicy(fieldsOf(values, DEFAULT_REQUESTER_POLICY) as Partial<RequesterPolicy>);
}

export function responderPolicyFrom(values: unknown): ResponderPolicy {
  return responderPolicy(fieldsOf(values, DEFAULT_RESPONDER_POLICY) as Partial<ResponderPolicy>);
}
