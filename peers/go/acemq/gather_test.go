package acemq

import (
	"encoding/json"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func reply(responseID, correlationID, body string) amqp.Delivery {
	return amqp.Delivery{CorrelationId: correlationID, Headers: amqp.Table{ResponseMessageIDHeader: responseID}, Body: []byte(body)}
}

func startGather(t *testing.T, r *Requester, id, correlationID string, expected int, onReply func(json.RawMessage)) *gathering {
	t.Helper()
	g := &gathering{id: id, correlationID: correlationID, expected: expected, onReply: onReply, full: make(chan struct{})}
	if err := r.registerGather(g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGatherRepliesAreMatchedByResponseMessageID(t *testing.T) {
	r := newTestRequester(ProfileCurrent, NoMutant)
	var seen []string
	a := startGather(t, r, "g-a", "c-1", 2, func(m json.RawMessage) { seen = append(seen, string(m)) })
	b := startGather(t, r, "g-b", "c-1", 0, nil)

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
	r := newTestRequester(ProfileCurrent, NoMutant)
	g := startGather(t, r, "g-a", "c-1", 0, nil)
	d := reply("g-a", "g-a", ``)
	d.Headers[ErrorHeader] = "ScenarioFailure: no"
	r.dispatch(d)
	if got := r.endGather(g); len(got) != 0 || r.Unmatched() != 1 {
		t.Errorf("replies %s, Unmatched %d", got, r.Unmatched())
	}
}

func TestGatherByCorrelationIDMutantMatchesTheBusinessID(t *testing.T) {
	r := newTestRequester(ProfileCurrent, MutantGatherByCorrID)
	a := startGather(t, r, "g-a", "c-1", 0, nil)
	b := startGather(t, r, "g-b", "c-1", 0, nil)
	r.dispatch(reply("g-b", "c-1", `1`))
	if got := r.endGather(a); len(got) != 1 {
		t.Errorf("the mutant should give g-b's reply to g-a, got %s", got)
	}
	r.endGather(b)
}
