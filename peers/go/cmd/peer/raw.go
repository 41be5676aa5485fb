package main

// The bare amqp091-go client, no acemq code: the raw echo responder and the
// raw requester that `load` measures as the physical limit of this client on
// this broker (docs/peer-protocol.md, Version 2).

import (
	"context"
	"errors"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// rawResponder echoes every request body to its reply_to.
type rawResponder struct {
	ch   *amqp.Channel
	done chan struct{}
}

func startRawResponder(conn *amqp.Connection, queue string) (*rawResponder, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*rawResponder, error) { ch.Close(); return nil, err }
	if _, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		return fail(err)
	}
	if err := ch.Qos(64, 0, false); err != nil {
		return fail(err)
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return fail(err)
	}
	r := &rawResponder{ch: ch, done: make(chan struct{})}
	go r.serve(deliveries)
	return r, nil
}

func (r *rawResponder) serve(deliveries <-chan amqp.Delivery) {
	defer close(r.done)
	for d := range deliveries {
		correlationID := d.MessageId
		if correlationID == "" {
			correlationID = d.CorrelationId
		}
		if d.ReplyTo != "" {
			err := r.ch.PublishWithContext(context.Background(), "", d.ReplyTo, false, false, amqp.Publishing{
				ContentType:   d.ContentType,
				CorrelationId: correlationID,
				Body:          d.Body,
			})
			if err != nil {
				log.Printf("raw responder: cannot reply: %v", err)
			}
		}
		d.Ack(false)
	}
}

func (r *rawResponder) close() {
	r.ch.Close()
	<-r.done
}

// rawRequester is one channel and one server-named reply queue; replies find
// their waiter by correlation_id.
type rawRequester struct {
	ch         *amqp.Channel
	replyQueue string
	seq        uint64

	mu      sync.Mutex
	waiting map[string]chan struct{}
}

var errRawTimeout = errors.New("timed out")

func openRawRequester(conn *amqp.Connection) (*rawRequester, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	q, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{"x-queue-type": "classic"})
	if err != nil {
		ch.Close()
		return nil, err
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		ch.Close()
		return nil, err
	}
	r := &rawRequester{ch: ch, replyQueue: q.Name, waiting: map[string]chan struct{}{}}
	go func() {
		for d := range deliveries {
			r.mu.Lock()
			done := r.waiting[d.CorrelationId]
			delete(r.waiting, d.CorrelationId)
			r.mu.Unlock()
			if done != nil {
				close(done)
			}
		}
	}()
	return r, nil
}

// request publishes body and waits for its reply or the timeout.
func (r *rawRequester) request(exchange, key string, body []byte, timeout time.Duration) error {
	id := strconv.FormatUint(atomic.AddUint64(&r.seq, 1), 10)
	done := make(chan struct{})
	r.mu.Lock()
	r.waiting[id] = done
	r.mu.Unlock()
	err := r.ch.PublishWithContext(context.Background(), exchange, key, false, false, amqp.Publishing{
		ContentType:   "application/json",
		MessageId:     id, // a spec responder answers with correlation_id = message_id (RR-4)
		CorrelationId: id,
		ReplyTo:       r.replyQueue,
		Body:          body,
	})
	if err == nil {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-done:
			return nil
		case <-timer.C:
			err = errRawTimeout
		}
	}
	r.mu.Lock()
	delete(r.waiting, id)
	r.mu.Unlock()
	return err
}

func (r *rawRequester) close() { r.ch.Close() }
