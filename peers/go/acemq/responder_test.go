package acemq

import (
	"sync"
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
	r := &Responder{}
	ok := r.replyPublishing(req, []byte(`{}`), "")
	if ok.CorrelationId != "m-1" || ok.Headers[ResponseMessageIDHeader] != "m-1" || ok.ContentType != "application/json" {
		t.Errorf("reply %+v", ok)
	}
	if _, has := ok.Headers[ErrorHeader]; has {
		t.Error("a normal reply carries acemq-error")
	}
	failed := r.replyPublishing(req, nil, "ScenarioFailure: no")
	if failed.Headers[ErrorHeader] != "ScenarioFailure: no" || len(failed.Body) != 0 || failed.CorrelationId != "m-1" {
		t.Errorf("failure reply %+v", failed)
	}
}

func TestCountsBeforePublish(t *testing.T) {
	for _, m := range []Mutant{NoMutant, MutantNoRollback} {
		r := &Responder{opts: ResponderOptions{Mutant: m}}
		for i := 0; i < 3; i++ {
			if !r.countsBeforePublish() {
				t.Errorf("%q: reply %d not counted before publishing", m, i)
			}
		}
	}
	late := &Responder{opts: ResponderOptions{Mutant: MutantAnsweredAfterPublish}}
	if late.countsBeforePublish() {
		t.Error("answered-after-publish counts before publishing")
	}
}

func TestCountersAfterSubscribeNeverCountsTheFirstAnswer(t *testing.T) {
	r := &Responder{opts: ResponderOptions{Mutant: MutantCountersAfterSubscribe}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	uncounted := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !r.countsBeforePublish() {
				mu.Lock()
				uncounted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if uncounted != 1 {
		t.Errorf("%d of 50 concurrent deliveries not counted, want exactly the first", uncounted)
	}
	if !r.countsBeforePublish() {
		t.Error("a later delivery is not counted")
	}
}

func TestReplyAddressingMutants(t *testing.T) {
	req := &Request{MessageID: "m-1", CorrelationID: "c-1", ReplyTo: "q"}
	fromCorr := &Responder{opts: ResponderOptions{Mutant: MutantCorrelationFromCorrID}}
	if got := fromCorr.replyPublishing(req, nil, ""); got.CorrelationId != "c-1" || got.Headers[ResponseMessageIDHeader] != "m-1" {
		t.Errorf("correlation-from-correlation-id: %+v", got)
	}
	if got := fromCorr.replyPublishing(&Request{MessageID: "m-1"}, nil, ""); got.CorrelationId != "" {
		t.Errorf("correlation-from-correlation-id without one: %q", got.CorrelationId)
	}
	noID := &Responder{opts: ResponderOptions{Mutant: MutantNoResponseMessageID}}
	got := noID.replyPublishing(req, nil, "E: x")
	if _, has := got.Headers[ResponseMessageIDHeader]; has || got.CorrelationId != "m-1" || got.Headers[ErrorHeader] != "E: x" {
		t.Errorf("no-response-message-id: %+v", got)
	}
}
