package main

import (
	"encoding/json"
	"reflect"
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

func TestMutantOfTheOtherRoleIsIgnored(t *testing.T) {
	name := "no-strip"
	if m := mutantFor(command{Op: "requester.open", Mutant: &name}, acemq.RoleRequester); m != acemq.NoMutant {
		t.Errorf("requester took responder mutant %q", m)
	}
	if m := mutantFor(command{Op: "responder.start", Mutant: &name}, acemq.RoleResponder); m != acemq.MutantNoStrip {
		t.Errorf("responder mutant = %q", m)
	}
	unknown := "bogus"
	if m := mutantFor(command{Mutant: &unknown}, acemq.RoleResponder); m != "bogus" {
		t.Errorf("unknown mutant must reach the binding to be refused, got %q", m)
	}
}
