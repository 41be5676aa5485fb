package main

// Protocol 4's policy values, set on the binding's own policy types. The
// adapter holds no catalogue: every field of policy.Requester and
// policy.Responder carries its catalogue knob name in its `policy` struct
// tag, so the knobs this peer offers, and the field a value goes to, are read
// from those types by reflection.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"acemq-interop/peers/go/internal/policy"
)

// unreachable is what amqp091-go cannot put on the wire whatever the policy
// says: it leaves an empty reply_to out of the frame, so native_address
// "empty" would arrive as no reply_to at all.
var unreachable = map[string][]string{"native_address": {"empty"}}

// knobsOf is the knob name of every field of a policy type, in field order.
func knobsOf(policyType reflect.Type) []string {
	var knobs []string
	for i := 0; i < policyType.NumField(); i++ {
		if knob := knobOf(policyType.Field(i)); knob != "" {
			knobs = append(knobs, knob)
		}
	}
	return knobs
}

func knobOf(field reflect.StructField) string {
	if knob := field.Tag.Get("policy"); knob != "-" {
		return knob
	}
	return ""
}

// knobs is hello's "knobs" (protocol 4): gatherer knobs are requester ones.
func knobs() map[string][]string {
	return map[string][]string{
		"requester": knobsOf(reflect.TypeOf(policy.Requester{})),
		"responder": knobsOf(reflect.TypeOf(policy.Responder{})),
	}
}

// withPolicy is p with each knob of values set on the field of that name.
// encoding/json converts a value to the field's own type (a bool, an int, an
// enum-like string type, read_order's []policy.Source) and refuses one of
// another kind; a knob the type has no field for is refused too, naming it.
func withPolicy[P policy.Requester | policy.Responder](p P, values map[string]json.RawMessage) (P, error) {
	v := reflect.ValueOf(&p).Elem()
	fields := map[string]reflect.Value{}
	for i := 0; i < v.NumField(); i++ {
		if knob := knobOf(v.Type().Field(i)); knob != "" {
			fields[knob] = v.Field(i)
		}
	}
	names := make([]string, 0, len(values))
	for knob := range values {
		names = append(names, knob)
	}
	sort.Strings(names) // the same knob is named first on every run
	for _, knob := range names {
		field, ok := fields[knob]
		if !ok {
			return p, bad("unknown %s policy knob %q", strings.ToLower(v.Type().Name()), knob)
		}
		raw := values[knob]
		// A JSON null would leave the field as it is: no knob takes one.
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return p, bad("policy knob %q cannot be null", knob)
		}
		if err := json.Unmarshal(raw, field.Addr().Interface()); err != nil {
			return p, bad("policy knob %q cannot be %s: %v", knob, raw, err)
		}
	}
	return p, nil
}

// requesterPolicy is the binding's default requester policy with a
// command's "policy" set on it (absent or {}: the binding as it ships).
func requesterPolicy(values map[string]json.RawMessage) (policy.Requester, error) {
	return withPolicy(policy.DefaultRequester(), values)
}

// responderPolicy is requesterPolicy's counterpart.
func responderPolicy(values map[string]json.RawMessage) (policy.Responder, error) {
	return withPolicy(policy.DefaultResponder(), values)
}
