package acemq

// RR-20 without a broker: what a lost connection does to the calls it
// carried, how a requester that is down or recovering takes a new call, the
// reconnect backoff, and a responder's ack timing and settle gate. The
// reconnection itself runs against the real broker in the interop scenarios.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

var forced = &amqp.Error{Code: 320, Reason: "CONNECTION_FORCED - Closed via management plugin"}

// pendingCall registers a call on r's session and waits for it on a
// goroutine; the returned channel gives its end.
func pendingCall(t *testing.T, r *Requester, id string, timeout time.Duration) <-chan error {
	t.Helper()
	c, err := r.register(id)
	if err != nil {
		t.Fatal(err)
	}
	s := r.sess
	ended := make(chan error, 1)
	go func() {
		defer r.pending.Done()
		var v json.RawMessage
		ended <- r.waitReply(context.Background(), s, id, c, timeout, &v)
	}()
	return ended
}

func TestACallPendingWhenItsConnectionIsLostEndsAtOnceUncounted(t *testing.T) {
	r := newTestRequester()
	ended := pendingCall(t, r, "m-1", time.Hour)
	r.lose(r.sess, forced)
	var err error
	select {
	case err = <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end at the loss (its timeout is an hour)")
	}
	var lost *ConnectionLostError
	if !errors.As(err, &lost) || !errors.Is(err, ErrConnectionLost) || errors.Is(err, ErrTimedOut) {
		t.Fatalf("the call ended with %v, want a *ConnectionLostError", err)
	}
	if got, want := lost.ReasonText(), "320 CONNECTION_FORCED - Closed via management plugin"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	if r.TimedOut() != 0 {
		t.Errorf("TimedOut = %d, want 0", r.TimedOut())
	}
	if r.ReplyQueue() != "" {
		t.Errorf("a lost requester names the reply queue %q", r.ReplyQueue())
	}
}

func TestUnderTheWaitPolicyALostCallWaitsOutItsTimeout(t *testing.T) {
	r := newTestRequester(func(p *policy.Requester) { p.OnConnectionLost = policy.WaitLost })
	ended := pendingCall(t, r, "m-1", 50*time.Millisecond)
	r.lose(r.sess, forced)
	if err := <-ended; !errors.Is(err, ErrTimedOut) {
		t.Fatalf("the call ended with %v, want its timeout", err)
	}
	if r.TimedOut() != 1 {
		t.Errorf("TimedOut = %d, want 1", r.TimedOut())
	}
}

func TestAGatherPendingWhenItsConnectionIsLostEndsAtOnce(t *testing.T) {
	r := newTestRequester()
	g := startGather(t, r, "g-a", 2, nil)
	r.dispatch(reply("g-a", "g-a", `1`))
	r.lose(r.sess, forced)
	// The gather's timeout is far beyond the test: only the loss ends it.
	_, err := r.await(context.Background(), g, time.Hour)
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("the gather ended with %v, want a *ConnectionLostError", err)
	}
	if r.TimedOut() != 0 {
		t.Errorf("TimedOut = %d", r.TimedOut())
	}
	// A reply after the loss finds no gather: Unmatched.
	r.dispatch(reply("g-a", "g-a", `2`))
	if r.Unmatched() != 1 {
		t.Errorf("Unmatched = %d, want 1", r.Unmatched())
	}
}

func TestOnlyTheCallsOfTheLostSessionEnd(t *testing.T) {
	r := newTestRequester()
	old := r.sess
	// Recovered meanwhile: a new session carries the next call.
	r.sess = &replySession{replyQueue: "amq.gen-new", lost: make(chan struct{})}
	ended := pendingCall(t, r, "m-new", time.Hour)
	r.lose(old, forced)
	select {
	case err := <-ended:
		t.Fatalf("a call on the new session ended with %v at the old one's loss", err)
	default:
	}
	if r.ReplyQueue() != "amq.gen-new" {
		t.Errorf("ReplyQueue %q after an old session's loss", r.ReplyQueue())
	}
	r.dispatch(amqp.Delivery{CorrelationId: "m-new", Body: []byte(`7`)})
	if err := <-ended; err != nil {
		t.Errorf("the new session's call: %v", err)
	}
}

func TestACallWhileDownEndsAtOnceUnlessTheRequesterRecovers(t *testing.T) {
	// Lost and not recovering (a caller's connection, or the policy): at once.
	for name, r := range map[string]*Requester{
		"caller's connection": newTestRequester(),
		"no recovery": func() *Requester {
			r := newTestRequester(func(p *policy.Requester) { p.RecoverConnection = false })
			r.config = &ConnectionConfig{}
			return r
		}(),
	} {
		// As lose leaves it (which would also close the connection).
		r.sess, r.up, r.lastLoss = nil, make(chan struct{}), forced
		started := time.Now()
		if _, err := r.session(context.Background(), 3*time.Second); !errors.Is(err, ErrConnectionLost) {
			t.Errorf("%s: %v, want a *ConnectionLostError", name, err)
		}
		if time.Since(started) > time.Second {
			t.Errorf("%s: waited %s", name, time.Since(started))
		}
	}

	// Recovering: the call waits for the new session...
	r := newTestRequester()
	r.config = &ConnectionConfig{}
	r.sess, r.up, r.lastLoss = nil, make(chan struct{}), forced
	got := make(chan *replySession, 1)
	go func() {
		s, err := r.session(context.Background(), time.Hour)
		if err != nil {
			t.Errorf("recovering: %v", err)
		}
		got <- s
	}()
	next := &replySession{replyQueue: "amq.gen-next", lost: make(chan struct{})}
	r.mu.Lock()
	r.sess = next
	close(r.up)
	r.mu.Unlock()
	if s := <-got; s != next {
		t.Errorf("recovering: the call got session %v", s)
	}
	// ...within its timeout, past which it ends as lost, not as a timeout.
	r.sess, r.up = nil, make(chan struct{})
	if _, err := r.session(context.Background(), 20*time.Millisecond); !errors.Is(err, ErrConnectionLost) {
		t.Errorf("recovering past the timeout: %v", err)
	}
	if r.TimedOut() != 0 {
		t.Errorf("TimedOut = %d", r.TimedOut())
	}
}

func TestAPublishTheLossLeftUnconfirmedIsNeverSent(t *testing.T) {
	r := newTestRequester()
	s := r.sess
	refused := &ReturnedError{Code: 312, Text: "NO_ROUTE"}
	if err := sendError(s, refused); err != refused {
		t.Errorf("a live session's returned publish became %v", err)
	}
	r.lose(s, forced)
	err := sendError(s, &ChannelClosedError{Reason: forced})
	var lost *ConnectionLostError
	if !errors.As(err, &lost) || lost.Reason != forced {
		t.Errorf("an unconfirmed publish at the loss: %v, want a *ConnectionLostError", err)
	}
}

func TestReconnectBackoffIsBounded(t *testing.T) {
	if d := retryDelay(0); d <= 0 || d > time.Second {
		t.Errorf("first retry after %s, want within 1 s", d)
	}
	prev := time.Duration(0)
	for attempt := 0; attempt < 50; attempt++ {
		d := retryDelay(attempt)
		if d < prev || d > 5*time.Second {
			t.Fatalf("attempt %d waits %s after %s: want non-decreasing, at most 5 s", attempt, d, prev)
		}
		prev = d
	}
	if prev != 5*time.Second {
		t.Errorf("the backoff settles at %s, want 5 s", prev)
	}
}

func TestRedialStopsWhenTheOwnerCloses(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	opened := false
	if (ConnectionConfig{URLs: []string{"amqp://guest:guest@127.0.0.1:1/"}}).redial(stop, 0, func(*amqp.Connection, int) error {
		opened = true
		return nil
	}) || opened {
		t.Error("redial went on after stop closed")
	}
}

// acks records what a request's settling did.
type acks struct{ acked, nacked int }

func (a *acks) Ack(uint64, bool) error        { a.acked++; return nil }
func (a *acks) Nack(uint64, bool, bool) error { a.nacked++; return nil }
func (a *acks) Reject(uint64, bool) error     { a.nacked++; return nil }

func TestARequestIsAckedAfterHandlingUnlessThePolicyAcksOnDelivery(t *testing.T) {
	after := &acks{}
	d := amqp.Delivery{Acknowledger: after, MessageId: "m-1"}
	newTestResponder().ackOnDelivery(&d)
	if after.acked != 0 {
		t.Fatalf("default: acked %d times on delivery", after.acked)
	}
	d.Nack(false, true)
	if after.nacked != 1 {
		t.Errorf("default: a requeue after handling did not reach the channel")
	}

	early := &acks{}
	d = amqp.Delivery{Acknowledger: early, MessageId: "m-2"}
	newTestResponder(func(p *policy.Responder) { p.AckTiming = policy.AckOnDelivery }).ackOnDelivery(&d)
	if early.acked != 1 {
		t.Fatalf("on_delivery: acked %d times on delivery, want 1", early.acked)
	}
	// Settled already: what settling does later never reaches the channel
	// (a second ack would be a channel error).
	d.Ack(false)
	d.Nack(false, true)
	if early.acked != 1 || early.nacked != 0 {
		t.Errorf("on_delivery: later settling reached the channel: %+v", *early)
	}
}

func TestARequestOfALostSessionIsNotSettled(t *testing.T) {
	r := newTestResponder()
	live := &requestSession{lost: make(chan struct{})}
	ran := 0
	r.settle(live, func() { ran++ })
	if ran != 1 {
		t.Fatalf("a live session's request was not settled")
	}
	lost := &requestSession{lost: make(chan struct{})}
	close(lost.lost)
	drained, _ := lost.gate.begin()
	r.settle(lost, func() { ran++ })
	if ran != 1 {
		t.Errorf("a lost session's request was settled: its reply would answer it twice")
	}
	select {
	case <-drained:
	default:
		t.Errorf("a lost session with nothing being settled is not drained")
	}
}
