package acemq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrTimedOut is wrapped by the error of a request that got no reply in time,
// and by a gather's *RequestTimeoutError.
// The request may still be carried out: a timeout says no answer arrived, not
// that nothing happened.
var ErrTimedOut = errors.New("acemq: request timed out")

// ErrClosed is returned by calls on, or pending in, a closed Requester: Close
// ends a pending call at once rather than leaving it to its timeout.
var ErrClosed = errors.New("acemq: requester closed")

// ResponderFailedError is the failure a responder sent back in the
// acemq-error header instead of a reply.
type ResponderFailedError struct {
	Failure string
}

func (e *ResponderFailedError) Error() string { return "responder failed: " + e.Failure }

// DecodeError means a reply arrived but its body was not the JSON expected.
type DecodeError struct {
	Err error
}

func (e *DecodeError) Error() string { return "cannot decode the reply: " + e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// RequesterOptions configures a Requester. The zero value is the wire
// spec's behaviour with a 30 s timeout.
type RequesterOptions struct {
	// Timeout is the default per-call timeout; zero means DefaultTimeout.
	Timeout time.Duration
	// OnUnmatched, when set, is called for every reply counted in Unmatched,
	// with the ids that reply carried.
	OnUnmatched func(reply UnmatchedReply)
	// OnLost, when set, is called each time the broker or the network closes
	// the channel the replies arrive on (or its connection): the calls then
	// pending end with a *ConnectionLostError. Close does not call it.
	OnLost func(reason *amqp.Error)
	// OnRecovered, when set, is called each time a requester opened with
	// DialRequester is connected again after a loss and consumes its new
	// reply queue.
	OnRecovered func()

	// policy is set only from inside this module (internal/policy).
	policy *policy.Requester
}

// UnmatchedReply names a reply counted in Unmatched: a request's reply by its
// correlation id, a gather's by its responseMessageId. Either is empty when
// the reply did not carry it.
type UnmatchedReply struct {
	CorrelationID     string
	ResponseMessageID string
}

// Requester sends requests and waits for their replies on one reply queue of
// its own: a classic, exclusive, auto-delete queue shared by every call.
type Requester struct {
	opts RequesterOptions
	pol  policy.Requester
	// config is how a requester opened by DialRequester connects again; nil
	// for one on its caller's connection, which it cannot recover.
	config *ConnectionConfig

	mu  sync.Mutex
	seq uint64
	// sess is the connection the requester sends and consumes on, nil while
	// it is lost; up is closed when a recovered one takes its place.
	sess *replySession
	up   chan struct{}
	// lastLoss is the reason of the latest loss, for calls that find the
	// requester down.
	lastLoss *amqp.Error
	calls    map[string]*call
	gathers  map[string]*gathering
	closed   bool
	// done is closed by Close to end the pending calls.
	done chan struct{}
	// pending counts the calls and gathers under way, so that Close returns
	// only once every one of them has ended.
	pending sync.WaitGroup
	// pastRequests holds the message ids of the requests this requester
	// has sent, so that a reply finding nobody waiting is known to be a
	// request's or a gather's; only a policy that counts one kind and not
	// the other keeps it.
	pastRequests map[string]bool

	timedOut  int64
	unmatched int64
}

type call struct {
	seq   uint64
	reply chan amqp.Delivery
}

// replySession is one connection's reply queue and publisher.
type replySession struct {
	conn       *amqp.Connection
	node       int // the index of its node in ConnectionConfig.URLs
	ch         *amqp.Channel
	pub        *publisher
	replyQueue string
	// perCall holds the channels of per-call reply queues (a policy that
	// declares one per request), which live until Close or the loss.
	perCall []*amqp.Channel
	// lost is closed, reason set, when the connection is lost.
	lost   chan struct{}
	reason *amqp.Error
}

// lostError is the error of a call this session carried, once it is lost.
func (s *replySession) lostError() error { return lostError(s.reason) }

func (s *replySession) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// NewRequester declares the reply queue on conn and starts consuming it. The
// connection stays its caller's: when it is lost the pending calls end with a
// *ConnectionLostError and the requester stays down (DialRequester's
// reconnects).
func NewRequester(conn *amqp.Connection, opts RequesterOptions) (*Requester, error) {
	r := newRequester(opts)
	s, err := r.openSession(conn, 0)
	if err != nil {
		return nil, err
	}
	r.sess = s
	return r, nil
}

// DialRequester connects to the first reachable node of config.URLs under
// config.Name, declares the reply queue and starts consuming it. When the
// connection is lost, the pending calls end with a *ConnectionLostError and
// the requester connects again (the first attempt within a second, then
// backing off up to 5 s apart) under the same name, with a new reply queue
// that later calls name; a call made meanwhile waits for it within its
// timeout. Close closes the connection.
func DialRequester(config ConnectionConfig, opts RequesterOptions) (*Requester, error) {
	conn, node, err := config.dialFrom(0)
	if err != nil {
		return nil, err
	}
	r := newRequester(opts)
	r.config = &config
	s, err := r.openSession(conn, node)
	if err != nil {
		conn.Close()
		return nil, err
	}
	r.sess = s
	return r, nil
}

func newRequester(opts RequesterOptions) *Requester {
	opts, pol := opts.resolve()
	return &Requester{
		opts:    opts,
		pol:     pol,
		calls:   map[string]*call{},
		gathers: map[string]*gathering{},
		done:    make(chan struct{}),
	}
}

// openSession declares a reply queue on conn, consumes it and opens a
// publisher; a goroutine watches the reply channel for the connection's loss.
func (r *Requester) openSession(conn *amqp.Connection, node int) (*replySession, error) {
	ch, name, deliveries, closes, err := openReplyQueue(conn, r.pol.ExclusiveReplyQueue, r.replyQueueArgs())
	if err != nil {
		return nil, err
	}
	s := &replySession{conn: conn, node: node, ch: ch, replyQueue: name, lost: make(chan struct{})}
	if s.pub, err = newPublisher(conn); err != nil {
		ch.Close()
		return nil, err
	}
	go r.consume(deliveries)
	go func() {
		// amqp091-go closes it without a value when the channel or its
		// connection is closed by its owner.
		if reason, ok := <-closes; ok && reason != nil {
			r.lose(s, reason)
		}
	}()
	return s, nil
}

// lose ends what session s carried: the calls pending on it end (unless the
// policy leaves them to their timeout), OnLost hears of it, and a requester
// that owns its connection connects again (unless the policy stays down).
func (r *Requester) lose(s *replySession, reason *amqp.Error) {
	r.mu.Lock()
	if s.isLost() {
		r.mu.Unlock()
		return
	}
	s.reason = reason
	close(s.lost)
	current := r.sess == s
	if current {
		r.sess = nil
		r.up = make(chan struct{})
		r.lastLoss = reason
	}
	closed := r.closed
	r.mu.Unlock()
	if !current {
		// A session lost before it was taken into use: redial goes on.
		return
	}
	if r.config != nil {
		// Ours: whatever is left of it (a channel-only loss) goes too.
		s.conn.Close()
	}
	if r.opts.OnLost != nil && !closed {
		r.opts.OnLost(reason)
	}
	if r.config != nil && r.pol.RecoverConnection && !closed {
		go r.recover(s.node)
	}
}

// recover connects again after the node lost, until it has a new session or
// the requester is closed.
func (r *Requester) recover(lost int) {
	recovered := r.config.redial(r.done, lost, func(conn *amqp.Connection, node int) error {
		s, err := r.openSession(conn, node)
		if err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if s.isLost() {
			return s.lostError()
		}
		if r.closed {
			return ErrClosed // redial closes the connection
		}
		r.sess = s
		close(r.up)
		return nil
	})
	if recovered && r.opts.OnRecovered != nil && !r.isClosed() {
		r.opts.OnRecovered()
	}
}

func (r *Requester) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// session is the session a call is sent on: the current one, or while the
// requester is recovering the next one, waited for until wait elapses. A
// requester that is down and not recovering ends the call at once.
func (r *Requester) session(ctx context.Context, wait time.Duration) (*replySession, error) {
	var timer *time.Timer
	for {
		r.mu.Lock()
		s, up, closed, reason := r.sess, r.up, r.closed, r.lastLoss
		recovering := r.config != nil && r.pol.RecoverConnection
		r.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case s != nil:
			return s, nil
		case !recovering:
			return nil, lostError(reason)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-up:
		case <-timer.C:
			return nil, lostError(reason)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.done:
			return nil, ErrClosed
		}
	}
}

// lostOf is what ends a call on session s when its connection is lost: s.lost,
// or under a wait policy nothing (a nil channel never fires), so the call
// waits out its timeout.
func (r *Requester) lostOf(s *replySession) <-chan struct{} {
	if r.pol.OnConnectionLost == policy.WaitLost {
		return nil
	}
	return s.lost
}

// sendError is the error of a publish (or a per-call reply queue) that
// failed: a *ConnectionLostError when its connection was lost meanwhile, so
// that it is never taken as sent. amqp091-go marks a connection closed before
// it closes its channels, so a publish its loss failed finds it closed.
func sendError(s *replySession, err error) error {
	if s.isLost() {
		return s.lostError()
	}
	if s.conn != nil && s.conn.IsClosed() {
		var closedCh *ChannelClosedError
		if errors.As(err, &closedCh) {
			return lostError(closedCh.Reason)
		}
		return lostError(nil)
	}
	return err
}

// close closes the session's channels (its reply queue goes with them).
func (s *replySession) close() error {
	for _, ch := range s.perCall {
		ch.Close()
	}
	err := s.ch.Close()
	if perr := s.pub.close(); err == nil {
		err = perr
	}
	return err
}

// resolve is the options with their defaults filled in, and their policy:
// a call given no timeout waits the policy's default (RR-9: 30 s).
func (o RequesterOptions) resolve() (RequesterOptions, policy.Requester) {
	pol := o.resolvePolicy()
	if o.Timeout <= 0 {
		o.Timeout = time.Duration(pol.DefaultTimeoutMS) * time.Millisecond
	}
	return o, pol
}

// replyQueueArgs gives the reply queue's type explicitly: a server or policy
// default of quorum would be refused for an exclusive, auto-delete queue.
func (r *Requester) replyQueueArgs() amqp.Table {
	if !r.pol.ExplicitReplyQueueType {
		return nil
	}
	return amqp.Table{"x-queue-type": "classic"}
}

// openReplyQueue declares a reply queue on a channel of its own and consumes
// it; closes is the channel's NotifyClose, registered before anything can
// close it. The queue is exclusive (RR-7) unless a policy says otherwise: then
// another connection could consume the replies.
func openReplyQueue(conn *amqp.Connection, exclusive bool, args amqp.Table) (*amqp.Channel, string, <-chan amqp.Delivery, <-chan *amqp.Error, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, "", nil, nil, err
	}
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	q, err := ch.QueueDeclare("", false, true, exclusive, false, args)
	if err != nil {
		ch.Close()
		return nil, "", nil, nil, err
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		ch.Close()
		return nil, "", nil, nil, err
	}
	return ch, q.Name, deliveries, closes, nil
}

// notifyLost calls lost with the reason the broker or the network closed a
// channel, read from its NotifyClose (registered before anything can close
// it). amqp091-go closes that without a value when the channel or its
// connection is closed by its owner.
func notifyLost(closes <-chan *amqp.Error, lost func(*amqp.Error)) {
	if reason, ok := <-closes; ok && reason != nil {
		lost(reason)
	}
}

// replyQueueForCall is the reply address one request or gather on session s
// names: the session's queue (RR-6), or under a per-request policy a fresh
// one, consumed until Close so that a late reply still arrives and is counted.
func (r *Requester) replyQueueForCall(s *replySession) (string, error) {
	if !r.pol.ReplyQueuePerRequest {
		return s.replyQueue, nil
	}
	ch, name, deliveries, _, err := openReplyQueue(s.conn, r.pol.ExclusiveReplyQueue, r.replyQueueArgs())
	if err != nil {
		return "", sendError(s, err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		ch.Close()
		return "", ErrClosed
	}
	s.perCall = append(s.perCall, ch)
	r.mu.Unlock()
	go r.consume(deliveries)
	return name, nil
}

// ReplyQueue is the reply address this requester names: after a recovery the
// new queue's name, empty while it is recovering.
func (r *Requester) ReplyQueue() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sess == nil {
		return ""
	}
	return r.sess.replyQueue
}

// TimedOut counts requests that gave up before an answer arrived.
func (r *Requester) TimedOut() int64 { return atomic.LoadInt64(&r.timedOut) }

// Unmatched counts replies with nobody left waiting for them.
func (r *Requester) Unmatched() int64 { return atomic.LoadInt64(&r.unmatched) }

// RequestOption adjusts one call.
type RequestOption func(*requestConfig)

type requestConfig struct {
	timeout       time.Duration
	messageID     string
	correlationID string
	msgType       string
	headers       amqp.Table
}

// WithTimeout overrides the requester's timeout for one call.
func WithTimeout(d time.Duration) RequestOption {
	return func(c *requestConfig) { c.timeout = d }
}

// WithMessageID sends the request with this message id instead of a fresh
// one, for callers that need to know it (idempotency keys, logs).
func WithMessageID(id string) RequestOption {
	return func(c *requestConfig) { c.messageID = id }
}

// WithCorrelationID sends the request with this correlation id instead of
// its message id. Replies are still matched on the message id, which every
// responder echoes as the reply's correlation id.
func WithCorrelationID(id string) RequestOption {
	return func(c *requestConfig) { c.correlationID = id }
}

// WithType sets the request's type (the AMQP type property); without it the
// request has none.
func WithType(t string) RequestOption {
	return func(c *requestConfig) { c.msgType = t }
}

// WithHeaders adds application headers to the request. The binding's own
// headers win over headers of the same name.
func WithHeaders(h amqp.Table) RequestOption {
	return func(c *requestConfig) { c.headers = h }
}

// Request publishes request as JSON to exchange with routingKey and decodes
// the reply into reply. It fails with an error wrapping ErrTimedOut, a
// *ResponderFailedError, a *DecodeError, a *ConnectionLostError (the
// connection was lost before the reply came: the request may still be
// carried out), or the reason the request could not be sent (a
// *ReturnedError when no queue took it).
func (r *Requester) Request(ctx context.Context, exchange, routingKey string, request, reply interface{}, opts ...RequestOption) error {
	cfg := requestConfig{timeout: r.opts.Timeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.messageID == "" {
		cfg.messageID = NewMessageID()
	}
	// RR-8.4: correlation_id = message_id, so a responder that echoes
	// correlation_id (the tutorial's, the Java RpcServer) answers this call.
	if cfg.correlationID == "" {
		cfg.correlationID = cfg.messageID
	}
	if r.pol.RequestCorrelationID == policy.NoRequestCorrelation {
		cfg.correlationID = "" // RR-8.4 says carry it
	}
	body, err := json.Marshal(request)
	if err != nil {
		return err
	}
	id := cfg.messageID
	s, err := r.session(ctx, cfg.timeout)
	if err != nil {
		return err
	}
	replyTo, err := r.replyQueueForCall(s)
	if err != nil {
		return err
	}
	msg := r.requestPublishing(id, cfg.correlationID, replyTo, body, cfg.headers)
	r.setType(&msg, cfg.msgType)
	if err := r.checkShortStrings(&msg); err != nil {
		return err
	}

	c, err := r.register(id)
	if err != nil {
		return err
	}
	defer r.pending.Done()
	if err := r.send(s, exchange, routingKey, msg, r.pol.HonourReturns); err != nil {
		r.forget(id)
		return err
	}
	return r.waitReply(ctx, s, id, c, cfg.timeout, reply)
}

// waitReply waits for the reply of call c (message id id), sent on session s.
func (r *Requester) waitReply(ctx context.Context, s *replySession, id string, c *call, timeout time.Duration, reply interface{}) error {
	timer := time.NewTimer(r.requestDeadline(timeout))
	defer timer.Stop()
	select {
	case d := <-c.reply:
		return r.decode(d, reply)
	case <-timer.C:
		if r.forget(id) {
			return r.timedOutCall(id, timeout, reply)
		}
	case <-ctx.Done():
		if r.forget(id) {
			return ctx.Err()
		}
	case <-r.closing():
		if r.forget(id) {
			return ErrClosed
		}
	case <-r.lostOf(s):
		// RR-20.1: its reply queue went with the connection.
		if r.forget(id) {
			return s.lostError()
		}
	}
	// The reply won the race against the timer: it is already ours.
	return r.decode(<-c.reply, reply)
}

// requestDeadline is how long a request waits for its reply: its timeout
// (RR-9.6), or under a late policy half as long again.
func (r *Requester) requestDeadline(timeout time.Duration) time.Duration {
	if r.pol.RequestDeadline == policy.LateDeadline {
		return timeout + timeout/2
	}
	return timeout
}

// timedOutCall counts a call that got no reply in time and ends it with an
// error wrapping ErrTimedOut, or under a null-reply policy as a reply of
// null (RR-9 says it timed out).
func (r *Requester) timedOutCall(id string, timeout time.Duration, reply interface{}) error {
	if r.pol.CountTimeouts {
		atomic.AddInt64(&r.timedOut, 1)
	}
	if r.pol.TimeoutOutcome == policy.TimeoutIsNullReply {
		return json.Unmarshal([]byte("null"), reply)
	}
	return fmt.Errorf("%w: no reply to %s within %s", ErrTimedOut, id, timeout)
}

// send publishes a request or a gather's copy on session s. A publish the
// broker returned fails it at once (RR-13) unless honourReturns is off, when
// the broker's ack is taken as delivery and the call waits for its timeout.
// One the connection's loss left unconfirmed is a *ConnectionLostError: it is
// never taken as sent.
func (r *Requester) send(s *replySession, exchange, key string, msg amqp.Publishing, honourReturns bool) error {
	if err := returnsHonoured(s.pub.publish(exchange, key, msg), honourReturns); err != nil {
		return sendError(s, err)
	}
	return nil
}

// returnsHonoured is a publish's error as a caller sees it: a *ReturnedError
// is dropped when returns are not honoured.
func returnsHonoured(err error, honour bool) error {
	var returned *ReturnedError
	if !honour && errors.As(err, &returned) {
		return nil
	}
	return err
}

// setType gives the request its type: the AMQP type property, or under a
// header policy an application header named type. No type sets nothing.
func (r *Requester) setType(msg *amqp.Publishing, msgType string) {
	if msgType == "" {
		return
	}
	if r.pol.TypeCarrier == policy.TypeHeader {
		msg.Headers["type"] = msgType
		return
	}
	msg.Type = msgType
}

// closing is what ends a pending call when the requester closes: done, or
// under a wait policy nothing (a nil channel never fires), so the call waits
// out its timeout.
func (r *Requester) closing() <-chan struct{} {
	if r.pol.PendingAtClose == policy.WaitTimeout {
		return nil
	}
	return r.done
}

// hopsHeader is the header a narrow_int_header policy adds.
const hopsHeader = InternalHeaderPrefix + "hops"

// requestPublishing addresses a request. The reply address goes in both the
// native reply_to and the acemq-reply-to header, because older bindings in
// other languages read only one of them.
func (r *Requester) requestPublishing(messageID, correlationID, replyTo string, body []byte, extra amqp.Table) amqp.Publishing {
	msg := amqp.Publishing{
		ContentType:   contentTypeJSON,
		MessageId:     messageID,
		CorrelationId: correlationID,
		Body:          body,
		Headers:       amqp.Table{},
	}
	for k, v := range extra {
		msg.Headers[k] = v
	}
	if r.pol.WriteHeaderAddress {
		if r.pol.HeaderAddressAsBytes {
			msg.Headers[ReplyToHeader] = []byte(replyTo)
		} else {
			msg.Headers[ReplyToHeader] = replyTo
		}
	}
	if r.pol.WriteNativeAddress {
		msg.ReplyTo = replyTo
		switch r.pol.NativeAddress {
		case policy.StaleAddress:
			// The two addresses disagree (RR-1 wants the same queue).
			msg.ReplyTo = replyTo + ".stale"
		case policy.EmptyAddress:
			// RR-3.3 forbids an empty address; amqp091-go leaves an
			// empty reply_to out of the frame, so it goes out absent.
			msg.ReplyTo = ""
		}
	}
	if r.pol.NarrowIntHeader {
		// A Go uint8 goes out as 'B', which WF-2 forbids.
		msg.Headers[hopsHeader] = uint8(1)
	}
	return msg
}

// checkShortStrings refuses a request whose short-string properties do not
// fit (RR-18).
func (r *Requester) checkShortStrings(msg *amqp.Publishing) error {
	if r.pol.LongShortString == policy.Truncate {
		truncateShortStrings(msg)
	}
	return checkShortStrings(*msg)
}

func (r *Requester) register(id string) (*call, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if _, dup := r.calls[id]; dup {
		return nil, fmt.Errorf("acemq: a request with message id %q is already waiting", id)
	}
	r.seq++
	c := &call{seq: r.seq, reply: make(chan amqp.Delivery, 1)}
	r.calls[id] = c
	if r.remembersPast() {
		if r.pastRequests == nil {
			r.pastRequests = map[string]bool{}
		}
		r.pastRequests[id] = true
	}
	// Under r.mu and before Close sets closed: Close's Wait sees it.
	r.pending.Add(1)
	return c, nil
}

// forget removes a waiting call and reports whether it was still waiting.
func (r *Requester) forget(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.calls[id]; !ok {
		return false
	}
	delete(r.calls, id)
	return true
}

func (r *Requester) decode(d amqp.Delivery, reply interface{}) error {
	if r.pol.UnknownReplyHeaders == policy.FailUnknownHeaders {
		// RR-5 says a requester ignores headers it does not know.
		if name, ok := unknownReplyHeader(d.Headers); ok {
			return &DecodeError{Err: fmt.Errorf("unexpected reply header %q", name)}
		}
	}
	if r.pol.ReadErrorHeader {
		if failure, ok := HeaderString(d.Headers, ErrorHeader); ok {
			return &ResponderFailedError{Failure: failure}
		}
	}
	if err := json.Unmarshal(d.Body, reply); err != nil {
		return &DecodeError{Err: err}
	}
	return nil
}

// unknownReplyHeader is the first header name, in sorted order, that is
// neither acemq-error nor responseMessageId nor an x- one (the broker's and
// clients' own, e.g. RabbitMQ.Client 7's x-dotnet-pub-seq-no, pass).
func unknownReplyHeader(h amqp.Table) (string, bool) {
	var names []string
	for k := range h {
		if k != ErrorHeader && k != ResponseMessageIDHeader && !strings.HasPrefix(k, "x-") {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	sort.Strings(names)
	return names[0], true
}

func (r *Requester) consume(deliveries <-chan amqp.Delivery) {
	for d := range deliveries {
		r.dispatch(d)
	}
}

// dispatch hands a reply to the gather or the call it answers, or counts it
// Unmatched. Gathers are matched on responseMessageId and calls on
// correlation_id; a reply is never given to anyone else. Whether the gather
// or call is still open and taking the reply happen under one hold of r.mu:
// a gather is removed from r.gathers in the same hold that fills its count,
// and a call in the one that hands it its reply, so a reply arriving after
// either is Unmatched (SG-8.1, RR-8.2), never added to a finished call.
func (r *Requester) dispatch(d amqp.Delivery) {
	r.mu.Lock()
	counted := false
	if g, addressed := r.gatherFor(d); g != nil {
		_, failed := HeaderString(d.Headers, ErrorHeader)
		switch {
		case !failed:
			r.keep(g, d.Body)
			return
		case addressed && r.pol.GatherFailureReply == policy.KeepGatherFailure:
			// SG-10.1 says a failure is no answer; this keeps it as null.
			r.keep(g, []byte("null"))
			return
		case addressed:
			// A failure reply to a pending gather is not one of its
			// answers (SG-10): dropped and counted Unmatched, by its own
			// knob, whatever the SG-8 ones say.
			counted = r.pol.CountGatherFailures
		default:
			// A stray failure reply is no gather's: SG-8, as below.
			counted = r.countsUnmatched(d)
		}
	} else if id, c := r.callFor(d); c != nil && !r.dropsUndecodable(d) {
		delete(r.calls, id)
		r.mu.Unlock()
		c.reply <- d
		return
	} else {
		counted = r.countsUnmatched(d)
	}
	r.mu.Unlock()
	if counted {
		atomic.AddInt64(&r.unmatched, 1)
	}
	if r.opts.OnUnmatched != nil {
		responseID, _ := HeaderString(d.Headers, ResponseMessageIDHeader)
		r.opts.OnUnmatched(UnmatchedReply{CorrelationID: d.CorrelationId, ResponseMessageID: responseID})
	}
}

// keep adds a reply to its gather, which is open (found in r.gathers under
// r.mu, held on entry and released here), and ends the gather in the same
// hold when that fills its count.
func (r *Requester) keep(g *gathering, body []byte) {
	onReply := g.add(body)
	full := g.complete()
	if full {
		delete(r.gathers, g.id)
	}
	r.mu.Unlock()
	if onReply != nil {
		onReply(json.RawMessage(body))
	}
	// Resolve only after the callback saw the last reply.
	if full {
		close(g.full)
	}
}

// countsUnmatched says whether a reply nobody takes is counted in Unmatched:
// always (RR-8, SG-8), unless a policy leaves out requests' or gathers'
// replies. A reply is a request's when its correlation_id names a request
// this requester sent, or when it has no responseMessageId (which only a
// gather reads); else a gather's. Called under r.mu.
func (r *Requester) countsUnmatched(d amqp.Delivery) bool {
	if !r.remembersPast() {
		return r.pol.CountUnmatched
	}
	_, named := HeaderString(d.Headers, ResponseMessageIDHeader)
	if r.pastRequests[d.CorrelationId] || !named {
		return r.pol.CountUnmatched
	}
	return r.pol.CountGatherUnmatched
}

// remembersPast says whether the policy counts one kind of unmatched reply
// and not the other, and so needs to know the past requests' ids.
func (r *Requester) remembersPast() bool {
	return r.pol.CountUnmatched != r.pol.CountGatherUnmatched
}

// dropsUndecodable is a Drop policy for a reply body that is not JSON; RR-19
// wants it to end its call with decode_error instead.
func (r *Requester) dropsUndecodable(d amqp.Delivery) bool {
	if r.pol.UndecodableReply != policy.Drop {
		return false
	}
	_, failed := HeaderString(d.Headers, ErrorHeader)
	return !failed && !json.Valid(d.Body)
}

func (r *Requester) callFor(d amqp.Delivery) (string, *call) {
	if r.pol.MatchRepliesBy == policy.ByCorrelationID {
		if c := r.calls[d.CorrelationId]; c != nil || r.pol.UnmatchedReply != policy.UnmatchedToOldestWaiter {
			return d.CorrelationId, c
		}
		// A reply for nobody goes to the oldest call waiting (RR-8 says
		// drop it).
	}
	var oldestID string
	var oldest *call
	for id, c := range r.calls {
		if oldest == nil || c.seq < oldest.seq {
			oldestID, oldest = id, c
		}
	}
	return oldestID, oldest
}

// Close ends every pending call and gather at once with ErrClosed (none is
// counted in TimedOut), returns once they all have, and closes the
// requester's channels; the reply queue goes with them. A caller's connection
// (NewRequester) stays open; DialRequester's is closed.
func (r *Requester) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	s := r.sess
	r.mu.Unlock()
	if r.pol.PendingAtClose != policy.WaitTimeout {
		r.pending.Wait()
	}
	if s == nil {
		return nil
	}
	if r.config != nil {
		return s.conn.Close()
	}
	return s.close()
}
