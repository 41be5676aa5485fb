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

// publisher publishes mandatory messages on its own confirm-mode channel and
// waits for each verdict. One publish is in flight at a time: a basic.return
// carries no delivery tag, so only then can a return be tied to its publish.
// The broker sends the return before the ack, and amqp091-go dispatches both
// from one goroutine in that order, so once the ack is in hand any return is
// already waiting on its channel.
type publisher struct {
	conn *amqp.Connection
	// ignoreReturns is the ignores-returns mutant.
	ignoreReturns bool

	mu       sync.Mutex
	ch       *amqp.Channel
	confirms chan amqp.Confirmation
	returns  chan amqp.Return
	closes   chan *amqp.Error
}

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
	p.ch = ch
	p.closes = ch.NotifyClose(make(chan *amqp.Error, 1))
	p.returns = ch.NotifyReturn(make(chan amqp.Return, 1))
	p.confirms = ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	return nil
}

// publish sends msg mandatory and returns nil only when the broker acked it
// without returning it first.
func (p *publisher) publish(exchange, key string, msg amqp.Publishing) error {
	if err := checkShortStrings(msg); err != nil {
		return err
	}
	if len(key) > maxShortString {
		return &ShortStringError{Property: "routing key", Length: len(key)}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A publish to a missing exchange closes the channel; the next publish
	// gets a fresh one instead of failing forever.
	if p.ch == nil || p.ch.IsClosed() {
		if err := p.open(); err != nil {
			return err
		}
	}
	if err := p.ch.PublishWithContext(context.Background(), exchange, key, true, false, msg); err != nil {
		return err
	}
	var returned *amqp.Return
	for {
		select {
		case r, ok := <-p.returns:
			if !ok {
				return p.closedError()
			}
			returned = &r
		case c, ok := <-p.confirms:
			if !ok {
				return p.closedError()
			}
			if !c.Ack {
				return ErrNacked
			}
			if returned == nil {
				select {
				case r := <-p.returns:
					returned = &r
				default:
				}
			}
			if returned != nil && !p.ignoreReturns {
				return &ReturnedError{Exchange: exchange, RoutingKey: key, Code: returned.ReplyCode, Text: returned.ReplyText}
			}
			return nil
		}
	}
}

func (p *publisher) closedError() error {
	select {
	case reason := <-p.closes:
		return &ChannelClosedError{Reason: reason}
	default:
		return &ChannelClosedError{}
	}
}

func (p *publisher) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		return nil
	}
	return p.ch.Close()
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
