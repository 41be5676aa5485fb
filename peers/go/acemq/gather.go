package acemq

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RequestTimeoutError ends a gather that was given an ExpectedReplyCount and
// did not receive that many replies in time. PartialReplies holds every reply
// that did arrive, in arrival order.
type RequestTimeoutError struct {
	MessageID      string
	Expected       int
	PartialReplies []json.RawMessage
}

// Unwrap makes a shortfall a timeout too: errors.Is(err, ErrTimedOut).
func (e *RequestTimeoutError) Unwrap() error { return ErrTimedOut }

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("gather %s: %d of %d replies before the timeout", e.MessageID, len(e.PartialReplies), e.Expected)
}

// GatherOptions configures one scatter-gather.
type GatherOptions struct {
	// ExpectedReplyCount resolves the gather as soon as that many replies
	// arrived, and makes a shortfall at the timeout a *RequestTimeoutError.
	// Zero means no count: the gather resolves at the timeout with whatever
	// arrived.
	ExpectedReplyCount int
	// Timeout is the gather's budget; zero means the requester's timeout.
	Timeout time.Duration
	// CorrelationID is the business correlation id every copy carries; it
	// defaults to the gather's message id (SG-1). It plays no part in
	// matching.
	CorrelationID string
	// MessageID is the requestMessageId; empty means a fresh one.
	MessageID string
	// Type, when set, is the AMQP type property of every message the gather
	// publishes (the seed's sendRequestMulti(type, ...)); empty sends none.
	Type string
}

type gathering struct {
	id       string
	seq      uint64
	expected int
	replies  []json.RawMessage
	onReply  func(json.RawMessage)
	// full is closed when the expected count is reached.
	full chan struct{}
	// kept, when not nil (a restart_per_reply policy), hears of every
	// reply kept, so that await starts the timeout again.
	kept chan struct{}
	// sess is the connection its copies were sent on.
	sess *replySession
}

// add keeps a reply and returns the callback to run for it.
func (g *gathering) add(body []byte) func(json.RawMessage) {
	g.replies = append(g.replies, json.RawMessage(append([]byte(nil), body...)))
	if g.kept != nil {
		select {
		case g.kept <- struct{}{}:
		default: // await has one restart pending already
		}
	}
	return g.onReply
}

func (g *gathering) complete() bool {
	return g.expected > 0 && len(g.replies) >= g.expected
}

// SendRequestMulti publishes message to the endpoint queue and gathers the
// replies. A returned copy (no such queue) ends the gather at once with a
// *ReturnedError. A queue gives each message to one of its competing consumers, so
// it publishes ExpectedReplyCount copies (one without a count), all with the
// same message id and correlation id.
func (r *Requester) SendRequestMulti(ctx context.Context, endpoint string, message interface{}, opts GatherOptions) ([]json.RawMessage, error) {
	copies := r.multiCopies(opts.ExpectedReplyCount)
	if opts.ExpectedReplyCount == 0 && r.pol.GatherMissingCount == policy.MissingCountIsCopies {
		// SG-7 forbids this: the copies published taken as the count, so the
		// gather resolves once each was answered instead of spending its budget.
		opts.ExpectedReplyCount = copies
		if opts.ExpectedReplyCount < 1 {
			opts.ExpectedReplyCount = 1
		}
	}
	return r.gather(ctx, "", endpoint, copies, message, nil, opts)
}

// multiCopies is how many copies sendRequestMulti publishes for an expected
// count (0: none given): that many, one without a count (SG-2), or what a
// policy says.
func (r *Requester) multiCopies(expected int) int {
	if r.pol.MultiCopies == policy.OneCopy {
		return 1
	}
	if expected < 1 {
		return r.pol.MultiCopiesWithoutCount
	}
	return expected
}

// PublishRequest publishes one message to a fanout exchange, which gives a
// copy to every bound queue, and gathers the replies. onReply, when not nil,
// is called once per reply in arrival order, on the requester's delivery
// goroutine. A returned publish (no queue bound) ends the gather at once with
// a *ReturnedError. A gather that reaches its timeout is not counted in
// TimedOut, which counts requests.
func (r *Requester) PublishRequest(ctx context.Context, exchange string, message interface{}, onReply func(json.RawMessage), opts GatherOptions) ([]json.RawMessage, error) {
	// SG-2: one message; the exchange copies it. A policy may send more.
	return r.gather(ctx, exchange, "", r.pol.PublishCopies, message, onReply, opts)
}

func (r *Requester) gather(ctx context.Context, exchange, key string, copies int, message interface{}, onReply func(json.RawMessage), opts GatherOptions) ([]json.RawMessage, error) {
	opts = r.resolveGather(opts)
	body, err := json.Marshal(message)
	if err != nil {
		return nil, err
	}
	sess, err := r.session(ctx, opts.Timeout)
	if err != nil {
		return nil, err
	}
	replyTo, err := r.replyQueueForCall(sess)
	if err != nil {
		return nil, err
	}
	msg := r.requestPublishing(opts.MessageID, opts.CorrelationID, replyTo, body, nil)
	r.setType(&msg, opts.Type)
	if err := r.checkShortStrings(&msg); err != nil {
		return nil, err
	}

	g := r.newGathering(opts.MessageID, opts.ExpectedReplyCount, onReply)
	g.sess = sess
	if err := r.registerGather(g); err != nil {
		return nil, err
	}
	defer r.pending.Done()
	for i := 0; i < copies; i++ {
		if i > 0 && r.pol.GatherCopyIDs == policy.DistinctIDs {
			msg.MessageId = NewMessageID()
		}
		if err := r.send(sess, exchange, key, msg, r.pol.HonourGatherReturns); err != nil {
			r.endGather(g)
			return nil, err
		}
	}
	return r.await(ctx, g, opts.Timeout)
}

// resolveGather fills in what a gather was not given: the requester's
// timeout, a fresh requestMessageId, and that id as the correlation id
// (SG-1).
func (r *Requester) resolveGather(opts GatherOptions) GatherOptions {
	if opts.Timeout <= 0 {
		opts.Timeout = r.opts.Timeout
	}
	if opts.ExpectedReplyCount == 0 && r.pol.GatherMissingCount == policy.MissingCountIsOne {
		opts.ExpectedReplyCount = 1
	}
	if opts.MessageID == "" {
		opts.MessageID = NewMessageID()
	}
	if opts.CorrelationID == "" && r.pol.GatherDefaultCorrelation == policy.CorrelateByRequestMessageID {
		opts.CorrelationID = opts.MessageID
	}
	return opts
}

// await waits for a registered gather's end: its count (SG-5), its timeout
// (SG-6, SG-7), the caller's context, the requester's Close, or the loss of
// its connection (RR-20.1).
func (r *Requester) await(ctx context.Context, g *gathering, timeout time.Duration) ([]json.RawMessage, error) {
	full := g.full
	if !r.pol.GatherResolvesEarly {
		// A nil channel never fires: only the timer ends the gather.
		full = nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
wait:
	for {
		select {
		case <-full:
			break wait
		case <-g.kept:
			// Only a restart_per_reply policy (g.kept nil never fires):
			// SG-9.1 says a reply does not extend the timeout.
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(timeout)
		case <-timer.C:
			// TimedOut counts requests only (RR-9): a gather's timeout is
			// its budget (SG-7) or a shortfall (SG-6), and neither is
			// counted.
			if r.pol.CountGatherTimeouts {
				atomic.AddInt64(&r.timedOut, 1)
			}
			break wait
		case <-ctx.Done():
			r.endGather(g)
			return nil, ctx.Err()
		case <-r.closing():
			r.endGather(g)
			return nil, ErrClosed
		case <-r.lostOf(g.sess):
			// RR-20.1: its reply queue went with the connection.
			r.endGather(g)
			return nil, g.sess.lostError()
		}
	}
	// What the gather has when endGather takes it out of r.gathers is its
	// result: a reply dispatched before (under the same lock) is in it, one
	// after is Unmatched.
	replies := r.endGather(g)
	if g.expected > 0 && len(replies) < g.expected && r.pol.GatherShortfall == policy.RejectShortfall {
		return nil, &RequestTimeoutError{MessageID: g.id, Expected: g.expected, PartialReplies: replies}
	}
	return replies, nil
}

func (r *Requester) newGathering(id string, expected int, onReply func(json.RawMessage)) *gathering {
	g := &gathering{id: id, expected: expected, onReply: onReply, full: make(chan struct{})}
	if r.pol.GatherDeadline == policy.RestartPerReply {
		g.kept = make(chan struct{}, 1)
	}
	return g
}

func (r *Requester) registerGather(g *gathering) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if _, dup := r.gathers[g.id]; dup {
		return fmt.Errorf("acemq: a gather with message id %q is already running", g.id)
	}
	r.seq++
	g.seq = r.seq
	r.gathers[g.id] = g
	r.pending.Add(1)
	return nil
}

// endGather stops a gather from taking replies and returns what it has: a
// reply arriving later is Unmatched.
func (r *Requester) endGather(g *gathering) []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.gathers, g.id)
	replies := append([]json.RawMessage(nil), g.replies...)
	if g.expected > 0 && len(replies) > g.expected {
		replies = replies[:g.expected]
	}
	return replies
}

// gatherFor finds the running gather a reply belongs to: by its
// responseMessageId header, never by correlation_id, which a bus responder
// may set to the business correlation id that all copies share. addressed
// is false for a stray reply a policy hands to another gather. Called under
// r.mu.
func (r *Requester) gatherFor(d amqp.Delivery) (g *gathering, addressed bool) {
	var key string
	if r.pol.GatherDemuxBy == policy.DemuxByCorrelationID {
		key = d.CorrelationId
	} else {
		key, _ = HeaderString(d.Headers, ResponseMessageIDHeader)
	}
	if g = r.gathers[key]; g != nil || r.pol.GatherStrayReply != policy.StrayOldestGather {
		return g, g != nil
	}
	// A reply that is neither a pending gather's nor a waiting call's joins
	// the oldest pending gather instead of being Unmatched (SG-8 says not).
	if _, waiting := r.calls[d.CorrelationId]; waiting {
		return nil, false
	}
	for _, p := range r.gathers {
		if g == nil || p.seq < g.seq {
			g = p
		}
	}
	return g, false
}
