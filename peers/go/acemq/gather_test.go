package acemq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

func reply(responseID, correlationID, body string) amqp.Delivery {
	return amqp.Delivery{CorrelationId: correlationID, Headers: amqp.Table{ResponseMessageIDHeader: responseID}, Body: []byte(body)}
}

func startGather(t *testing.T, r *Requester, id string, expected int, onReply func(json.RawMessage)) *gathering {
	t.Helper()
	g := r.newGathering(id, expected, onReply)
	g.sess = r.sess
	if err := r.registerGather(g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGatherRepliesAreMatchedByResponseMessageID(t *testing.T) {
	r := newTestRequester()
	var seen []string
	a := startGather(t, r, "g-a", 2, func(m json.RawMessage) { seen = append(seen, string(m)) })
	b := startGather(t, r, "g-b", 0, nil)

	r.dispatch(reply("g-a", "c-1", `1`))
	r.dispatch(reply("g-b", "c-1", `"b"`))
	r.dispatch(amqp.Delivery{CorrelationId: "g-a", Headers: amqp.Table{ResponseMessageIDHeader: []byte("g-a")}, Body: []byte(`2`)})
	select {
	case <-a.full:
	default:
		t.Fatal("gather a did not resolve at its count")
	}
	if got := r.endGather(a); len(got) != 2 || string(got[0]) != "1" || string(got[1]) != "2" {
		t.Errorf("gather a = %s", got)
	}
	if len(seen) != 2 {
		t.Errorf("onReply saw %v", seen)
	}
	// After it ended, a further reply is Unmatched and never joins gather b.
	r.dispatch(reply("g-a", "c-1", `3`))
	if got := r.endGather(b); len(got) != 1 || string(got[0]) != `"b"` {
		t.Errorf("gather b = %s", got)
	}
	if r.Unmatched() != 1 {
		t.Errorf("Unmatched = %d, want 1", r.Unmatched())
	}
}

func failureReply(responseID string) amqp.Delivery {
	d := reply(responseID, responseID, ``)
	d.Headers[ErrorHeader] = "ScenarioFailure: no"
	return d
}

// failureGather runs a gather of count 1 that gets a failure reply, then a
// real one, then (once that ended it) a late failure reply, and says what the
// gather and the requester made of them.
func failureGather(t *testing.T, r *Requester) (replies []json.RawMessage, seen []string, fullAfterFailure bool, unmatched int64, heard []UnmatchedReply) {
	t.Helper()
	r.opts.OnUnmatched = func(u UnmatchedReply) { heard = append(heard, u) }
	g := startGather(t, r, "g-a", 1, func(m json.RawMessage) { seen = append(seen, string(m)) })
	r.dispatch(failureReply("g-a"))
	select {
	case <-g.full:
		fullAfterFailure = true
	default:
		r.dispatch(reply("g-a", "g-a", `1`))
		<-g.full
	}
	replies = r.endGather(g)
	return replies, seen, fullAfterFailure, r.Unmatched(), heard
}

func TestGatherKeepsFailureRepliesOut(t *testing.T) {
	// SG-10: not a reply, not for onReply, not toward the count; dropped,
	// counted Unmatched and heard of with its ids.
	replies, seen, full, unmatched, heard := failureGather(t, newTestRequester())
	if len(replies) != 1 || string(replies[0]) != "1" || len(seen) != 1 || full || unmatched != 1 {
		t.Errorf("default: replies %s, onReply %v, full after the failure %v, Unmatched %d", replies, seen, full, unmatched)
	}
	if want := (UnmatchedReply{CorrelationID: "g-a", ResponseMessageID: "g-a"}); len(heard) != 1 || heard[0] != want {
		t.Errorf("default: heard %+v, want %+v", heard, want)
	}

	// Kept: a null reply, handed to onReply and filling the count.
	keeping := newTestRequester(func(p *policy.Requester) { p.GatherFailureReply = policy.KeepGatherFailure })
	replies, seen, full, unmatched, heard = failureGather(t, keeping)
	if len(replies) != 1 || string(replies[0]) != "null" || len(seen) != 1 || seen[0] != "null" || !full || unmatched != 0 || len(heard) != 0 {
		t.Errorf("keep: replies %s, onReply %v, full %v, Unmatched %d, heard %v", replies, seen, full, unmatched, heard)
	}

	// Not counted: kept out as it should be, heard of, not counted.
	uncounted := newTestRequester(func(p *policy.Requester) { p.CountGatherFailures = false })
	replies, seen, full, unmatched, heard = failureGather(t, uncounted)
	if len(replies) != 1 || string(replies[0]) != "1" || len(seen) != 1 || full || unmatched != 0 || len(heard) != 1 {
		t.Errorf("not counted: replies %s, onReply %v, full %v, Unmatched %d, heard %v", replies, seen, full, unmatched, heard)
	}
}

func TestFailureAndStrayReplyPoliciesAreIndependent(t *testing.T) {
	// SG-8.1's knob leaves a failure reply to a pending gather counted...
	r := newTestRequester(func(p *policy.Requester) { p.CountGatherUnmatched = false })
	g := startGather(t, r, "g-a", 0, nil)
	r.dispatch(failureReply("g-a"))
	if got := r.endGather(g); len(got) != 0 || r.Unmatched() != 1 {
		t.Errorf("SG-8.1 mutant: gather %s, Unmatched %d; want none and 1", got, r.Unmatched())
	}
	// ...and SG-10.2's leaves a reply for no pending gather counted (a
	// failure one too: it addresses no pending gather).
	r = newTestRequester(func(p *policy.Requester) { p.CountGatherFailures = false })
	r.dispatch(reply("g-gone", "g-gone", `1`))
	r.dispatch(failureReply("g-gone"))
	if r.Unmatched() != 2 {
		t.Errorf("SG-10.2 mutant: Unmatched %d for two replies to no pending gather, want 2", r.Unmatched())
	}
	// A stray failure reply a stray policy would hand to another gather is
	// still the stray's business: kept out of it and counted by SG-8.
	stray := newTestRequester(func(p *policy.Requester) {
		p.GatherStrayReply = policy.StrayOldestGather
		p.GatherFailureReply = policy.KeepGatherFailure
	})
	g = startGather(t, stray, "g-a", 0, nil)
	stray.dispatch(failureReply("g-other"))
	if got := stray.endGather(g); len(got) != 0 || stray.Unmatched() != 1 {
		t.Errorf("stray failure reply: gather %s, Unmatched %d", got, stray.Unmatched())
	}
}

// Replies racing a gather's end: whichever hold of the lock comes first
// decides, so each reply is in the result or Unmatched, never lost.
func TestRepliesAfterAGatherEndedAreUnmatched(t *testing.T) {
	for round := 0; round < 50; round++ {
		r := newTestRequester()
		heard := int64(0)
		var mu sync.Mutex
		r.opts.OnUnmatched = func(UnmatchedReply) { mu.Lock(); heard++; mu.Unlock() }
		g := startGather(t, r, "g-a", 3, nil)
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r.dispatch(reply("g-a", "g-a", fmt.Sprint(i)))
			}(i)
		}
		wg.Wait()
		<-g.full
		if got := r.endGather(g); len(got) != 3 || len(g.replies) != 3 || r.Unmatched() != 5 || heard != 5 {
			t.Fatalf("round %d: result %d, gather kept %d, Unmatched %d, heard %d; want 3, 3, 5, 5", round, len(got), len(g.replies), r.Unmatched(), heard)
		}
	}
	// A count-less gather whose timeout ended it: a reply after that is
	// Unmatched, not added to what the caller already has.
	r := newTestRequester()
	g := startGather(t, r, "g-b", 0, nil)
	r.dispatch(reply("g-b", "g-b", `1`))
	got, err := r.await(context.Background(), g, time.Millisecond)
	r.dispatch(reply("g-b", "g-b", `2`))
	if err != nil || len(got) != 1 || len(g.replies) != 1 || r.Unmatched() != 1 {
		t.Errorf("after the budget: %s, %v, gather kept %d, Unmatched %d", got, err, len(g.replies), r.Unmatched())
	}
}

// timedGather is how long a gather of the given count and timeout takes when
// one reply arrives after replyAfter, and its error.
func timedGather(t *testing.T, r *Requester, id string, expected int, timeout, replyAfter time.Duration) (time.Duration, error) {
	t.Helper()
	started := time.Now() // before the gather is armed: its timer runs from there
	g := startGather(t, r, id, expected, nil)
	go func() {
		time.Sleep(replyAfter)
		r.dispatch(reply(id, id, `1`))
	}()
	_, err := r.await(context.Background(), g, timeout)
	return time.Since(started), err
}

func TestAGatherEndsAtItsTimeoutUnlessRepliesRestartIt(t *testing.T) {
	// 250 ms of room each side: with 80 ms (200 ms timeout, reply at 120 ms) an image build on a
	// loaded machine (load average over 14) saw the restarting gather end "early".
	const timeout, replyAfter = 500 * time.Millisecond, 250 * time.Millisecond
	var shortfall *RequestTimeoutError
	fixed := newTestRequester()
	restarting := newTestRequester(func(p *policy.Requester) { p.GatherDeadline = policy.RestartPerReply })
	// A budget (no count) and a shortfall (a count of 2).
	for _, expected := range []int{0, 2} {
		took, err := timedGather(t, fixed, fmt.Sprint("f-", expected), expected, timeout, replyAfter)
		if took >= replyAfter+timeout || (expected > 0) != errors.As(err, &shortfall) {
			t.Errorf("fixed, count %d: ended after %s (%v); want at %s", expected, took, err, timeout)
		}
		took, err = timedGather(t, restarting, fmt.Sprint("r-", expected), expected, timeout, replyAfter)
		if took < replyAfter+timeout || (expected > 0) != errors.As(err, &shortfall) {
			t.Errorf("restart per reply, count %d: ended after %s (%v); want %s or later", expected, took, err, replyAfter+timeout)
		}
	}
	if fixed.newGathering("g", 0, nil).kept != nil {
		t.Error("a fixed deadline listens for replies")
	}
}

func TestGatherDemuxByCorrelationIDPolicy(t *testing.T) {
	// A reply whose correlation_id is the requestMessageId (as every acemq
	// responder sends it) still finds its gather under that policy.
	r := newTestRequester(func(p *policy.Requester) { p.GatherDemuxBy = policy.DemuxByCorrelationID })
	a := startGather(t, r, "g-a", 0, nil)
	r.dispatch(reply("g-a", "g-a", `1`))
	if got := r.endGather(a); len(got) != 1 {
		t.Errorf("gather a = %s, want its reply", got)
	}

	// A bus responder sets correlation_id to the business id: the policy
	// finds no gather and counts the reply Unmatched.
	b := startGather(t, r, "g-b", 0, nil)
	r.dispatch(reply("g-b", "c-1", `2`))
	if got := r.endGather(b); len(got) != 0 || r.Unmatched() != 1 {
		t.Errorf("gather b = %s, Unmatched %d; want none and 1", got, r.Unmatched())
	}

	// By default the responseMessageId header decides.
	ok := newTestRequester()
	c := startGather(t, ok, "g-c", 0, nil)
	ok.dispatch(reply("g-c", "c-1", `3`))
	if got := ok.endGather(c); len(got) != 1 {
		t.Errorf("gather c = %s, want its reply", got)
	}
}

func TestStrayReplyToOldestGatherPolicy(t *testing.T) {
	r := newTestRequester(func(p *policy.Requester) { p.GatherStrayReply = policy.StrayOldestGather })
	older := startGather(t, r, "g-a", 2, nil)
	newer := startGather(t, r, "g-b", 0, nil)
	c, _ := r.register("m-1")

	r.dispatch(reply("another-gather", "c-1", `999`))
	r.dispatch(reply("g-b", "c-1", `1`))
	// A call's reply still goes to its caller.
	r.dispatch(reply("m-1", "m-1", `2`))
	if got := string((<-c.reply).Body); got != "2" {
		t.Errorf("caller got %s", got)
	}
	if got := r.endGather(older); len(got) != 1 || string(got[0]) != "999" {
		t.Errorf("oldest gather = %s, want the stray reply", got)
	}
	if got := r.endGather(newer); len(got) != 1 || string(got[0]) != "1" {
		t.Errorf("newer gather = %s", got)
	}
	// With no gather pending, a stray reply is Unmatched as usual.
	r.dispatch(reply("another-gather", "c-1", `3`))
	if r.Unmatched() != 1 {
		t.Errorf("Unmatched = %d, want 1", r.Unmatched())
	}

	strict := newTestRequester()
	g := startGather(t, strict, "g-a", 2, nil)
	strict.dispatch(reply("another-gather", "c-1", `999`))
	if got := strict.endGather(g); len(got) != 0 || strict.Unmatched() != 1 {
		t.Errorf("gather = %s, Unmatched %d; want none and 1", got, strict.Unmatched())
	}
}
