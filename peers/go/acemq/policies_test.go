package acemq

// The policy knobs of the catalogue's second batch of mutants, each at its
// default (the wire spec) and at its other value, through the binding's pure
// code paths; the broker runs of the suite cover the rest.

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestNativeAddressIsTheReplyQueueUnlessStale(t *testing.T) {
	if got := newTestRequester().requestPublishing("m", "c", "q", nil, nil); got.ReplyTo != "q" || got.Headers[ReplyToHeader] != "q" {
		t.Errorf("default: reply_to %q, header %v", got.ReplyTo, got.Headers[ReplyToHeader])
	}
	stale := newTestRequester(func(p *policy.Requester) { p.NativeAddress = policy.StaleAddress })
	if got := stale.requestPublishing("m", "c", "q", nil, nil); got.ReplyTo != "q.stale" || got.Headers[ReplyToHeader] != "q" {
		t.Errorf("stale: reply_to %q, header %v", got.ReplyTo, got.Headers[ReplyToHeader])
	}
	empty := newTestRequester(func(p *policy.Requester) { p.NativeAddress = policy.EmptyAddress })
	if got := empty.requestPublishing("m", "c", "q", nil, nil); got.ReplyTo != "" || got.Headers[ReplyToHeader] != "q" {
		t.Errorf("empty: reply_to %q, header %v", got.ReplyTo, got.Headers[ReplyToHeader])
	}
}

func TestNoNarrowIntHeaderUnlessThePolicyAddsOne(t *testing.T) {
	for _, h := range newTestRequester().requestPublishing("m", "c", "q", nil, amqp.Table{"k": int64(1)}).Headers {
		if _, narrow := h.(uint8); narrow {
			t.Errorf("default request carries a uint8 header")
		}
	}
	narrow := newTestRequester(func(p *policy.Requester) { p.NarrowIntHeader = true })
	got := narrow.requestPublishing("m", "c", "q", nil, nil)
	if v, ok := got.Headers[hopsHeader].(uint8); !ok || v != 1 {
		t.Errorf("narrow: %s = %#v, want uint8(1)", hopsHeader, got.Headers[hopsHeader])
	}
	if err := got.Headers.Validate(); err != nil {
		t.Errorf("narrow: amqp091-go refuses the table: %v", err)
	}
}

func TestUnknownReplyHeadersAreIgnoredUnlessThePolicyFails(t *testing.T) {
	d := amqp.Delivery{Headers: amqp.Table{ResponseMessageIDHeader: "m", "traceparent": "t"}, Body: []byte(`1`)}
	var v json.RawMessage
	if err := newTestRequester().decode(d, &v); err != nil || string(v) != "1" {
		t.Errorf("default: %s, %v", v, err)
	}
	failing := newTestRequester(func(p *policy.Requester) { p.UnknownReplyHeaders = policy.FailUnknownHeaders })
	var undecodable *DecodeError
	if err := failing.decode(d, &v); !errors.As(err, &undecodable) {
		t.Errorf("fail policy with traceparent: %v, want a DecodeError", err)
	}
	// x- headers are the broker's and clients' own: they pass.
	client := amqp.Delivery{Headers: amqp.Table{ResponseMessageIDHeader: "m", "x-dotnet-pub-seq-no": int64(7)}, Body: []byte(`2`)}
	if err := failing.decode(client, &v); err != nil || string(v) != "2" {
		t.Errorf("fail policy with x-dotnet-pub-seq-no: %s, %v", v, err)
	}
	known := amqp.Delivery{Headers: amqp.Table{ResponseMessageIDHeader: "m", ErrorHeader: "E: x"}}
	var failed *ResponderFailedError
	if err := failing.decode(known, &v); !errors.As(err, &failed) {
		t.Errorf("fail policy with only known headers: %v, want a ResponderFailedError", err)
	}
}

func TestTimeoutEndsTheCallUnlessThePolicyMakesItANullReply(t *testing.T) {
	var v json.RawMessage
	r := newTestRequester()
	if err := r.timedOutCall("m", time.Second, &v); !errors.Is(err, ErrTimedOut) || r.TimedOut() != 1 {
		t.Errorf("default: %v, TimedOut %d", err, r.TimedOut())
	}
	null := newTestRequester(func(p *policy.Requester) { p.TimeoutOutcome = policy.TimeoutIsNullReply })
	v = json.RawMessage(`"before"`)
	if err := null.timedOutCall("m", time.Second, &v); err != nil || (v != nil && string(v) != "null") || null.TimedOut() != 1 {
		t.Errorf("null reply: %s, %v, TimedOut %d", v, err, null.TimedOut())
	}
}

// stray dispatches, with nobody waiting, two requests' replies (a late one
// for m-1, which gave up, and one naming no request and carrying no
// responseMessageId) and two gathers' (a late one for g-1, which ended, and
// one naming no gather), and returns Unmatched and the observer's count.
func stray(t *testing.T, r *Requester) (counted int64, heard int) {
	t.Helper()
	r.opts.OnUnmatched = func(UnmatchedReply) { heard++ }
	if _, err := r.register("m-1"); err != nil {
		t.Fatal(err)
	}
	r.forget("m-1")
	r.endGather(startGather(t, r, "g-1", 0, nil))
	r.dispatch(amqp.Delivery{CorrelationId: "m-1", Headers: amqp.Table{ResponseMessageIDHeader: "m-1"}})
	r.dispatch(amqp.Delivery{CorrelationId: "m-9"})
	r.dispatch(reply("g-1", "g-1", `1`))
	r.dispatch(reply("g-9", "c-9", `9`))
	return r.Unmatched(), heard
}

func TestUnmatchedRepliesAreCountedUnlessAPolicySkipsOneKind(t *testing.T) {
	def := newTestRequester()
	if counted, heard := stray(t, def); counted != 4 || heard != 4 {
		t.Errorf("default: Unmatched %d, heard %d", counted, heard)
	}
	if def.pastRequests != nil {
		t.Error("the default policy remembers past requests")
	}
	noRequests := newTestRequester(func(p *policy.Requester) { p.CountUnmatched = false })
	if counted, heard := stray(t, noRequests); counted != 2 || heard != 4 {
		t.Errorf("requests' not counted: Unmatched %d, heard %d; want the gathers' only", counted, heard)
	}
	noGathers := newTestRequester(func(p *policy.Requester) { p.CountGatherUnmatched = false })
	if counted, heard := stray(t, noGathers); counted != 2 || heard != 4 {
		t.Errorf("gathers' not counted: Unmatched %d, heard %d; want the requests' only", counted, heard)
	}
}

func TestUnmatchedReplyGoesToTheOldestWaiterUnderThatPolicy(t *testing.T) {
	r := newTestRequester(func(p *policy.Requester) { p.UnmatchedReply = policy.UnmatchedToOldestWaiter })
	first, _ := r.register("m-1")
	second, _ := r.register("m-2")
	r.dispatch(amqp.Delivery{CorrelationId: "m-2", Body: []byte(`2`)})
	if got := string((<-second.reply).Body); got != "2" {
		t.Errorf("m-2's own reply went elsewhere: %s", got)
	}
	r.dispatch(amqp.Delivery{CorrelationId: "m-9", Body: []byte(`9`)})
	if got := string((<-first.reply).Body); got != "9" || r.Unmatched() != 0 {
		t.Errorf("oldest waiter got %s, Unmatched %d", got, r.Unmatched())
	}
	r.dispatch(amqp.Delivery{CorrelationId: "m-8"})
	if r.Unmatched() != 1 {
		t.Errorf("with nobody waiting, Unmatched = %d, want 1", r.Unmatched())
	}
}

func TestGatherCopies(t *testing.T) {
	def := newTestRequester()
	if def.multiCopies(3) != 3 || def.multiCopies(0) != 1 || def.pol.PublishCopies != 1 {
		t.Errorf("default: %d copies for 3, %d without a count, publish %d", def.multiCopies(3), def.multiCopies(0), def.pol.PublishCopies)
	}
	none := newTestRequester(func(p *policy.Requester) { p.MultiCopiesWithoutCount = 0 })
	if none.multiCopies(3) != 3 || none.multiCopies(0) != 0 {
		t.Errorf("no copy without a count: %d, %d", none.multiCopies(3), none.multiCopies(0))
	}
	one := newTestRequester(func(p *policy.Requester) { p.MultiCopies = policy.OneCopy })
	if one.multiCopies(3) != 1 || one.multiCopies(0) != 1 {
		t.Errorf("one copy: %d, %d", one.multiCopies(3), one.multiCopies(0))
	}
}

func TestBytesAddressIsReadUnlessIgnored(t *testing.T) {
	h := amqp.Table{ReplyToHeader: []byte("hq")}
	order := policy.DefaultResponder().ReadOrder
	if addr, src := replyAddress(newTestResponder().addressHeaders(h), "nq", order); addr != "hq" || src != SourceHeader {
		t.Errorf("default: %q from %q", addr, src)
	}
	ignoring := newTestResponder(func(p *policy.Responder) { p.BytesAddress = policy.IgnoreBytesAddress })
	if addr, src := replyAddress(ignoring.addressHeaders(h), "nq", order); addr != "nq" || src != SourceNative {
		t.Errorf("ignore bytes: %q from %q", addr, src)
	}
	if addr, _ := replyAddress(ignoring.addressHeaders(h), "", order); addr != "" {
		t.Errorf("ignore bytes, no reply_to: %q, want unanswerable", addr)
	}
	if addr, _ := replyAddress(ignoring.addressHeaders(amqp.Table{ReplyToHeader: "hq"}), "nq", order); addr != "hq" {
		t.Errorf("ignore bytes, string header: %q", addr)
	}
	if len(h) != 1 {
		t.Error("addressHeaders changed its argument")
	}
}

func TestStripPrefix(t *testing.T) {
	h := amqp.Table{"x-acemq-trace": 1, "x-custom": 2, "plain": 3}
	if got := stripPrefix(h, policy.DefaultResponder().StripPrefix); len(got) != 2 || got["x-custom"] != 2 {
		t.Errorf("default strip: %v", got)
	}
	if got := stripPrefix(h, "x-"); len(got) != 1 || got["plain"] != 3 || len(h) != 3 {
		t.Errorf("x- strip: %v (argument %v)", got, h)
	}
}

func TestFailureReplyShape(t *testing.T) {
	err := &PanicError{Value: "boom"}
	if got := newTestResponder().handlerFailureText(err); got != "PanicError: boom" {
		t.Errorf("default failure text %q", got)
	}
	qualified := newTestResponder(func(p *policy.Responder) { p.ErrorTypeName = policy.QualifiedTypeName })
	if got := qualified.handlerFailureText(err); got != "acemq.PanicError: boom" {
		t.Errorf("qualified failure text %q", got)
	}
	if b := newTestResponder().failureBody("E: x"); b != nil {
		t.Errorf("default failure body %q", b)
	}
	withBody := newTestResponder(func(p *policy.Responder) { p.FailureBody = policy.JSONFailureBody })
	if b := withBody.failureBody("E: x"); string(b) != `{"error":"E: x"}` {
		t.Errorf("json failure body %s", b)
	}
	none := newTestResponder(func(p *policy.Responder) { p.ReplyContentType = policy.NoContentType })
	if got := none.replyPublishing(&Request{MessageID: "m"}, []byte(`1`), ""); got.ContentType != "" {
		t.Errorf("no content type: %q", got.ContentType)
	}
}

func TestUnanswerableIsCountedUnlessThePolicySkipsIt(t *testing.T) {
	for _, c := range []struct {
		count bool
		want  int64
	}{{true, 1}, {false, 0}} {
		heard := 0
		r := newTestResponder(func(p *policy.Responder) { p.CountUnanswerable = c.count })
		r.opts.Hooks.Unanswerable = func(string) { heard++ }
		acks := &recordedAcks{}
		r.acceptUnanswerable(amqp.Delivery{Acknowledger: acks})
		if r.Unanswerable() != c.want || heard != 1 || acks.acks != 1 {
			t.Errorf("count %v: Unanswerable %d, heard %d, acks %+v", c.count, r.Unanswerable(), heard, acks)
		}
	}
}

func TestLastAttemptAtAnUndeliverableReplyIsAckedUnderThatPolicy(t *testing.T) {
	// The test responder has no publisher: a dead-letter would panic.
	r := newTestResponder(func(p *policy.Responder) { p.LastAttempt = policy.AckLastAttempt })
	r.opts.MaxAttempts = 3
	dead := 0
	r.opts.Hooks.DeadLettered = func(string, string) { dead++ }
	for attempt, want := range map[int]recordedAcks{2: {nacks: 1}, 3: {acks: 1}} {
		acks := &recordedAcks{}
		r.undeliverable(amqp.Delivery{Acknowledger: acks}, &Request{Attempt: attempt}, errors.New("returned"))
		if *acks != want || dead != 0 {
			t.Errorf("attempt %d: %+v, dead-lettered %d", attempt, *acks, dead)
		}
	}
}

func TestCloseWaitsOnlyForRequestsAlreadySettling(t *testing.T) {
	var s settling
	if !s.enter() {
		t.Fatal("a request could not start settling before Close")
	}
	drained, first := s.begin()
	if !first {
		t.Fatal("begin was not the first")
	}
	if s.enter() {
		t.Error("a request started settling after Close began")
	}
	select {
	case <-drained:
		t.Fatal("drained with a request still settling")
	default:
	}
	s.leave()
	<-drained // closed by the last leave; a hang fails the test by its timeout
	if _, again := s.begin(); again {
		t.Error("a second begin was the first")
	}
	var idle settling
	if d, _ := idle.begin(); d == nil {
		t.Fatal("no drained channel")
	} else {
		<-d
	}
}

func TestRequestQueueIsQuorumUnlessClassicIfMissing(t *testing.T) {
	if got := newTestResponder().requestQueueArgs(); got["x-queue-type"] != "quorum" {
		t.Errorf("default request queue args %v, want x-queue-type quorum", got)
	}
	classic := newTestResponder(func(p *policy.Responder) { p.RequestQueue = policy.ClassicIfMissing })
	if got := classic.requestQueueArgs(); len(got) != 0 {
		t.Errorf("classic_if_missing request queue args %v, want none (the server's default)", got)
	}
}
