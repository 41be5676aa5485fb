package acemq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Where a responder found a request's reply address.
const (
	SourceHeader = "header"
	SourceNative = "native"
)

// Request is what a handler is given.
type Request struct {
	Body          []byte
	MessageID     string
	CorrelationID string
	// ReplyTo is the reply address chosen, and ReplyToSource where it was
	// found (SourceHeader or SourceNative).
	ReplyTo       string
	ReplyToSource string
	// Headers are the request's application headers without the engine's
	// x-acemq- ones; the spec's acemq-reply-to and responseMessageId stay.
	Headers amqp.Table
	// Attempt is 1 for the first delivery and counts up with every retry
	// (x-delivery-count + 1).
	Attempt int
}

// Decode unmarshals the request body into v.
func (r *Request) Decode(v interface{}) error { return json.Unmarshal(r.Body, v) }

// Handler answers a request: its result is sent back as JSON. An error is
// sent back as the acemq-error header and dead-letters the request. A
// request whose body is not JSON never reaches the handler: it fails as
// *MalformedRequest.
type Handler func(ctx context.Context, req *Request) (interface{}, error)

// ResponderHooks are optional callbacks for what happens to each request.
type ResponderHooks struct {
	// Handled runs just before the handler.
	Handled func(req *Request)
	// Replied runs when a reply was confirmed by the broker and not
	// returned; failure is the acemq-error text, empty for a normal reply.
	Replied func(messageID, failure string)
	// ReplyFailed runs when a reply could not be delivered.
	ReplyFailed func(messageID string, attempt int, err error)
	// DeadLettered runs when the request was published to {queue}.dlq and
	// acknowledged.
	DeadLettered func(messageID, reason string)
	// Unanswerable runs when a request without a reply address was counted
	// and acknowledged.
	Unanswerable func(messageID string)
	// Lost runs each time the broker or the network closes the channel the
	// requests arrive on (or its connection): the responder stops consuming,
	// and one opened with DialResponder connects again. Close does not run
	// it.
	Lost func(reason *amqp.Error)
	// Recovered runs each time a responder opened with DialResponder is
	// connected again after a loss, has declared its queues and consumes.
	Recovered func()
}

// MalformedRequest is the failure of a request whose body is not JSON: the
// handler is not run, the caller is sent "MalformedRequest: {the decoder's
// message}" and the request is dead-lettered with it.
type MalformedRequest struct {
	Err error
}

func (e *MalformedRequest) Error() string { return e.Err.Error() }
func (e *MalformedRequest) Unwrap() error { return e.Err }

// Binding binds the request queue to an exchange.
type Binding struct {
	Exchange   string
	RoutingKey string
}

// ResponderOptions configures a Responder. The zero value is the wire
// spec's behaviour with 3 attempts per reply.
type ResponderOptions struct {
	// MaxAttempts is how many deliveries of a request may fail to deliver
	// their reply before it is dead-lettered; zero means DefaultMaxAttempts.
	MaxAttempts int
	// Prefetch bounds the requests handled at once; zero means 32.
	Prefetch int
	Bindings []Binding
	Hooks    ResponderHooks

	// policy is set only from inside this module (internal/policy).
	policy *policy.Responder
}

// Responder consumes a durable quorum request queue and replies to each
// request at the address it names.
type Responder struct {
	queue   string
	handler Handler
	opts    ResponderOptions
	pol     policy.Responder
	// pub publishes replies and dead-letters; a recovery moves it to the
	// new connection.
	pub    *publisher
	ctx    context.Context
	cancel context.CancelFunc
	// config is how a responder opened by DialResponder connects again; nil
	// for one on its caller's connection, which it cannot recover.
	config *ConnectionConfig
	// done is closed by Close: no recovery goes on past it.
	done chan struct{}

	mu sync.Mutex
	// sess is the connection the responder consumes on, nil while it is lost.
	sess *requestSession

	// The counters exist, at zero, before the consumer is registered, so a
	// backlog delivered at start-up is counted like any other request.
	answered     int64
	unanswerable int64
	// lazyCountersMade is used only when the policy creates the counters
	// after the first delivery; set to 1 by that delivery.
	lazyCountersMade int32

	// settling tracks the requests being settled, which Close waits for.
	settling settling
}

// settleBound is how long Close waits for the requests whose handler has
// returned to be settled (their reply confirmed, then acked, requeued or
// dead-lettered).
const settleBound = 5 * time.Second

// settling counts the requests past their handler whose reply and ack are
// under way. Once Close has begun, no request starts settling: a request
// not settled by then goes back to the queue with the channel.
type settling struct {
	mu      sync.Mutex
	closing bool
	n       int
	// drained is made when closing begins and closed when n is zero.
	drained chan struct{}
}

// enter reports whether a request may be settled; if so, leave must follow.
func (s *settling) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.n++
	return true
}

func (s *settling) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n--
	if s.closing && s.n == 0 {
		close(s.drained)
	}
}

// stopping reports whether closing has begun.
func (s *settling) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// begin stops new requests from settling and returns what closes when the
// ones under way are done; false if closing had begun already.
func (s *settling) begin() (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return s.drained, false
	}
	s.closing = true
	s.drained = make(chan struct{})
	if s.n == 0 {
		close(s.drained)
	}
	return s.drained, true
}

// requestSession is one connection's consumer of the request queue.
type requestSession struct {
	conn *amqp.Connection
	node int // the index of its node in ConnectionConfig.URLs
	ch   *amqp.Channel
	tag  string
	// ctx is the handlers' context: cancelled at the loss, since their
	// requests go back to the queue with the channel.
	ctx    context.Context
	cancel context.CancelFunc
	// lost is closed at the loss; gate then lets no more of its requests be
	// settled, and drains the ones being settled.
	lost chan struct{}
	gate settling
}

// NewResponder declares queue and {queue}.dlq as durable quorum queues,
// applies the bindings and starts consuming. The connection stays its
// caller's: when it is lost the responder stops consuming (DialResponder's
// reconnects).
func NewResponder(conn *amqp.Connection, queue string, handler Handler, opts ResponderOptions) (*Responder, error) {
	r := newResponder(queue, handler, opts)
	pub, err := newPublisher(conn)
	if err != nil {
		return nil, err
	}
	r.pub = pub
	if r.sess, err = r.openSession(conn, 0); err != nil {
		pub.close()
		return nil, err
	}
	return r, nil
}

// DialResponder connects to the first reachable node of config.URLs under
// config.Name, then does what NewResponder does. When the connection is lost
// it connects again (the first attempt within a second, then backing off up
// to 5 s apart) under the same name, declares the queues again and consumes
// again; the requests it held and had not settled come back from the broker
// as their next attempt. Close closes the connection.
func DialResponder(config ConnectionConfig, queue string, handler Handler, opts ResponderOptions) (*Responder, error) {
	conn, node, err := config.dialFrom(0)
	if err != nil {
		return nil, err
	}
	r, err := NewResponder(conn, queue, handler, opts)
	if err != nil {
		conn.Close()
		return nil, err
	}
	r.mu.Lock()
	r.config = &config
	r.sess.node = node
	r.mu.Unlock()
	return r, nil
}

func newResponder(queue string, handler Handler, opts ResponderOptions) *Responder {
	opts, pol := opts.resolve()
	r := &Responder{queue: queue, handler: handler, opts: opts, pol: pol, done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// openSession declares the queues on a channel of conn and consumes the
// request queue; a goroutine watches the channel for the connection's loss.
func (r *Responder) openSession(conn *amqp.Connection, node int) (*requestSession, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	s := &requestSession{conn: conn, node: node, ch: ch, tag: "acemq-" + NewMessageID(), lost: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(r.ctx)
	if err := r.declare(conn, ch); err != nil {
		ch.Close()
		return nil, err
	}
	deliveries, err := ch.Consume(r.queue, s.tag, false, false, false, false, nil)
	if err != nil {
		ch.Close()
		return nil, err
	}
	go r.consume(s, deliveries)
	go func() {
		// Closed without a value when its owner closed it (Close).
		if reason, ok := <-closes; ok && reason != nil {
			r.lose(s, reason)
		}
	}()
	return s, nil
}

// lose stops what session s was doing: its handlers' context is cancelled
// and none of its requests is settled any more (the broker puts them back),
// Lost hears of it, and a responder that owns its connection connects again
// (unless the policy stays down).
func (r *Responder) lose(s *requestSession, reason *amqp.Error) {
	r.mu.Lock()
	select {
	case <-s.lost:
		r.mu.Unlock()
		return
	default:
	}
	close(s.lost)
	current := r.sess == s
	if current {
		r.sess = nil
	}
	r.mu.Unlock()
	s.cancel()
	drained, _ := s.gate.begin()
	if !current {
		return
	}
	if r.config != nil {
		s.conn.Close()
	}
	stopping := r.settling.stopping()
	if h := r.opts.Hooks.Lost; h != nil && !stopping {
		h(reason)
	}
	if r.config != nil && r.pol.RecoverConnection && !stopping {
		go r.recover(s.node, drained)
	}
}

// recover connects again after the node lost, once the requests of the lost
// session being settled are done with its publisher, until it consumes again
// or the responder is closed.
func (r *Responder) recover(lost int, drained <-chan struct{}) {
	select {
	case <-drained:
	case <-time.After(settleBound):
	}
	recovered := r.config.redial(r.done, lost, func(conn *amqp.Connection, node int) error {
		// Replies go out on the new connection from now on.
		r.pub.rebind(conn)
		s, err := r.openSession(conn, node)
		if err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.settling.stopping() {
			return ErrResponderClosed // redial closes the connection
		}
		r.sess = s
		return nil
	})
	if recovered && !r.settling.stopping() {
		if h := r.opts.Hooks.Recovered; h != nil {
			h()
		}
	}
}

// ErrResponderClosed is what a recovery finds once Close has begun.
var ErrResponderClosed = errors.New("acemq: responder closed")

// resolve is the options with their defaults filled in, and their policy: a
// responder given no MaxAttempts makes the policy's default (RR-14: 3).
func (o ResponderOptions) resolve() (ResponderOptions, policy.Responder) {
	pol := o.resolvePolicy()
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = pol.DefaultMaxAttempts
	}
	if o.Prefetch <= 0 {
		o.Prefetch = 32
	}
	return o, pol
}

func (r *Responder) declare(conn *amqp.Connection, ch *amqp.Channel) error {
	dlq := amqp.Table{"x-queue-type": string(r.pol.DLQQueueType)}
	if err := r.declareRequestQueue(conn, ch); err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(r.queue+".dlq", true, false, false, false, dlq); err != nil {
		return err
	}
	for _, b := range r.opts.Bindings {
		if err := ch.QueueBind(r.queue, b.RoutingKey, b.Exchange, false, nil); err != nil {
			return err
		}
	}
	return ch.Qos(r.opts.Prefetch, 0, false)
}

// declareRequestQueue declares the request queue durable with
// requestQueueArgs. Under ClassicIfMissing it first declares it passively and
// keeps an existing queue as it is; that probe runs on a channel of its own,
// since a 404 for a missing queue closes the channel it was asked on.
func (r *Responder) declareRequestQueue(conn *amqp.Connection, ch *amqp.Channel) error {
	if r.pol.RequestQueue == policy.ClassicIfMissing {
		probe, err := conn.Channel()
		if err != nil {
			return err
		}
		_, err = probe.QueueDeclarePassive(r.queue, true, false, false, false, nil)
		var amqpErr *amqp.Error
		switch {
		case err == nil:
			return probe.Close()
		case !errors.As(err, &amqpErr) || amqpErr.Code != amqp.NotFound:
			probe.Close()
			return err
		}
		// The broker has closed the probe channel: nothing to close.
	}
	_, err := ch.QueueDeclare(r.queue, true, false, false, false, r.requestQueueArgs())
	return err
}

// requestQueueArgs is the request queue's declare arguments: a quorum queue
// (RR-17), or under ClassicIfMissing none, so the server's default (classic).
func (r *Responder) requestQueueArgs() amqp.Table {
	if r.pol.RequestQueue == policy.ClassicIfMissing {
		return nil
	}
	return amqp.Table{"x-queue-type": string(policy.Quorum)}
}

// Answered counts replies sent. It is incremented before a reply is
// published, so a caller holding its answer finds it counted, and taken back
// if the publish fails.
func (r *Responder) Answered() int64 { return atomic.LoadInt64(&r.answered) }

// Unanswerable counts requests that named no reply address.
func (r *Responder) Unanswerable() int64 { return atomic.LoadInt64(&r.unanswerable) }

// Close stops taking requests, then closes the responder's channels. A
// request whose handler has returned is settled first (within 5 s): its
// reply may already be with the caller, and closing before its ack would put
// it back on the queue for another responder to answer a second time.
// Handlers still running are abandoned: their context is cancelled and their
// requests go back to the queue unacknowledged.
// A responder opened by DialResponder closes its connection too.
func (r *Responder) Close() error {
	drained, first := r.settling.begin()
	if !first {
		return nil
	}
	close(r.done)
	r.cancel()
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	if s != nil {
		if err := s.ch.Cancel(s.tag, false); err != nil {
			log.Printf("acemq: cannot cancel the consumer on %s: %v", r.queue, err)
		}
	}
	select {
	case <-drained:
	case <-time.After(settleBound):
		log.Printf("acemq: closing the responder on %s with requests still unsettled after %s", r.queue, settleBound)
	}
	var err error
	if s != nil {
		err = s.ch.Close()
	}
	if perr := r.pub.close(); err == nil {
		err = perr
	}
	if r.config != nil && s != nil {
		if cerr := s.conn.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (r *Responder) consume(s *requestSession, deliveries <-chan amqp.Delivery) {
	for d := range deliveries {
		go r.handle(s, d)
	}
}

// settle runs f, which answers and settles a request of session s, unless
// Close has begun or the session's connection was lost: then the request is
// left unacknowledged and the broker puts it back on the queue.
func (r *Responder) settle(s *requestSession, f func()) {
	if !r.settling.enter() {
		return
	}
	defer r.settling.leave()
	if s != nil {
		if !s.gate.enter() {
			return
		}
		defer s.gate.leave()
	}
	f()
}

// settledAcknowledger stands for the channel of a request acknowledged as it
// was delivered: there is nothing left to settle.
type settledAcknowledger struct{}

func (settledAcknowledger) Ack(uint64, bool) error        { return nil }
func (settledAcknowledger) Nack(uint64, bool, bool) error { return nil }
func (settledAcknowledger) Reject(uint64, bool) error     { return nil }

// ackOnDelivery acknowledges d before its handler runs, under an on_delivery
// policy (RR-20.4 says after handling: a request held when the connection is
// lost is gone with it); what settles it later then does nothing.
func (r *Responder) ackOnDelivery(d *amqp.Delivery) {
	if r.pol.AckTiming != policy.AckOnDelivery {
		return
	}
	if r.ack(*d) {
		d.Acknowledger = settledAcknowledger{}
	}
}

func (r *Responder) handle(s *requestSession, d amqp.Delivery) {
	if r.settling.stopping() {
		// Delivered while closing: not handled, the broker requeues it.
		return
	}
	r.ackOnDelivery(&d)
	ctx := r.ctx
	if s != nil {
		ctx = s.ctx
	}
	replyTo, source := replyAddress(r.addressHeaders(d.Headers), d.ReplyTo, r.pol.ReadOrder)
	if replyTo == "" {
		r.settle(s, func() { r.acceptUnanswerable(d) })
		return
	}
	req := &Request{
		Body:          d.Body,
		MessageID:     d.MessageId,
		CorrelationID: d.CorrelationId,
		ReplyTo:       replyTo,
		ReplyToSource: source,
		Headers:       r.handlerHeaders(d.Headers),
		Attempt:       attemptNumber(d.Headers, r.pol.AttemptBase),
	}
	if r.pol.HeaderTypes == policy.Strict {
		// Header types other clients write are refused (WF-1 says accept
		// them), and the handler never runs.
		if err := strictHeaderError(d.Headers); err != nil {
			r.settle(s, func() { r.replyFailure(d, req, FailureText(err), false) })
			return
		}
	}
	if err := checkJSON(d.Body); err != nil {
		r.settle(s, func() { r.malformed(d, req, err) })
		return
	}
	if h := r.opts.Hooks.Handled; h != nil {
		h(req)
	}
	result, err := r.invoke(ctx, req)
	// Stopped or lost while handling: settle does nothing, and the broker
	// requeues the request with the channel, so it is answered again.
	r.settle(s, func() {
		if err == nil {
			var body []byte
			if body, err = json.Marshal(result); err == nil {
				r.reply(d, req, body)
				return
			}
		}
		r.replyFailure(d, req, r.handlerFailureText(err), true)
	})
}

// handlerHeaders is the headers a handler is shown: all but the engine's
// x-acemq-* (RR-5.1); the spec's own acemq-reply-to, responseMessageId and
// any other acemq-* reach it (RR-5.2), unless a policy hides them.
func (r *Responder) handlerHeaders(h amqp.Table) amqp.Table {
	if r.pol.StripEngineHeaders {
		h = stripPrefix(h, r.pol.StripPrefix)
	}
	if !r.pol.PassSpecHeaders {
		h = stripPrefix(h, "acemq-")
	}
	return h
}

// addressHeaders is the headers the reply address is read from: under an
// ignore-bytes policy without an acemq-reply-to written as a byte array
// (RR-2 says read it as UTF-8).
func (r *Responder) addressHeaders(h amqp.Table) amqp.Table {
	if _, isBytes := h[ReplyToHeader].([]byte); !isBytes || r.pol.BytesAddress != policy.IgnoreBytesAddress {
		return h
	}
	out := make(amqp.Table, len(h))
	for k, v := range h {
		if k != ReplyToHeader {
			out[k] = v
		}
	}
	return out
}

// handlerFailureText is the acemq-error text of a handler's error: the
// type's bare name (RR-10.2), or under a qualified policy its Go name.
func (r *Responder) handlerFailureText(err error) string {
	if r.pol.ErrorTypeName == policy.QualifiedTypeName {
		return qualifiedFailureText(err)
	}
	return FailureText(err)
}

// checkJSON is a *MalformedRequest when body is not JSON: the decoder's own
// message, which the caller is sent.
func checkJSON(body []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return &MalformedRequest{Err: err}
	}
	return nil
}

// malformed fails a request whose body is not JSON as a handler failure
// would (RR-10, RR-11), without running the handler; a drop policy acks it
// and nothing else.
func (r *Responder) malformed(d amqp.Delivery, req *Request, err error) {
	if r.pol.MalformedRequest == policy.DropMalformed {
		r.ack(d)
		return
	}
	r.replyFailureThen(d, req, FailureText(err), false, r.pol.MalformedRequest != policy.ReplyOnlyMalformed)
}

// PanicError is the failure of a handler that panicked.
type PanicError struct {
	Value interface{}
}

func (e *PanicError) Error() string { return fmt.Sprint(e.Value) }

func (r *Responder) invoke(ctx context.Context, req *Request) (result interface{}, err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok {
				err = e
			} else {
				err = &PanicError{Value: v}
			}
		}
	}()
	return r.handler(ctx, req)
}

// countsBeforePublish says whether this reply is counted in Answered before
// it is published (RR-15). With counters created after the first delivery,
// each call is a delivery handled, so only the first one answers false: a
// counter made lazily never counts the delivery that made it.
func (r *Responder) countsBeforePublish() bool {
	if r.pol.AnsweredTiming == policy.AfterConfirm {
		return false
	}
	if r.pol.CountersCreated == policy.AfterFirstDelivery {
		return !atomic.CompareAndSwapInt32(&r.lazyCountersMade, 0, 1)
	}
	return true
}

func (r *Responder) reply(d amqp.Delivery, req *Request, body []byte) {
	countFirst := r.countsBeforePublish()
	if countFirst {
		atomic.AddInt64(&r.answered, 1)
	}
	if r.atMostOnce(req) {
		// RR-14.5: the broker cannot say whether a direct reply-to reply was
		// delivered (3.10 to 4.1 return every one, 4.2 none): sent once
		// without mandatory, counted, acknowledged, never retried.
		if err := r.pub.publishNotMandatory("", req.ReplyTo, r.replyPublishing(req, body, "")); err != nil {
			log.Printf("acemq: direct reply-to reply to %s not confirmed: %v", req.ReplyTo, err)
		}
		r.answeredAfterPublish(countFirst, nil)
		if h := r.opts.Hooks.Replied; h != nil {
			h(req.MessageID, "")
		}
		r.ack(d)
		return
	}
	err := r.pub.publish("", req.ReplyTo, r.replyPublishing(req, body, ""))
	r.answeredAfterPublish(countFirst, err)
	if err != nil {
		r.undeliverable(d, req, err)
		return
	}
	if h := r.opts.Hooks.Replied; h != nil {
		h(req.MessageID, "")
	}
	r.ack(d)
}

// answeredAfterPublish settles Answered once a reply's publish has ended
// (confirmed, or failed): a count made before it is taken back on failure
// (RR-15.2); an after-confirm policy counts a confirmed reply only now, when
// the caller may hold it already (RR-15.1 says count first), and had nothing
// to take back from a failed one.
func (r *Responder) answeredAfterPublish(countedFirst bool, err error) {
	switch {
	case err != nil && countedFirst && r.pol.RollbackAnswered:
		atomic.AddInt64(&r.answered, -1)
	case err == nil && r.pol.AnsweredTiming == policy.AfterConfirm:
		atomic.AddInt64(&r.answered, 1)
	}
}

// replyFailure tells the caller the handler failed and dead-letters the
// request once: the caller has its answer, and a retry would answer twice.
// A failure reply that cannot be delivered gave the caller no answer, so it
// goes to the retry policy like any other reply (RR-14). handlerFailed is
// set for a handler's own failure (not a malformed request or header).
func (r *Responder) replyFailure(d amqp.Delivery, req *Request, failure string, handlerFailed bool) {
	r.replyFailureThen(d, req, failure, handlerFailed, true)
}

// replyFailureThen is replyFailure, the RR-11 dead-letter left out when
// deadLetter is false (a reply_only malformed-request policy: RR-19 forbids it).
func (r *Responder) replyFailureThen(d amqp.Delivery, req *Request, failure string, handlerFailed, deadLetter bool) {
	if r.pol.HandlerFailure == policy.Retry {
		r.retryFailure(d, req, failure)
		return
	}
	counted := r.pol.CountFailuresAnswered
	if counted {
		atomic.AddInt64(&r.answered, 1)
	}
	var err error
	if r.atMostOnce(req) {
		// RR-14.5: a failure reply to a direct reply-to address is at most once too.
		if perr := r.pub.publishNotMandatory("", req.ReplyTo, r.replyPublishing(req, r.failureBody(failure), failure)); perr != nil {
			log.Printf("acemq: direct reply-to failure reply to %s not confirmed: %v", req.ReplyTo, perr)
		}
	} else {
		err = r.pub.publish("", req.ReplyTo, r.replyPublishing(req, r.failureBody(failure), failure))
	}
	if err != nil && r.pol.FailureReplyDelivery == policy.Checked {
		if counted {
			atomic.AddInt64(&r.answered, -1)
		}
		r.undeliverable(d, req, err)
		return
	}
	if h := r.opts.Hooks.Replied; h != nil {
		h(req.MessageID, failure)
	}
	if handlerFailed && r.pol.RetryFailures && retryDecision(req.Attempt, r.opts.MaxAttempts) {
		// The handler runs and replies again (RR-11 says dead-letter at
		// once: the caller has its answer).
		r.requeue(d)
		return
	}
	if !r.pol.DeadLetterFailures || !deadLetter {
		r.ack(d)
		return
	}
	r.deadLetter(d, failure)
}

// failureBody is a failure reply's body: empty (RR-10), or under a json
// policy {"error": the failure text}.
func (r *Responder) failureBody(failure string) []byte {
	if r.pol.FailureBody != policy.JSONFailureBody {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"error": failure})
	return body
}

// retryFailure is a Retry handler-failure policy: no reply is sent, the
// request goes through the retry policy with the failure as its reason, and
// the caller only sees its own timeout.
func (r *Responder) retryFailure(d amqp.Delivery, req *Request, failure string) {
	if retryDecision(req.Attempt, r.opts.MaxAttempts) {
		r.requeue(d)
		return
	}
	r.deadLetter(d, failure)
}

// undeliverable sends the request back to the queue for another attempt, or
// dead-letters it on the last one. It is never acknowledged into nowhere.
func (r *Responder) undeliverable(d amqp.Delivery, req *Request, err error) {
	if h := r.opts.Hooks.ReplyFailed; h != nil {
		h(req.MessageID, req.Attempt, err)
	}
	if r.pol.UndeliverableReply == policy.AckIt {
		r.ack(d)
		return
	}
	if !retryDecision(req.Attempt, r.opts.MaxAttempts) {
		if r.pol.LastAttempt == policy.AckLastAttempt {
			// Gone without a trace (RR-14 says dead-letter it).
			r.ack(d)
			return
		}
		r.deadLetter(d, "UndeliverableReply: "+err.Error())
		return
	}
	r.requeue(d)
}

// acceptUnanswerable counts and acknowledges a request with no reply
// address: redelivering it would not make an address appear.
func (r *Responder) acceptUnanswerable(d amqp.Delivery) {
	if r.pol.CountUnanswerable {
		atomic.AddInt64(&r.unanswerable, 1)
	}
	if r.pol.Unanswerable == policy.DeadLetterIt {
		r.deadLetter(d, "Unanswerable: the request names no reply address")
	} else {
		r.ack(d)
	}
	if h := r.opts.Hooks.Unanswerable; h != nil {
		h(d.MessageId)
	}
}

// deadLetter publishes the request to {queue}.dlq with the reason and then
// acknowledges it. The responder does this itself rather than rejecting to a
// broker dead-letter exchange, whose reason would only say "rejected".
func (r *Responder) deadLetter(d amqp.Delivery, reason string) {
	headers := writableTable(d.Headers)
	headers[DeadLetterReasonHeader] = reason
	msg := amqp.Publishing{
		Headers:         headers,
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		DeliveryMode:    amqp.Persistent,
		Priority:        d.Priority,
		CorrelationId:   d.CorrelationId,
		ReplyTo:         d.ReplyTo,
		MessageId:       d.MessageId,
		Timestamp:       d.Timestamp,
		Type:            d.Type,
		AppId:           d.AppId,
		Body:            d.Body,
	}
	if r.pol.DeadLetterCopy == policy.IDAndHeadersCopy {
		// RR-11 forbids this: the copy is the request, to be answered later.
		msg.CorrelationId, msg.ReplyTo = "", ""
	}
	if err := r.pub.publish("", r.queue+".dlq", msg); err != nil {
		log.Printf("acemq: cannot dead-letter %s to %s.dlq: %v", d.MessageId, r.queue, err)
		r.requeue(d)
		return
	}
	if r.ack(d) {
		if h := r.opts.Hooks.DeadLettered; h != nil {
			h(d.MessageId, reason)
		}
	}
}

func (r *Responder) ack(d amqp.Delivery) bool {
	if err := d.Ack(false); err != nil {
		log.Printf("acemq: cannot ack %s: %v", d.MessageId, err)
		return false
	}
	return true
}

// requeue is an explicit basic.nack with requeue: some clients default to
// requeue and some do not, so it is always said.
func (r *Responder) requeue(d amqp.Delivery) {
	if err := d.Nack(false, true); err != nil {
		log.Printf("acemq: cannot requeue %s: %v", d.MessageId, err)
	}
}

// DirectReplyToPrefix starts every address of RabbitMQ's direct reply-to:
// the broker gives a responder reply_to amq.rabbitmq.reply-to.<token>.
const DirectReplyToPrefix = "amq.rabbitmq.reply-to."

// atMostOnce says whether req's reply goes to a direct reply-to address and
// is sent at most once (RR-14.5): no mandatory, never retried.
func (r *Responder) atMostOnce(req *Request) bool {
	return strings.HasPrefix(req.ReplyTo, DirectReplyToPrefix) && r.pol.DirectReplyTo == policy.DirectAtMostOnce
}

// RequestID is a request's id (RR-4.2, SG-3.1): its message_id, or its
// correlation_id when it has none (a tutorial caller's, a Java RpcClient's).
func RequestID(messageID, correlationID string) string {
	if messageID != "" {
		return messageID
	}
	return correlationID
}

// replyPublishing addresses a reply for both families of requesters: acemq
// correlates on correlation_id, the bus on the responseMessageId header.
func (r *Responder) replyPublishing(req *Request, body []byte, failure string) amqp.Publishing {
	headers := amqp.Table{}
	requestID := RequestID(req.MessageID, req.CorrelationID)
	// Without it bus requesters cannot demultiplex (SG-3).
	if requestID != "" && r.pol.ResponseMessageID {
		headers[ResponseMessageIDHeader] = requestID
	}
	if failure != "" {
		headers[ErrorHeader] = failure
	}
	// acemq requesters correlate on the message id, tutorial callers on
	// their own correlation id: the request's id covers both (RR-4.2).
	correlationID := requestID
	switch r.pol.ReplyCorrelationFrom {
	case policy.FromCorrelationID:
		correlationID = req.CorrelationID
	case policy.FromMessageID:
		correlationID = req.MessageID // RR-4.2 says fall back to correlation_id
	}
	contentType := contentTypeJSON
	if r.pol.ReplyContentType == policy.NoContentType {
		contentType = "" // amqp091-go then sends none (RR-4 wants JSON's)
	}
	return amqp.Publishing{
		ContentType:   contentType,
		CorrelationId: correlationID,
		Headers:       headers,
		Body:          body,
	}
}
