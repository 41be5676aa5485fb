package acemq

import (
	"encoding/json"
	"testing"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

func reply(responseID, correlationID, body string) amqp.Delivery {
	return amqp.Delivery{CorrelationId: correlationID, Headers: amqp.Table{ResponseMessageIDHeader: responseID}, Body: []byte(body)}
}

func startGather(t *testing.T, r *Requester, id string, expected int, onReply func(json.RawMessage)) *gathering {
	t.Helper()
	g := &gathering{id: id, expected: expected, onReply: onReply, full: make(chan struct{})}
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

func TestGatherKeepsFailureRepliesOut(t *testing.T) {
	r := newTestRequester()
	g := startGather(t, r, "g-a", 0, nil)
	d := reply("g-a", "g-a", ``)
	d.Headers[ErrorHeader] = "ScenarioFailure: no"
	r.dispatch(d)
	if got := r.endGather(g); len(got) != 0 || r.Unmatched() != 1 {
		t.Errorf("replies %s, Unmatched %d", got, r.Unmatched())
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
