package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"acemq-interop/peers/go/acemq"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestEchoReportsWhatTheHandlerSaw(t *testing.T) {
	req := &acemq.Request{
		Body:          []byte(`{"correlationId":"c-1","sku":"A"}`),
		MessageID:     "m-1",
		ReplyTo:       "q",
		ReplyToSource: acemq.SourceHeader,
		Headers:       amqp.Table{"x-b": 1, "acemq-reply-to": "q"},
		Attempt:       2,
	}
	got, err := json.Marshal(echoOf("r1", req))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"correlationId":"c-1","echo":{"correlationId":"c-1","sku":"A"},"peer":"go","responder":"r1",` +
		`"seen":{"attempt":2,"correlation_id":null,"headers":["acemq-reply-to","x-b"],"message_id":"m-1","reply_to":"q","reply_to_source":"header"}}`
	if string(got) != want {
		t.Errorf("echo\n got %s\nwant %s", got, want)
	}
}

func TestScenarioFailureText(t *testing.T) {
	if got := acemq.FailureText(&ScenarioFailure{Message: "no price"}); got != "ScenarioFailure: no price" {
		t.Errorf("got %q", got)
	}
}

func TestHeaderValuesFromJSON(t *testing.T) {
	var m map[string]interface{}
	json.Unmarshal([]byte(`{"s":"v","i":5,"f":1.5,"b":true,"o":{"n":-2},"a":[1,"x"]}`), &m)
	want := amqp.Table{"s": "v", "i": int64(5), "f": 1.5, "b": true, "o": amqp.Table{"n": int64(-2)}, "a": []interface{}{int64(1), "x"}}
	if got := table(m); !reflect.DeepEqual(got, want) {
		t.Errorf("table = %#v", got)
	}
}

func TestNegotiation(t *testing.T) {
	one, two, three, four, five := 1, 2, 3, 4, 5
	cases := []struct {
		cmd  command
		want int
	}{
		{command{Protocol: &two, Protocols: []int{1, 2}}, 2},
		{command{Protocol: &three, Protocols: []int{1, 2, 3}}, 3},
		{command{Protocol: &four, Protocols: []int{1, 2, 3, 4}}, 4},
		{command{Protocol: &five, Protocols: []int{1, 2, 3, 4, 5}}, 5},
		{command{Protocol: &five, Protocols: []int{1, 2, 3, 4, 5, 6}}, 5},
		{command{Protocol: &one}, 1},
		{command{Protocol: &two}, 2},
		{command{}, 1},
	}
	for _, c := range cases {
		if got, err := negotiate(c.cmd); err != nil || got != c.want {
			t.Errorf("negotiate(%v, %v) = %d, %v; want %d", c.cmd.Protocol, c.cmd.Protocols, got, err, c.want)
		}
	}
	six := 6
	if _, err := negotiate(command{Protocol: &six, Protocols: []int{6}}); err == nil {
		t.Error("protocol 6 accepted")
	}
}

func TestNearestRank(t *testing.T) {
	v := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]int64{50: 5, 90: 9, 99: 10, 1: 1} {
		if got := nearestRank(v, p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
	if b := padBody(256); len(b) != 256 || !json.Valid(b) {
		t.Errorf("padBody(256) is %d bytes", len(b))
	}
}

func TestFailNeedsAnErrorMessage(t *testing.T) {
	if _, err := makeHandler("r", &behavior{Reply: "fail"}); err == nil {
		t.Error("fail without error_message accepted")
	}
}

func TestHelloTakesTLSAndSaysSo(t *testing.T) {
	p := newPeer(&output{w: io.Discard}, defaultURL)
	two := 2
	got, err := p.hello(command{Protocols: []int{1, 2}, Protocol: &two})
	if err != nil || !reflect.DeepEqual(got["capabilities"], []string{"request", "respond", "gather", "tls", "load"}) {
		t.Errorf("capabilities = %v, %v", got["capabilities"], err)
	}
	if p.tls != nil {
		t.Error("a hello without tls set a TLS configuration")
	}
	if _, err := p.hello(command{Protocol: &two, TLS: &tlsSettings{}}); err == nil || !strings.Contains(err.Error(), "ca_file") {
		t.Errorf("tls without ca_file: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	if _, err := p.hello(command{Protocol: &two, TLS: &tlsSettings{CAFile: missing}}); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("a CA file that is not there: %v", err)
	}
}

// The binding's timeout errors, plain or wrapped as Go code wraps errors
// (fmt.Errorf with %w, once or twice), are the timeout outcomes, never a
// refusal; anything else that is no outcome stays a refusal.
func TestTimeoutsWhateverTheirShapeAreTheTimeoutOutcome(t *testing.T) {
	wrap := func(err error) []error {
		return []error{err, fmt.Errorf("request m-1: %w", err), fmt.Errorf("caller: %w", fmt.Errorf("inner: %w", err))}
	}
	for _, err := range wrap(fmt.Errorf("%w: no reply to m-1 within 1s", acemq.ErrTimedOut)) {
		if got, refused := requestOutcome(nil, err); refused != nil || got["outcome"] != "timeout" {
			t.Errorf("request %q: %v, %v; want the timeout outcome", err, got, refused)
		}
	}
	partial := []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`null`)}
	for _, err := range wrap(&acemq.RequestTimeoutError{MessageID: "g-1", Expected: 3, PartialReplies: partial}) {
		got, refused := gatherOutcome(nil, err)
		if b, _ := json.Marshal(got["replies"]); refused != nil || got["outcome"] != "timeout_with_partial" || string(b) != `[{"n":1},null]` {
			t.Errorf("gather %q: %v, %v; want timeout_with_partial with its two replies", err, got, refused)
		}
		// A shortfall is a timeout to a request's caller too.
		if got, _ := requestOutcome(nil, err); got["outcome"] != "timeout" {
			t.Errorf("a shortfall through requestOutcome: %v", got)
		}
	}
	for _, err := range wrap(acemq.ErrTimedOut) {
		if got, refused := gatherOutcome(nil, err); refused != nil || got["outcome"] != "timeout_with_partial" {
			t.Errorf("gather %q: %v, %v; want timeout_with_partial", err, got, refused)
		}
	}
	for _, err := range wrap(acemq.ErrClosed) {
		if got, _ := requestOutcome(nil, err); got["outcome"] != "closed" {
			t.Errorf("request %q: %v, want closed", err, got)
		}
	}
	cannot := errors.New("connection refused")
	if _, refused := requestOutcome(nil, cannot); refused != cannot {
		t.Errorf("a call that could not be made is not refused: %v", refused)
	}
	if _, refused := gatherOutcome(nil, fmt.Errorf("publish: %w", &acemq.ReturnedError{Code: 312})); refused == nil {
		t.Error("a returned gather is not refused")
	}
}

func TestALostConnectionIsTheConnectionLostOutcomeFromVersion5(t *testing.T) {
	lost := fmt.Errorf("request m-1: %w", &acemq.ConnectionLostError{Reason: &amqp.Error{Code: 320, Reason: "CONNECTION_FORCED - Closed via management plugin"}})
	want := answer{"outcome": "connection_lost", "reason": "320 CONNECTION_FORCED - Closed via management plugin"}
	for name, outcome := range map[string]func(error) (answer, error){
		"request": func(err error) (answer, error) { return requestOutcome(nil, err) },
		"gather":  func(err error) (answer, error) { return gatherOutcome(nil, err) },
	} {
		got, refused := outcome(lost)
		if refused != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, refused, want)
		}
		// Not a timeout, whatever else it wraps.
		if got, _ := outcome(fmt.Errorf("%w", acemq.ErrTimedOut)); got["outcome"] == "connection_lost" {
			t.Errorf("%s: a timeout answered connection_lost", name)
		}
		for version, refusedBefore := range map[int]bool{4: true, 5: false} {
			p := newPeer(&output{w: io.Discard}, defaultURL)
			p.protocol = version
			res, err := outcome(lost)
			res, err = p.versioned(res, err, lost)
			if refusedBefore != (err != nil) {
				t.Errorf("%s, version %d: %v, %v", name, version, res, err)
			}
			if refusedBefore && err != lost {
				t.Errorf("%s, version %d: refused with %v, want the call's error", name, version, err)
			}
		}
	}
}

func TestAVersion5RoleConnectsToItsNodesUnderItsName(t *testing.T) {
	p := newPeer(&output{w: io.Discard}, defaultURL)
	five := 5
	if _, err := p.hello(command{Protocol: &five, Protocols: []int{1, 2, 3, 4, 5}, AMQPURL: "amqp://a/", AMQPURLs: []string{"amqp://a/", "amqp://b/"}}); err != nil {
		t.Fatal(err)
	}
	got := p.connection(command{ConnectionName: "acemq-c0004.q", AMQPURLs: []string{"amqp://b/", "amqp://a/"}})
	if !reflect.DeepEqual(got.URLs, []string{"amqp://b/", "amqp://a/"}) || got.Name != "acemq-c0004.q" {
		t.Errorf("the command's nodes and name: %+v", got)
	}
	if got := p.connection(command{Name: "q"}); !reflect.DeepEqual(got.URLs, []string{"amqp://a/", "amqp://b/"}) {
		t.Errorf("no amqp_urls in the command: %v, want hello's", got.URLs)
	}
	p.urls = nil
	if got := p.connection(command{}); !reflect.DeepEqual(got.URLs, []string{"amqp://a/"}) {
		t.Errorf("no amqp_urls anywhere: %v, want [amqp_url]", got.URLs)
	}
}

func TestTheRecoveredEventNamesTheRole(t *testing.T) {
	var out bytes.Buffer
	p := newPeer(&output{w: &out}, defaultURL)
	p.recovered("responder", "c0004.r")()
	var line map[string]interface{}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || !reflect.DeepEqual(line, map[string]interface{}{"event": "recovered", "responder": "c0004.r"}) {
		t.Errorf("wrote %q (%v)", out.String(), err)
	}
}
