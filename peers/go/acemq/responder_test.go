package acemq

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestResponderReadsTheHeaderFirstThenNative(t *testing.T) {
	both := amqp.Delivery{ReplyTo: "native-q", Headers: amqp.Table{ReplyToHeader: "header-q"}}
	bytesHeader := amqp.Delivery{Headers: amqp.Table{ReplyToHeader: []byte("header-q")}}
	nativeOnly := amqp.Delivery{ReplyTo: "native-q"}
	emptyHeader := amqp.Delivery{ReplyTo: "native-q", Headers: amqp.Table{ReplyToHeader: ""}}
	neither := amqp.Delivery{Headers: amqp.Table{ReplyToHeader: ""}}
	cases := []struct {
		profile     Profile
		mutant      Mutant
		d           amqp.Delivery
		addr, where string
	}{
		{ProfileCurrent, NoMutant, both, "header-q", SourceHeader},
		{ProfileCurrent, NoMutant, bytesHeader, "header-q", SourceHeader},
		{ProfileCurrent, NoMutant, nativeOnly, "native-q", SourceNative},
		{ProfileCurrent, NoMutant, emptyHeader, "native-q", SourceNative},
		{ProfileCurrent, NoMutant, neither, "", SourceNative},
		{Profile050, NoMutant, nativeOnly, "native-q", SourceNative},
		{Profile030, NoMutant, both, "header-q", SourceHeader},
		{Profile030, NoMutant, nativeOnly, "", SourceHeader},
		{ProfileCurrent, MutantNativeFirst, both, "native-q", SourceNative},
		{ProfileCurrent, MutantNativeFirst, bytesHeader, "header-q", SourceHeader},
	}
	for i, c := range cases {
		r := &Responder{opts: ResponderOptions{Profile: c.profile, Mutant: c.mutant}}
		addr, where := r.replyAddress(c.d)
		if addr != c.addr || (addr != "" && where != c.where) {
			t.Errorf("case %d (%s/%s): %q from %s, want %q from %s", i, c.profile, c.mutant, addr, where, c.addr, c.where)
		}
	}
}

func TestReplyIsAddressedForBothFamilies(t *testing.T) {
	req := &Request{MessageID: "m-1", ReplyTo: "q"}
	ok := replyPublishing(req, []byte(`{}`), "")
	if ok.CorrelationId != "m-1" || ok.Headers[ResponseMessageIDHeader] != "m-1" || ok.ContentType != "application/json" {
		t.Errorf("reply %+v", ok)
	}
	if _, has := ok.Headers[ErrorHeader]; has {
		t.Error("a normal reply carries acemq-error")
	}
	failed := replyPublishing(req, nil, "ScenarioFailure: no")
	if failed.Headers[ErrorHeader] != "ScenarioFailure: no" || len(failed.Body) != 0 || failed.CorrelationId != "m-1" {
		t.Errorf("failure reply %+v", failed)
	}
}
