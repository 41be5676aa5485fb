package acemq

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

// newTestRequester is a Requester without a broker, with the default policy
// as changed by change: enough for addressing and reply matching, which are
// pure.
func newTestRequester(change ...func(*policy.Requester)) *Requester {
	p := policy.DefaultRequester()
	for _, c := range change {
		c(&p)
	}
	return &Requester{
		pol:     p,
		sess:    &replySession{replyQueue: "amq.gen-reply", lost: make(chan struct{})},
		calls:   map[string]*call{},
		gathers: map[string]*gathering{},
		done:    make(chan struct{}),
	}
}

func TestRequestNamesTheReplyAddressTwice(t *testing.T) {
	cases := []struct {
		name       string
		change     func(*policy.Requester)
		native     string
		header     interface{}
		headerSent bool
	}{
		{"default", func(*policy.Requester) {}, "amq.gen-reply", "amq.gen-reply", true},
		{"header only", func(p *policy.Requester) { p.WriteNativeAddress = false }, "", "amq.gen-reply", true},
		{"native only", func(p *policy.Requester) { p.WriteHeaderAddress = false }, "amq.gen-reply", nil, false},
		{"header as bytes", func(p *policy.Requester) { p.HeaderAddressAsBytes = true }, "amq.gen-reply", []byte("amq.gen-reply"), true},
	}
	for _, c := range cases {
		r := newTestRequester(c.change)
		msg := r.requestPublishing("m-1", "c-1", r.sess.replyQueue, []byte(`{}`), amqp.Table{"x-extra": "e", ReplyToHeader: "caller's"})
		if msg.ReplyTo != c.native {
			t.Errorf("%s: reply_to = %q, want %q", c.name, msg.ReplyTo, c.native)
		}
		h, sent := msg.Headers[ReplyToHeader]
		if c.headerSent {
			if b, ok := c.header.([]byte); ok {
				if got, isBytes := h.([]byte); !isBytes || string(got) != string(b) {
					t.Errorf("%s: header = %#v, want bytes %q", c.name, h, b)
				}
			} else if h != c.header {
				t.Errorf("%s: header = %#v, want %#v", c.name, h, c.header)
			}
		} else if sent && h != "caller's" {
			t.Errorf("%s: header written: %#v", c.name, h)
		}
		if msg.MessageId != "m-1" || msg.CorrelationId != "c-1" || msg.ContentType != "application/json" || msg.Headers["x-extra"] != "e" {
			t.Errorf("%s: publishing %+v", c.name, msg)
		}
	}
}

func TestRepliesGoToTheCallerWithTheirCorrelationID(t *testing.T) {
	r := newTestRequester()
	var unmatched []string
	r.opts.OnUnmatched = func(u UnmatchedReply) { unmatched = append(unmatched, u.CorrelationID) }
	first, _ := r.register("m-1")
	second, _ := r.register("m-2")

	r.dispatch(amqp.Delivery{CorrelationId: "m-2", Body: []byte(`2`)})
	r.dispatch(amqp.Delivery{CorrelationId: "m-9", Body: []byte(`9`)})
	if got := string((<-second.reply).Body); got != "2" {
		t.Errorf("second caller got %s", got)
	}
	select {
	case d := <-first.reply:
		t.Errorf("first caller was handed %s", d.Body)
	default:
	}
	// m-1 gives up; its late reply is Unmatched, not given to anyone else.
	if !r.forget("m-1") {
		t.Fatal("m-1 was not waiting")
	}
	r.dispatch(amqp.Delivery{CorrelationId: "m-1"})
	if r.Unmatched() != 2 || len(unmatched) != 2 || unmatched[0] != "m-9" || unmatched[1] != "m-1" {
		t.Errorf("Unmatched = %d, hook saw %v", r.Unmatched(), unmatched)
	}
}

func TestOldestWaiterPolicyHandsRepliesToTheOldestCaller(t *testing.T) {
	r := newTestRequester(func(p *policy.Requester) { p.MatchRepliesBy = policy.ByOldestWaiter })
	first, _ := r.register("m-1")
	r.register("m-2")
	r.dispatch(amqp.Delivery{CorrelationId: "m-2", Body: []byte(`2`)})
	if got := string((<-first.reply).Body); got != "2" {
		t.Errorf("oldest caller got %s", got)
	}
}

func TestDecodeChecksTheErrorHeaderFirst(t *testing.T) {
	r := newTestRequester()
	var v json.RawMessage
	for _, h := range []interface{}{"ScenarioFailure: no price", []byte("ScenarioFailure: no price")} {
		err := r.decode(amqp.Delivery{Headers: amqp.Table{ErrorHeader: h}}, &v)
		var failed *ResponderFailedError
		if !errors.As(err, &failed) || failed.Failure != "ScenarioFailure: no price" {
			t.Errorf("decode with %T error header = %v", h, err)
		}
	}
	var undecodable *DecodeError
	if err := r.decode(amqp.Delivery{Body: []byte("not json")}, &v); !errors.As(err, &undecodable) {
		t.Errorf("decode of a non-JSON body = %v", err)
	}
	if err := r.decode(amqp.Delivery{Body: []byte(`{"a":1}`)}, &v); err != nil || string(v) != `{"a":1}` {
		t.Errorf("decode = %s, %v", v, err)
	}

	ignoring := newTestRequester(func(p *policy.Requester) { p.ReadErrorHeader = false })
	if err := ignoring.decode(amqp.Delivery{Headers: amqp.Table{ErrorHeader: "E: x"}}, &v); !errors.As(err, &undecodable) {
		t.Errorf("without reading the error header, decode = %v, want a DecodeError", err)
	}
}

func TestReplyQueueTypeIsExplicit(t *testing.T) {
	if got := newTestRequester().replyQueueArgs(); got["x-queue-type"] != "classic" {
		t.Errorf("reply queue args %v", got)
	}
	if got := newTestRequester(func(p *policy.Requester) { p.ExplicitReplyQueueType = false }).replyQueueArgs(); got != nil {
		t.Errorf("implicit reply queue type args %v", got)
	}
}

func TestLongShortStringsAreRefusedOrTruncatedByPolicy(t *testing.T) {
	long := strings.Repeat("c", 300)
	msg := amqp.Publishing{MessageId: "m-1", CorrelationId: long}
	var e *ShortStringError
	if err := newTestRequester().checkShortStrings(&msg); !errors.As(err, &e) || msg.CorrelationId != long {
		t.Errorf("refusal = %v, correlation id of %d bytes", err, len(msg.CorrelationId))
	}
	if err := newTestRequester(func(p *policy.Requester) { p.LongShortString = policy.Truncate }).checkShortStrings(&msg); err != nil || len(msg.CorrelationId) != 255 {
		t.Errorf("truncate policy = %v, correlation id of %d bytes", err, len(msg.CorrelationId))
	}
}

func TestUndecodableReplyEndsTheCallUnlessDropped(t *testing.T) {
	notJSON := amqp.Delivery{CorrelationId: "m-1", Body: []byte("not json{")}

	r := newTestRequester()
	c, _ := r.register("m-1")
	r.dispatch(notJSON)
	var v json.RawMessage
	var undecodable *DecodeError
	if err := r.decode(<-c.reply, &v); !errors.As(err, &undecodable) {
		t.Errorf("decode = %v, want a DecodeError", err)
	}

	dropping := newTestRequester(func(p *policy.Requester) { p.UndecodableReply = policy.Drop })
	var unmatched []string
	dropping.opts.OnUnmatched = func(u UnmatchedReply) { unmatched = append(unmatched, u.CorrelationID) }
	c, _ = dropping.register("m-1")
	dropping.dispatch(notJSON)
	select {
	case d := <-c.reply:
		t.Errorf("drop policy handed over %s", d.Body)
	default:
	}
	if dropping.Unmatched() != 1 || len(unmatched) != 1 || unmatched[0] != "m-1" {
		t.Errorf("Unmatched = %d, hook saw %v", dropping.Unmatched(), unmatched)
	}
	// JSON and failure replies still reach their callers.
	dropping.dispatch(amqp.Delivery{CorrelationId: "m-1", Body: []byte(`{"a":1}`)})
	if got := string((<-c.reply).Body); got != `{"a":1}` {
		t.Errorf("JSON reply = %s", got)
	}
	c, _ = dropping.register("m-2")
	dropping.dispatch(amqp.Delivery{CorrelationId: "m-2", Headers: amqp.Table{ErrorHeader: "E: x"}})
	if d := <-c.reply; d.Headers[ErrorHeader] != "E: x" {
		t.Errorf("failure reply = %+v", d)
	}
}

func TestRequesterDefaultTimeoutComesFromThePolicy(t *testing.T) {
	opts, pol := (RequesterOptions{}).resolve()
	if opts.Timeout != DefaultTimeout || DefaultTimeout != 30*time.Second || pol.DefaultTimeoutMS != 30000 {
		t.Errorf("zero options resolve to %s (policy %d ms)", opts.Timeout, pol.DefaultTimeoutMS)
	}
	p := policy.DefaultRequester()
	p.DefaultTimeoutMS = 10000
	if opts, _ := policy.WithRequester(RequesterOptions{}, p).resolve(); opts.Timeout != 10*time.Second {
		t.Errorf("a policy default of 10000 ms resolves to %s", opts.Timeout)
	}
	if opts, _ := policy.WithRequester(RequesterOptions{Timeout: time.Second}, p).resolve(); opts.Timeout != time.Second {
		t.Errorf("a timeout of 1s resolves to %s", opts.Timeout)
	}
}

func TestTypeTravelsAsThePropertyUnlessThePolicyMovesIt(t *testing.T) {
	r := newTestRequester()
	msg := r.requestPublishing("m-1", "m-1", r.sess.replyQueue, nil, nil)
	r.setType(&msg, "quote.requested")
	if _, inHeader := msg.Headers["type"]; msg.Type != "quote.requested" || inHeader {
		t.Errorf("type property %q, headers %v", msg.Type, msg.Headers)
	}
	none := r.requestPublishing("m-1", "m-1", r.sess.replyQueue, nil, nil)
	r.setType(&none, "")
	if _, inHeader := none.Headers["type"]; none.Type != "" || inHeader {
		t.Errorf("no type: property %q, headers %v", none.Type, none.Headers)
	}
	header := newTestRequester(func(p *policy.Requester) { p.TypeCarrier = policy.TypeHeader })
	moved := header.requestPublishing("m-1", "m-1", r.sess.replyQueue, nil, nil)
	header.setType(&moved, "quote.requested")
	if moved.Type != "" || moved.Headers["type"] != "quote.requested" {
		t.Errorf("header policy: property %q, headers %v", moved.Type, moved.Headers)
	}
}

func TestReturnsFailACallUnlessNotHonoured(t *testing.T) {
	returned := &ReturnedError{Code: 312, Text: "NO_ROUTE"}
	var e *ReturnedError
	if err := returnsHonoured(returned, true); !errors.As(err, &e) {
		t.Errorf("honoured return = %v", err)
	}
	if err := returnsHonoured(returned, false); err != nil {
		t.Errorf("ignored return = %v", err)
	}
	if err := returnsHonoured(ErrNacked, false); err != ErrNacked {
		t.Errorf("a nack with returns ignored = %v", err)
	}
}

func TestUnmatchedNamesBothIDs(t *testing.T) {
	r := newTestRequester()
	var seen []UnmatchedReply
	r.opts.OnUnmatched = func(u UnmatchedReply) { seen = append(seen, u) }
	r.dispatch(reply("g-gone", "c-1", `1`))
	r.dispatch(amqp.Delivery{CorrelationId: "m-gone", Body: []byte(`2`)})
	want := []UnmatchedReply{{CorrelationID: "c-1", ResponseMessageID: "g-gone"}, {CorrelationID: "m-gone"}}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("unmatched %+v, want %+v", seen, want)
	}
}

func TestGatherCorrelationDefaultsToTheRequestMessageID(t *testing.T) {
	r := newTestRequester()
	r.opts.Timeout = DefaultTimeout
	got := r.resolveGather(GatherOptions{MessageID: "g-1"})
	if got.CorrelationID != "g-1" || got.Timeout != DefaultTimeout {
		t.Errorf("resolved %+v", got)
	}
	if got := r.resolveGather(GatherOptions{MessageID: "g-1", CorrelationID: "c-1"}); got.CorrelationID != "c-1" {
		t.Errorf("given correlation id resolved to %q", got.CorrelationID)
	}
	none := newTestRequester(func(p *policy.Requester) { p.GatherDefaultCorrelation = policy.NoDefaultCorrelation })
	if got := none.resolveGather(GatherOptions{MessageID: "g-1"}); got.CorrelationID != "" {
		t.Errorf("no-default policy resolved to %q", got.CorrelationID)
	}
}

func TestAGatherEndingAtItsTimeoutIsNotCounted(t *testing.T) {
	for _, c := range []struct {
		name  string
		count bool
	}{{"default", false}, {"counted", true}} {
		r := newTestRequester(func(p *policy.Requester) { p.CountGatherTimeouts = c.count })
		// A budget (no count) and a shortfall (a count of 2, one reply).
		budget := startGather(t, r, "g-a", 0, nil)
		if replies, err := r.await(context.Background(), budget, time.Millisecond); err != nil || len(replies) != 0 {
			t.Fatalf("%s: budget gather = %s, %v", c.name, replies, err)
		}
		short := startGather(t, r, "g-b", 2, nil)
		r.dispatch(reply("g-b", "g-b", `1`))
		var shortfall *RequestTimeoutError
		if _, err := r.await(context.Background(), short, time.Millisecond); !errors.As(err, &shortfall) {
			t.Fatalf("%s: shortfall gather = %v", c.name, err)
		}
		want := int64(0)
		if c.count {
			want = 2
		}
		if r.TimedOut() != want {
			t.Errorf("%s: TimedOut = %d, want %d", c.name, r.TimedOut(), want)
		}
	}
}

func TestClosingEndsPendingCallsUnlessThePolicyWaits(t *testing.T) {
	r := newTestRequester()
	g := startGather(t, r, "g-a", 0, nil)
	close(r.done)
	// The gather's budget is far beyond the test: only the close ends it.
	if _, err := r.await(context.Background(), g, time.Hour); !errors.Is(err, ErrClosed) {
		t.Errorf("a gather pending at close = %v, want ErrClosed", err)
	}
	if r.TimedOut() != 0 {
		t.Errorf("TimedOut = %d after close", r.TimedOut())
	}

	waiting := newTestRequester(func(p *policy.Requester) { p.PendingAtClose = policy.WaitTimeout })
	g = startGather(t, waiting, "g-a", 1, nil)
	close(waiting.done)
	var shortfall *RequestTimeoutError
	if _, err := waiting.await(context.Background(), g, time.Millisecond); !errors.As(err, &shortfall) {
		t.Errorf("under the wait policy a gather pending at close = %v, want its timeout", err)
	}
}

func TestARequestGivesUpAtItsTimeoutUnlessLate(t *testing.T) {
	opts, _ := (RequesterOptions{}).resolve()
	if got := newTestRequester().requestDeadline(opts.Timeout); got != 30*time.Second {
		t.Errorf("default: gives up after %s, want 30s", got)
	}
	late := newTestRequester(func(p *policy.Requester) { p.RequestDeadline = policy.LateDeadline })
	for timeout, want := range map[time.Duration]time.Duration{opts.Timeout: 45 * time.Second, time.Second: 1500 * time.Millisecond} {
		if got := late.requestDeadline(timeout); got != want {
			t.Errorf("late, timeout %s: gives up after %s, want %s", timeout, got, want)
		}
	}
	// Still the timeout outcome, still counted.
	var v json.RawMessage
	if err := late.timedOutCall("m", time.Second, &v); !errors.Is(err, ErrTimedOut) || late.TimedOut() != 1 {
		t.Errorf("late: %v, TimedOut %d", err, late.TimedOut())
	}
}

// Two replies racing for one call: one is its reply, the other Unmatched;
// a reply after the call gave up is Unmatched (RR-8.2).
func TestRepliesRacingForOneCall(t *testing.T) {
	for round := 0; round < 50; round++ {
		r := newTestRequester()
		c, _ := r.register("m-1")
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); r.dispatch(amqp.Delivery{CorrelationId: "m-1", Body: []byte(`1`)}) }()
		}
		wg.Wait()
		if len(c.reply) != 1 || r.Unmatched() != 1 {
			t.Fatalf("round %d: %d replies handed over, Unmatched %d", round, len(c.reply), r.Unmatched())
		}
	}
	r := newTestRequester()
	r.register("m-2")
	if !r.forget("m-2") {
		t.Fatal("m-2 was not waiting")
	}
	r.dispatch(amqp.Delivery{CorrelationId: "m-2"})
	if r.Unmatched() != 1 {
		t.Errorf("a reply after the timeout: Unmatched %d", r.Unmatched())
	}
}
