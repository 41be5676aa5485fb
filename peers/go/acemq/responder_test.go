package acemq

import (
	"sync"
	"testing"

	"acemq-interop/peers/go/internal/policy"
)

// newTestResponder is a Responder without a broker, with the default policy
// as changed by change.
func newTestResponder(change ...func(*policy.Responder)) *Responder {
	p := policy.DefaultResponder()
	for _, c := range change {
		c(&p)
	}
	return &Responder{pol: p}
}

func TestReplyIsAddressedForBothFamilies(t *testing.T) {
	req := &Request{MessageID: "m-1", ReplyTo: "q"}
	r := newTestResponder()
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
	for _, r := range []*Responder{newTestResponder(), newTestResponder(func(p *policy.Responder) { p.RollbackAnswered = false })} {
		for i := 0; i < 3; i++ {
			if !r.countsBeforePublish() {
				t.Errorf("%+v: reply %d not counted before publishing", r.pol, i)
			}
		}
	}
	late := newTestResponder(func(p *policy.Responder) { p.AnsweredTiming = policy.AfterConfirm })
	if late.countsBeforePublish() {
		t.Error("an after-confirm policy counts before publishing")
	}
}

func TestCountersCreatedAfterTheFirstDeliveryNeverCountIt(t *testing.T) {
	r := newTestResponder(func(p *policy.Responder) { p.CountersCreated = policy.AfterFirstDelivery })
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

func TestReplyAddressingPolicies(t *testing.T) {
	req := &Request{MessageID: "m-1", CorrelationID: "c-1", ReplyTo: "q"}
	fromCorr := newTestResponder(func(p *policy.Responder) { p.ReplyCorrelationFrom = policy.FromCorrelationID })
	if got := fromCorr.replyPublishing(req, nil, ""); got.CorrelationId != "c-1" || got.Headers[ResponseMessageIDHeader] != "m-1" {
		t.Errorf("correlation from correlation_id: %+v", got)
	}
	if got := fromCorr.replyPublishing(&Request{MessageID: "m-1"}, nil, ""); got.CorrelationId != "" {
		t.Errorf("correlation from an absent correlation_id: %q", got.CorrelationId)
	}
	noID := newTestResponder(func(p *policy.Responder) { p.ResponseMessageID = false })
	got := noID.replyPublishing(req, nil, "E: x")
	if _, has := got.Headers[ResponseMessageIDHeader]; has || got.CorrelationId != "m-1" || got.Headers[ErrorHeader] != "E: x" {
		t.Errorf("without responseMessageId: %+v", got)
	}
}

func TestOptionsCarryTheDefaultPolicyUnlessGivenOne(t *testing.T) {
	if got := (ResponderOptions{}).resolvePolicy(); got.ReadOrder[0] != policy.Header || !got.StripEngineHeaders {
		t.Errorf("zero options resolve to %+v", got)
	}
	p := policy.DefaultResponder()
	p.ReadOrder[0] = policy.Native
	opts := policy.WithResponder(ResponderOptions{MaxAttempts: 2}, p)
	p.ReadOrder[0] = policy.Header // the options keep their own copy
	if got := opts.resolvePolicy(); got.ReadOrder[0] != policy.Native || opts.MaxAttempts != 2 {
		t.Errorf("options resolve to %+v", got)
	}
	rq := policy.DefaultRequester()
	rq.CountTimeouts = false
	if got := policy.WithRequester(RequesterOptions{}, rq).resolvePolicy(); got.CountTimeouts {
		t.Errorf("requester options resolve to %+v", got)
	}
}
