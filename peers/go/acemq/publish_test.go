package acemq

import (
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// newTestConfirmChannel is a confirmChannel without a broker: the test plays
// the client's part, handing returns and confirms over in the order the
// client's dispatcher would.
func newTestConfirmChannel() (*confirmChannel, chan amqp.Confirmation, chan amqp.Return, chan struct{}) {
	cc := &confirmChannel{
		closes:  make(chan *amqp.Error, 1),
		byTag:   map[uint64]*unconfirmed{},
		byIdent: map[publishIdentity][]*unconfirmed{},
	}
	confirms := make(chan amqp.Confirmation, confirmBuffer)
	returns := make(chan amqp.Return, returnBuffer)
	done := make(chan struct{})
	go func() {
		cc.read(confirms, returns)
		close(done)
	}()
	return cc, confirms, returns, done
}

func outstanding(t *testing.T, cc *confirmChannel, tag uint64, key, messageID string) *unconfirmed {
	t.Helper()
	u := &unconfirmed{tag: tag, ident: publishIdentity{"", key, messageID, messageID}, verdict: make(chan error, 1)}
	if err := cc.add(u); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestAReturnEndsOnlyThePublishItBelongsTo(t *testing.T) {
	cc, confirms, returns, done := newTestConfirmChannel()
	a := outstanding(t, cc, 1, "q.routable", "m1")
	b := outstanding(t, cc, 2, "q.missing", "m2")
	c := outstanding(t, cc, 3, "q.routable", "m3")
	// The broker's order: each publish's return comes just before its ack,
	// and acks may arrive out of order.
	confirms <- amqp.Confirmation{DeliveryTag: 1, Ack: true}
	returns <- amqp.Return{RoutingKey: "q.missing", MessageId: "m2", CorrelationId: "m2", ReplyCode: 312, ReplyText: "NO_ROUTE"}
	confirms <- amqp.Confirmation{DeliveryTag: 2, Ack: true}
	confirms <- amqp.Confirmation{DeliveryTag: 3, Ack: true}
	for name, u := range map[string]*unconfirmed{"a": a, "b": b, "c": c} {
		if err := <-u.verdict; err != nil {
			t.Errorf("%s: verdict %v, want an ack", name, err)
		}
		if returned := u.returned != nil; returned != (name == "b") {
			t.Errorf("%s: returned = %v", name, returned)
		}
	}
	if b.returned != nil && b.returned.ReplyCode != 312 {
		t.Errorf("return code %d, want 312", b.returned.ReplyCode)
	}
	close(returns)
	close(confirms)
	<-done
}

func TestIdenticalPublishesTakeOneReturnEach(t *testing.T) {
	cc, confirms, returns, done := newTestConfirmChannel()
	first := outstanding(t, cc, 1, "q.missing", "same")
	second := outstanding(t, cc, 2, "q.missing", "same")
	returns <- amqp.Return{RoutingKey: "q.missing", MessageId: "same", CorrelationId: "same"}
	confirms <- amqp.Confirmation{DeliveryTag: 1, Ack: true}
	<-first.verdict
	if first.returned == nil {
		t.Error("the oldest identical publish was not marked returned")
	}
	confirms <- amqp.Confirmation{DeliveryTag: 2, Ack: true}
	<-second.verdict
	if second.returned != nil {
		t.Error("one return marked two publishes")
	}
	close(returns)
	close(confirms)
	<-done
}

func TestANackFailsItsPublishAndAClosedChannelTheRest(t *testing.T) {
	cc, confirms, returns, done := newTestConfirmChannel()
	nacked := outstanding(t, cc, 1, "q", "m1")
	pending := outstanding(t, cc, 2, "q", "m2")
	confirms <- amqp.Confirmation{DeliveryTag: 1, Ack: false}
	if err := <-nacked.verdict; !errors.Is(err, ErrNacked) {
		t.Errorf("nacked publish: %v, want ErrNacked", err)
	}
	// The client's shutdown: the reason first, then the notification
	// channels closed.
	cc.closes <- &amqp.Error{Code: 404, Reason: "NOT_FOUND - no exchange"}
	close(returns)
	close(confirms)
	<-done
	var closed *ChannelClosedError
	if err := <-pending.verdict; !errors.As(err, &closed) || closed.Reason == nil || closed.Reason.Code != 404 {
		t.Errorf("unconfirmed publish on a closed channel: %v", err)
	}
	if err := cc.add(&unconfirmed{tag: 3, verdict: make(chan error, 1)}); err == nil {
		t.Error("a closed generation took a new publish")
	}
}
