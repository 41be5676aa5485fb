package acemq

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrNacked means the broker refused to take responsibility for a publish.
var ErrNacked = errors.New("acemq: the broker nacked the publish")

// ReturnedError means the broker returned a mandatory publish: no queue took
// it. The broker still acks such a publish, so a confirm alone proves nothing.
type ReturnedError struct {
	Exchange   string
	RoutingKey string
	Code       uint16
	Text       string
}

func (e *ReturnedError) Error() string {
	return fmt.Sprintf("returned by the broker: %d %s (exchange %q, routing key %q)", e.Code, e.Text, e.Exchange, e.RoutingKey)
}

// ChannelClosedError means the channel closed before the broker confirmed a
// publish, so nobody knows whether it arrived.
type ChannelClosedError struct {
	Reason *amqp.Error
}

func (e *ChannelClosedError) Error() string {
	if e.Reason == nil {
		return "channel closed before the publish was confirmed"
	}
	return "channel closed before the publish was confirmed: " + e.Reason.Error()
}

// publisher publishes mandatory messages on its own confirm-mode channel.
// Many publishes can be outstanding at once; each waits only for its own
// verdict.
//
// Confirms are tracked per delivery tag: a publish's tag is the channel's
// next publish sequence number, taken under the same lock as the publish
// itself, and amqp091-go hands a multiple ack to NotifyPublish as one
// confirmation per tag. A basic.return carries no delivery tag, but it
// carries the message: it is tied to the oldest unconfirmed publish with the
// same exchange, routing key, message_id and correlation_id. The broker sends
// the return before that publish's ack, and amqp091-go dispatches both from
// one goroutine in that order, so the reader below drains every return
// already handed over before it settles a confirm. Publishes that look alike
// route alike, so which of several identical ones is marked does not matter.
type publisher struct {
	conn *amqp.Connection

	// mu serialises the sending of publishes (and the channel's reopening)
	// so that a publish's delivery tag is exact; it is never held while
	// waiting for a confirm.
	mu sync.Mutex
	cc *confirmChannel
}

// confirmChannel is one channel's generation of unconfirmed publishes. A
// publish to a missing exchange closes the channel; the publisher then opens
// a new generation, and the old one fails whatever it still holds.
type confirmChannel struct {
	ch     *amqp.Channel
	closes chan *amqp.Error

	mu      sync.Mutex
	byTag   map[uint64]*unconfirmed
	byIdent map[publishIdentity][]*unconfirmed // oldest first
	ended   error                              // set once the channel closed
}

type publishIdentity struct {
	exchange, key, messageID, correlationID string
}

type unconfirmed struct {
	tag      uint64
	ident    publishIdentity
	returned *amqp.Return
	verdict  chan error // buffered 1: the reader never blocks on it
}

// Buffers of the client's notification channels: the client blocks its
// connection's reader while a listener is full, so they are drained at once.
const (
	confirmBuffer = 256
	returnBuffer  = 64
)

func newPublisher(conn *amqp.Connection) (*publisher, error) {
	p := &publisher{conn: conn}
	if err := p.open(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *publisher) open() error {
	ch, err := p.conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return err
	}
	cc := &confirmChannel{
		ch:      ch,
		closes:  ch.NotifyClose(make(chan *amqp.Error, 1)),
		byTag:   map[uint64]*unconfirmed{},
		byIdent: map[publishIdentity][]*unconfirmed{},
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, returnBuffer))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, confirmBuffer))
	go cc.read(confirms, returns)
	p.cc = cc
	return nil
}

// publish sends msg mandatory and returns nil only when the broker acked it
// without returning it first: a returned publish is a *ReturnedError.
func (p *publisher) publish(exchange, key string, msg amqp.Publishing) error {
	return p.send(exchange, key, msg, true)
}

// publishNotMandatory sends msg without mandatory, still confirmed: a reply to
// a direct reply-to address, which the broker returns whether or not it was
// delivered (RR-14.5).
func (p *publisher) publishNotMandatory(exchange, key string, msg amqp.Publishing) error {
	return p.send(exchange, key, msg, false)
}

func (p *publisher) send(exchange, key string, msg amqp.Publishing, mandatory bool) error {
	if err := checkShortStrings(msg); err != nil {
		return err
	}
	if len(key) > maxShortString {
		return &ShortStringError{Property: "routing key", Length: len(key)}
	}
	u := &unconfirmed{
		ident:   publishIdentity{exchange, key, msg.MessageId, msg.CorrelationId},
		verdict: make(chan error, 1),
	}
	p.mu.Lock()
	if p.cc == nil || p.cc.ch.IsClosed() {
		if err := p.open(); err != nil {
			p.mu.Unlock()
			return err
		}
	}
	cc := p.cc
	// Registered before it is sent: its ack may come back before
	// PublishWithContext returns.
	u.tag = cc.ch.GetNextPublishSeqNo()
	if err := cc.add(u); err != nil {
		p.mu.Unlock()
		return err
	}
	err := cc.ch.PublishWithContext(context.Background(), exchange, key, mandatory, false, msg)
	p.mu.Unlock()
	if err != nil {
		cc.remove(u)
		return err
	}
	if err := <-u.verdict; err != nil {
		return err
	}
	if u.returned != nil {
		return &ReturnedError{Exchange: exchange, RoutingKey: key, Code: u.returned.ReplyCode, Text: u.returned.ReplyText}
	}
	return nil
}

func (cc *confirmChannel) add(u *unconfirmed) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ended != nil {
		return cc.ended
	}
	cc.byTag[u.tag] = u
	cc.byIdent[u.ident] = append(cc.byIdent[u.ident], u)
	return nil
}

// remove takes u out of both indexes and reports whether it was still there.
func (cc *confirmChannel) remove(u *unconfirmed) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.removeLocked(u)
}

func (cc *confirmChannel) removeLocked(u *unconfirmed) bool {
	if cc.byTag[u.tag] != u {
		return false
	}
	delete(cc.byTag, u.tag)
	same := cc.byIdent[u.ident]
	for i, other := range same {
		if other == u {
			same = append(same[:i:i], same[i+1:]...)
			break
		}
	}
	if len(same) == 0 {
		delete(cc.byIdent, u.ident)
	} else {
		cc.byIdent[u.ident] = same
	}
	return true
}

// read settles the channel's publishes until the client closes its
// notification channels (the channel closed), then fails the rest.
func (cc *confirmChannel) read(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return) {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			cc.markReturned(r)
		case c, ok := <-confirms:
			if !ok {
				cc.end()
				return
			}
			// Every return dispatched before this confirm is already in
			// the buffer: mark them first, or an ack could win the race.
			for drained := false; !drained && returns != nil; {
				select {
				case r, ok := <-returns:
					if ok {
						cc.markReturned(r)
					} else {
						returns = nil
					}
				default:
					drained = true
				}
			}
			cc.settle(c)
		}
	}
}

func (cc *confirmChannel) markReturned(r amqp.Return) {
	ident := publishIdentity{r.Exchange, r.RoutingKey, r.MessageId, r.CorrelationId}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, u := range cc.byIdent[ident] {
		if u.returned == nil {
			ret := r
			u.returned = &ret
			return
		}
	}
}

func (cc *confirmChannel) settle(c amqp.Confirmation) {
	cc.mu.Lock()
	u := cc.byTag[c.DeliveryTag]
	if u != nil {
		cc.removeLocked(u)
	}
	cc.mu.Unlock()
	if u == nil {
		return
	}
	if c.Ack {
		u.verdict <- nil
	} else {
		u.verdict <- ErrNacked
	}
}

// end fails every publish the broker did not confirm: the channel closed
// first, so nobody knows whether they arrived.
func (cc *confirmChannel) end() {
	var reason *amqp.Error
	select {
	case reason = <-cc.closes:
	default:
	}
	err := &ChannelClosedError{Reason: reason}
	cc.mu.Lock()
	cc.ended = err
	pending := cc.byTag
	cc.byTag = map[uint64]*unconfirmed{}
	cc.byIdent = map[publishIdentity][]*unconfirmed{}
	cc.mu.Unlock()
	for _, u := range pending {
		u.verdict <- err
	}
}

// rebind moves the publisher to conn (a recovered connection): the next
// publish opens its channel there. What the old channel still holds fails
// with it.
func (p *publisher) rebind(conn *amqp.Connection) {
	p.mu.Lock()
	old := p.cc
	p.conn, p.cc = conn, nil
	p.mu.Unlock()
	if old != nil {
		old.ch.Close()
	}
}

func (p *publisher) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cc == nil {
		return nil
	}
	return p.cc.ch.Close()
}

// NewMessageID returns a fresh random id (a version 4 UUID).
func NewMessageID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("acemq: no randomness: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
