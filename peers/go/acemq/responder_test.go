package acemq

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
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

// recordedAcks is the Acknowledger of a delivery made in a test: it records
// what the responder said about it.
type recordedAcks struct{ acks, nacks, rejects int }

func (a *recordedAcks) Ack(uint64, bool) error        { a.acks++; return nil }
func (a *recordedAcks) Nack(uint64, bool, bool) error { a.nacks++; return nil }
func (a *recordedAcks) Reject(uint64, bool) error     { a.rejects++; return nil }

func TestARequestThatIsNotJSONIsMalformed(t *testing.T) {
	for _, body := range []string{`{"a":1}`, `null`, `"text"`, ` [1, 2] `} {
		if err := checkJSON([]byte(body)); err != nil {
			t.Errorf("%q refused: %v", body, err)
		}
	}
	for _, body := range []string{"not json{", "", "{\"a\":"} {
		err := checkJSON([]byte(body))
		var malformed *MalformedRequest
		if !errors.As(err, &malformed) {
			t.Errorf("%q accepted: %v", body, err)
			continue
		}
		// The failure text is the type name every language uses, then the
		// decoder's own message.
		var syntax *json.SyntaxError
		if got := FailureText(err); !errors.As(err, &syntax) || got != "MalformedRequest: "+syntax.Error() {
			t.Errorf("%q: failure text %q", body, got)
		}
	}
}

func TestDroppedMalformedRequestIsOnlyAcked(t *testing.T) {
	// The drop policy acks and publishes nothing: the test responder has no
	// publisher, so a reply or a dead-letter would panic.
	r := newTestResponder(func(p *policy.Responder) { p.MalformedRequest = policy.DropMalformed })
	acks := &recordedAcks{}
	d := amqp.Delivery{Acknowledger: acks, Body: []byte("not json{")}
	r.malformed(d, &Request{ReplyTo: "q"}, checkJSON(d.Body))
	if acks.acks != 1 || acks.nacks != 0 || acks.rejects != 0 || r.Answered() != 0 {
		t.Errorf("acks %+v, Answered %d", acks, r.Answered())
	}
}

func TestAttemptNumberBase(t *testing.T) {
	for _, c := range []struct {
		headers amqp.Table
		base    int
		want    int
	}{
		{nil, 1, 1}, // RabbitMQ 4.0: absent on a first delivery
		{amqp.Table{DeliveryCountHeader: int64(0)}, 1, 1}, // 3.10: 0 on a first delivery
		{amqp.Table{DeliveryCountHeader: int64(2)}, 1, 3},
		{nil, 0, 0},
		{amqp.Table{DeliveryCountHeader: int64(0)}, 0, 0},
		{amqp.Table{DeliveryCountHeader: int64(2)}, 0, 2},
	} {
		if got := attemptNumber(c.headers, c.base); got != c.want {
			t.Errorf("attemptNumber(%v, %d) = %d, want %d", c.headers, c.base, got, c.want)
		}
	}
	// A zero base makes one more delivery before the dead-letter: the last
	// attempt is still the one numbered max_attempts.
	deliveries := func(base int) int {
		n := 0
		for count := 0; ; count++ {
			n++
			if !retryDecision(attemptNumber(amqp.Table{DeliveryCountHeader: int64(count)}, base), 3) {
				return n
			}
		}
	}
	if got, gotZero := deliveries(1), deliveries(0); got != 3 || gotZero != 4 {
		t.Errorf("deliveries of 3 attempts: %d (base 1), %d (base 0); want 3 and 4", got, gotZero)
	}
}

func TestResponderDefaultsComeFromThePolicy(t *testing.T) {
	opts, pol := (ResponderOptions{}).resolve()
	if opts.MaxAttempts != DefaultMaxAttempts || DefaultMaxAttempts != 3 || pol.DefaultMaxAttempts != 3 || opts.Prefetch != 32 {
		t.Errorf("zero options resolve to %d attempts (policy %d), prefetch %d", opts.MaxAttempts, pol.DefaultMaxAttempts, opts.Prefetch)
	}
	p := policy.DefaultResponder()
	p.DefaultMaxAttempts = 5
	if opts, _ := policy.WithResponder(ResponderOptions{}, p).resolve(); opts.MaxAttempts != 5 {
		t.Errorf("a policy default of 5 resolves to %d attempts", opts.MaxAttempts)
	}
	// A caller's own value wins over any default.
	if opts, _ := policy.WithResponder(ResponderOptions{MaxAttempts: 2}, p).resolve(); opts.MaxAttempts != 2 {
		t.Errorf("max attempts 2 resolves to %d", opts.MaxAttempts)
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

// RR-4.2, SG-3.1: a request without message_id (a tutorial caller's) is known
// by its correlation_id; RR-14.5: a direct reply-to address is at most once.
func TestRequestIDFallsBackToCorrelationID(t *testing.T) {
	tutorial := &Request{CorrelationID: "1", ReplyTo: "q"}
	if got := newTestResponder().replyPublishing(tutorial, nil, ""); got.CorrelationId != "1" || got.Headers[ResponseMessageIDHeader] != "1" {
		t.Errorf("a request without message_id: %+v", got)
	}
	if got := newTestResponder().replyPublishing(&Request{MessageID: "m-1", CorrelationID: "c-1"}, nil, ""); got.CorrelationId != "m-1" {
		t.Errorf("a request with message_id: %+v", got)
	}
	none := newTestResponder(func(p *policy.Responder) { p.ReplyCorrelationFrom = policy.FromMessageID })
	if got := none.replyPublishing(tutorial, nil, ""); got.CorrelationId != "" || got.Headers[ResponseMessageIDHeader] != "1" {
		t.Errorf("without the fallback: %+v", got)
	}
	direct := &Request{ReplyTo: "amq.rabbitmq.reply-to.g1h2AA5y.H8JZ"}
	if !newTestResponder().atMostOnce(direct) || newTestResponder().atMostOnce(&Request{ReplyTo: "amq.gen-1"}) {
		t.Error("direct reply-to addresses")
	}
	checked := newTestResponder(func(p *policy.Responder) { p.DirectReplyTo = policy.DirectChecked })
	if checked.atMostOnce(direct) {
		t.Error("a checked direct reply-to policy")
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

func TestTheHandlerSeesTheSpecHeadersUnlessHidden(t *testing.T) {
	names := func(h amqp.Table) map[string]bool {
		out := map[string]bool{}
		for k := range h {
			out[k] = true
		}
		return out
	}
	h := amqp.Table{ReplyToHeader: "q", ResponseMessageIDHeader: "m", "acemq-whatever": "w", "x-custom": "c", "x-acemq-trace": "t"}
	want := map[string]bool{ReplyToHeader: true, ResponseMessageIDHeader: true, "acemq-whatever": true, "x-custom": true}
	if got := names(newTestResponder().handlerHeaders(h)); !reflect.DeepEqual(got, want) {
		t.Errorf("default: the handler sees %v, want %v", got, want)
	}
	hiding := newTestResponder(func(p *policy.Responder) { p.PassSpecHeaders = false })
	want = map[string]bool{ResponseMessageIDHeader: true, "x-custom": true}
	if got := names(hiding.handlerHeaders(h)); !reflect.DeepEqual(got, want) {
		t.Errorf("hiding: the handler sees %v, want %v", got, want)
	}
	// Independent of RR-5.1's knob.
	both := newTestResponder(func(p *policy.Responder) { p.PassSpecHeaders, p.StripEngineHeaders = false, false })
	want = map[string]bool{ResponseMessageIDHeader: true, "x-custom": true, "x-acemq-trace": true}
	if got := names(both.handlerHeaders(h)); !reflect.DeepEqual(got, want) || len(h) != 5 {
		t.Errorf("hiding, no strip: the handler sees %v, want %v (argument %v)", got, want, h)
	}
}

func TestAnsweredIsSettledWhenThePublishEnds(t *testing.T) {
	failed := errors.New("returned")
	for _, c := range []struct {
		name   string
		change func(*policy.Responder)
		err    error
		want   int64
	}{
		{"default, confirmed", func(*policy.Responder) {}, nil, 1},
		{"default, failed", func(*policy.Responder) {}, failed, 0},
		{"no rollback, failed", func(p *policy.Responder) { p.RollbackAnswered = false }, failed, 1},
		{"after confirm, confirmed", func(p *policy.Responder) { p.AnsweredTiming = policy.AfterConfirm }, nil, 1},
		{"after confirm, failed", func(p *policy.Responder) { p.AnsweredTiming = policy.AfterConfirm }, failed, 0},
	} {
		r := newTestResponder(c.change)
		first := r.countsBeforePublish()
		if first {
			r.answered++
		}
		// Counted at once: no timer, nothing later.
		if r.answeredAfterPublish(first, c.err); r.Answered() != c.want {
			t.Errorf("%s: Answered %d, want %d", c.name, r.Answered(), c.want)
		}
	}
}
