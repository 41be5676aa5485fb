package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"acemq-interop/peers/go/internal/policy"
)

func values(t *testing.T, text string) map[string]json.RawMessage {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPolicyValuesAreSetFieldByField(t *testing.T) {
	q, err := requesterPolicy(values(t, `{"write_header_address": false, "match_replies_by": "oldest_waiter",
		"default_timeout_ms": 10000, "native_address": "stale"}`))
	want := policy.DefaultRequester()
	want.WriteHeaderAddress, want.MatchRepliesBy = false, policy.ByOldestWaiter
	want.DefaultTimeoutMS, want.NativeAddress = 10000, policy.StaleAddress
	if err != nil || !reflect.DeepEqual(q, want) {
		t.Errorf("requester policy %+v, %v", q, err)
	}
	s, err := responderPolicy(values(t, `{"read_order": ["native", "header"], "strip_prefix": "x-", "attempt_base": 0}`))
	wantS := policy.DefaultResponder()
	wantS.ReadOrder, wantS.StripPrefix, wantS.AttemptBase = []policy.Source{policy.Native, policy.Header}, "x-", 0
	if err != nil || !reflect.DeepEqual(s, wantS) {
		t.Errorf("responder policy %+v, %v", s, err)
	}
	// No policy (an older protocol) and {} are the binding as it ships.
	if q, err := requesterPolicy(nil); err != nil || !reflect.DeepEqual(q, policy.DefaultRequester()) {
		t.Errorf("no policy: %+v, %v", q, err)
	}
	if s, err := responderPolicy(values(t, `{}`)); err != nil || !reflect.DeepEqual(s, policy.DefaultResponder()) {
		t.Errorf("{}: %+v, %v", s, err)
	}
}

// otherValue is a JSON value of v's type that is not v.
func otherValue(t *testing.T, v reflect.Value) json.RawMessage {
	var other interface{}
	switch v.Kind() {
	case reflect.Bool:
		other = !v.Bool()
	case reflect.Int:
		other = v.Int() + 1
	case reflect.String:
		other = v.String() + "-other"
	case reflect.Slice:
		other = v.Slice(v.Len()-1, v.Len()).Interface() // [header, native] -> [native]
	default:
		t.Fatalf("a policy field of kind %s", v.Kind())
	}
	raw, _ := json.Marshal(other)
	return raw
}

// Every knob goes through the one code path, and changes its own field only.
func TestEachKnobSetsItsOwnFieldOnly(t *testing.T) {
	check := func(def interface{}, apply func(map[string]json.RawMessage) (interface{}, error)) {
		d := reflect.ValueOf(def)
		for i := 0; i < d.NumField(); i++ {
			knob := d.Type().Field(i).Tag.Get("policy")
			got, err := apply(map[string]json.RawMessage{knob: otherValue(t, d.Field(i))})
			if err != nil {
				t.Errorf("%s: %v", knob, err)
				continue
			}
			g := reflect.ValueOf(got)
			for j := 0; j < d.NumField(); j++ {
				if same := reflect.DeepEqual(g.Field(j).Interface(), d.Field(j).Interface()); same == (i == j) {
					t.Errorf("%s: field %s is %v (default %v)", knob, d.Type().Field(j).Name, g.Field(j), d.Field(j))
				}
			}
		}
	}
	check(policy.DefaultRequester(), func(v map[string]json.RawMessage) (interface{}, error) { return requesterPolicy(v) })
	check(policy.DefaultResponder(), func(v map[string]json.RawMessage) (interface{}, error) { return responderPolicy(v) })
}

func TestAnUnknownKnobOrAValueOfAnotherTypeIsRefusedNamingIt(t *testing.T) {
	for _, c := range []struct{ values, names string }{
		{`{"write_header_adress": false}`, "write_header_adress"},
		{`{"count_timeouts": true, "read_order": ["header"]}`, "read_order"}, // a responder knob
		{`{"count_timeouts": "no"}`, "count_timeouts"},
		{`{"default_timeout_ms": 1.5}`, "default_timeout_ms"},
		{`{"match_replies_by": null}`, "match_replies_by"},
	} {
		_, err := requesterPolicy(values(t, c.values))
		var refusal *badCommand
		if !errors.As(err, &refusal) || !strings.Contains(err.Error(), `"`+c.names+`"`) {
			t.Errorf("%s: %v; want a refusal naming %s", c.values, err, c.names)
		}
	}
	if _, err := responderPolicy(values(t, `{"read_order": "header"}`)); err == nil || !strings.Contains(err.Error(), "read_order") {
		t.Errorf("read_order as a string: %v", err)
	}
}

// snake is a Go field name as the catalogue spells a knob: DLQQueueType is
// dlq_queue_type, ResponseMessageID response_message_id, GatherCopyIDs (Go's
// plural of an initialism) gather_copy_ids.
func snake(name string) string {
	r := []rune(strings.ReplaceAll(name, "IDs", "Ids"))
	var out []rune
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			out = append(out, '_')
		}
		out = append(out, unicode.ToLower(c))
	}
	return string(out)
}

// hello's knobs are every field of the binding's policy types, named as the
// fields are (the tag only spells the name the catalogue's way).
func TestHelloKnobsAreThePolicyTypesFields(t *testing.T) {
	p := newPeer(&output{w: &bytes.Buffer{}}, defaultURL)
	four := 4
	got, err := p.hello(command{Protocol: &four, Protocols: []int{1, 2, 3, 4}})
	if err != nil || got["protocol"] != 4 {
		t.Fatalf("hello: %v, %v", got, err)
	}
	knobs := got["knobs"].(map[string][]string)
	for side, typ := range map[string]reflect.Type{"requester": reflect.TypeOf(policy.Requester{}), "responder": reflect.TypeOf(policy.Responder{})} {
		var fields []string
		for i := 0; i < typ.NumField(); i++ {
			fields = append(fields, snake(typ.Field(i).Name))
		}
		if !reflect.DeepEqual(knobs[side], fields) {
			t.Errorf("%s knobs %v, the fields %v", side, knobs[side], fields)
		}
	}
	if !reflect.DeepEqual(got["unreachable"], map[string][]string{"native_address": {"empty"}}) {
		t.Errorf("unreachable %v", got["unreachable"])
	}
	if _, named := got["mutants"]; named {
		t.Error("a protocol-4 hello names mutants")
	}
	// An older protocol: no names known, the binding as it ships.
	three := 3
	got, _ = p.hello(command{Protocol: &three, Protocols: []int{1, 2, 3}})
	if !reflect.DeepEqual(got["profiles"], []string{"current"}) || !reflect.DeepEqual(got["mutants"], []string{}) || got["knobs"] != nil {
		t.Errorf("protocol 3 hello %v", got)
	}
}

func TestEventsFalseWritesNoEvent(t *testing.T) {
	var out bytes.Buffer
	p := newPeer(&output{w: &out}, defaultURL)
	no, yes := false, true
	for _, events := range []*bool{&no, &yes, nil} {
		out.Reset()
		hooks := p.responderHooks("r", events)
		h := reflect.ValueOf(hooks)
		for i := 0; i < h.NumField(); i++ {
			name := h.Type().Field(i).Name
			if name == "Recovered" {
				// Not a per-request event: responderStart sets it (version 5).
				continue
			}
			if name == "Lost" {
				if h.Field(i).IsNil() {
					t.Errorf("events %v: a lost connection goes unreported", events)
				}
				continue
			}
			if h.Field(i).IsNil() != (events == &no) {
				t.Errorf("events %v: hook %s set: %v", events, name, !h.Field(i).IsNil())
			}
		}
		if hooks.Replied != nil {
			hooks.Replied("m-1", "")
		}
		if wrote := out.Len() > 0; wrote == (events == &no) {
			t.Errorf("events %v: wrote %q", events, out.String())
		}
	}
}

func TestTheConnectionLossKnobsReachTheirFields(t *testing.T) {
	q, err := requesterPolicy(map[string]json.RawMessage{"on_connection_lost": json.RawMessage(`"wait"`), "recover_connection": json.RawMessage(`false`)})
	if err != nil || q.OnConnectionLost != policy.WaitLost || q.RecoverConnection {
		t.Errorf("requester: %v, %+v", err, q)
	}
	r, err := responderPolicy(map[string]json.RawMessage{"ack_timing": json.RawMessage(`"on_delivery"`), "recover_connection": json.RawMessage(`false`)})
	if err != nil || r.AckTiming != policy.AckOnDelivery || r.RecoverConnection {
		t.Errorf("responder: %v, %+v", err, r)
	}
	if d := policy.DefaultRequester(); d.OnConnectionLost != policy.EndLost || !d.RecoverConnection {
		t.Errorf("requester defaults: %+v", d)
	}
	if d := policy.DefaultResponder(); d.AckTiming != policy.AckAfterHandling || !d.RecoverConnection {
		t.Errorf("responder defaults: %+v", d)
	}
}
