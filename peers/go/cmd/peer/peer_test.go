package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"acemq-interop/peers/go/acemq"
	"acemq-interop/peers/go/internal/policy"

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

func TestMutantsActOnlyOnTheirSide(t *testing.T) {
	name := "no-strip"
	if got, err := requesterPolicy("current", &name); err != nil || !reflect.DeepEqual(got, policy.DefaultRequester()) {
		t.Errorf("a responder mutant changed the requester: %+v, %v", got, err)
	}
	if got, err := responderPolicy("", &name); err != nil || got.StripEngineHeaders {
		t.Errorf("responder policy = %+v, %v", got, err)
	}
	late := "answered-after-publish"
	if got, _ := responderPolicy("current", &late); got.AnsweredTiming != policy.AfterConfirm || got.AnsweredDelay != time.Second {
		t.Errorf("after-confirm policy = %+v", got)
	}
	// A profile and a mutant combine.
	bytes := "header-bytes"
	if got, _ := requesterPolicy("0.3.0", &bytes); got.WriteNativeAddress || !got.HeaderAddressAsBytes {
		t.Errorf("0.3.0 + header-bytes = %+v", got)
	}
}

func TestUnknownNamesAreRefusedNamingTheValidOnes(t *testing.T) {
	unknown := "bogus"
	if _, err := requesterPolicy("current", &unknown); err == nil || !strings.Contains(err.Error(), "no-strip") {
		t.Errorf("unknown mutant: %v", err)
	}
	if _, err := responderPolicy("0.7.12", nil); err == nil || !strings.Contains(err.Error(), "0.3.0") {
		t.Errorf("a profile Go never had: %v", err)
	}
}

func TestNegotiation(t *testing.T) {
	one, two, three := 1, 2, 3
	cases := []struct {
		cmd  command
		want int
	}{
		{command{Protocol: &two, Protocols: []int{1, 2}}, 2},
		{command{Protocol: &three, Protocols: []int{1, 2, 3}}, 3},
		{command{Protocol: &one}, 1},
		{command{Protocol: &two}, 2},
		{command{}, 1},
	}
	for _, c := range cases {
		if got, err := negotiate(c.cmd); err != nil || got != c.want {
			t.Errorf("negotiate(%v, %v) = %d, %v; want %d", c.cmd.Protocol, c.cmd.Protocols, got, err, c.want)
		}
	}
	four := 4
	if _, err := negotiate(command{Protocol: &four, Protocols: []int{4}}); err == nil {
		t.Error("protocol 4 accepted")
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
