package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"acemq-interop/peers/go/acemq"
	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The protocol versions this peer speaks, oldest first.
// 3: type, the closed outcome, unmatched with both ids; 4: policy values
// instead of profile and mutant names, and a responder without events;
// 5: every node's URL, connection names, the connection_lost outcome and the
// recovered event.
var protocols = []int{1, 2, 3, 4, 5}

// recoveryProtocol is the version from which a role connects by the
// binding's DialRequester / DialResponder, under its connection name, and
// recovers a lost connection.
const recoveryProtocol = 5

// command is every field any op takes; each op reads the ones it needs.
// Optional fields are pointers, so that an absent one stays absent all the
// way to the binding (protocol 2: the binding's defaults apply, not ours).
type command struct {
	ID        *int64       `json:"id"`
	Op        string       `json:"op"`
	Protocol  *int         `json:"protocol"`
	Protocols []int        `json:"protocols"`
	AMQPURL   string       `json:"amqp_url"`
	TLS       *tlsSettings `json:"tls"`
	// AMQPURLs is every broker node (hello), or a role's nodes, preferred
	// first (requester.open, responder.start); version 5.
	AMQPURLs []string `json:"amqp_urls"`
	// ConnectionName is a role's connection name (version 5).
	ConnectionName string `json:"connection_name"`

	Name   string `json:"name"`
	Client string `json:"client"`
	// Policy is protocol 4's knob values; "profile" and "mutant", sent
	// beside it for the harness's log, are not read.
	Policy map[string]json.RawMessage `json:"policy"`
	// Events false (protocol 4): a responder writes no per-request event.
	Events *bool `json:"events"`

	Requester     string                 `json:"requester"`
	Exchange      string                 `json:"exchange"`
	RoutingKey    *string                `json:"routing_key"`
	Body          json.RawMessage        `json:"body"`
	TimeoutMS     *float64               `json:"timeout_ms"`
	Headers       map[string]interface{} `json:"headers"`
	MessageID     string                 `json:"message_id"`
	CorrelationID *string                `json:"correlation_id"`
	Type          string                 `json:"type"`

	Mode               string `json:"mode"`
	Endpoint           string `json:"endpoint"`
	ExpectedReplyCount *int   `json:"expected_reply_count"`

	Queue       string    `json:"queue"`
	Bind        *binding  `json:"bind"`
	Behavior    *behavior `json:"behavior"`
	MaxAttempts *int      `json:"max_attempts"`

	Of string `json:"of"`

	Requests  *int `json:"requests"`
	InFlight  *int `json:"in_flight"`
	BodyBytes *int `json:"body_bytes"`
	Warmup    *int `json:"warmup"`
}

// tlsSettings is hello's "tls": the CA that signed the broker's certificate.
type tlsSettings struct {
	CAFile string `json:"ca_file"`
}

type binding struct {
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routing_key"`
}

type behavior struct {
	Reply        string  `json:"reply"`
	ErrorMessage *string `json:"error_message"`
	DelayMS      float64 `json:"delay_ms"`
}

// answer is the result fields of a successful command.
type answer map[string]interface{}

// badCommand is a command the peer cannot carry out as given.
type badCommand struct{ msg string }

func (e *badCommand) Error() string { return e.msg }

func bad(format string, args ...interface{}) error {
	return &badCommand{msg: fmt.Sprintf(format, args...)}
}

// openRequester is a requester and, before version 5, the connection the
// adapter opened for it (nil: the binding's own, closed by its Close).
type openRequester struct {
	conn *amqp.Connection
	r    *acemq.Requester
}

func (o *openRequester) close() {
	o.r.Close()
	if o.conn != nil {
		o.conn.Close()
	}
}

// openResponder is a binding responder, or a raw one (r nil); conn is the
// connection the adapter opened for it (nil: the binding's own).
type openResponder struct {
	conn *amqp.Connection
	r    *acemq.Responder
	raw  *rawResponder
}

func (o *openResponder) close() {
	if o.r != nil {
		o.r.Close()
	} else {
		o.raw.close()
	}
	if o.conn != nil {
		o.conn.Close()
	}
}

type peer struct {
	out *output

	mu         sync.Mutex
	url        string
	urls       []string    // hello's amqp_urls (version 5)
	tls        *tls.Config // from hello's "tls"; nil: a plain run
	protocol   int
	claimed    map[string]bool
	requesters map[string]*openRequester
	responders map[string]*openResponder
}

func newPeer(out *output, url string) *peer {
	return &peer{
		out:        out,
		url:        url,
		protocol:   1,
		claimed:    map[string]bool{},
		requesters: map[string]*openRequester{},
		responders: map[string]*openResponder{},
	}
}

func (p *peer) dispatch(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var cmd command
	if err := json.Unmarshal(line, &cmd); err != nil || cmd.ID == nil || cmd.Op == "" {
		log.Printf("ignored a line that is not a command (%v): %s", err, line)
		return
	}
	if cmd.Op == "shutdown" {
		p.closeAll()
		p.out.write(map[string]interface{}{"id": *cmd.ID, "ok": true})
		os.Exit(0)
	}
	go p.run(cmd)
}

func (p *peer) run(cmd command) {
	ops := map[string]func(command) (answer, error){
		"hello":           p.hello,
		"requester.open":  p.requesterOpen,
		"requester.close": p.requesterClose,
		"request":         p.request,
		"gather":          p.gather,
		"responder.start": p.responderStart,
		"responder.stop":  p.responderStop,
		"counters":        p.counters,
		"load":            p.load,
	}
	msg := map[string]interface{}{"id": *cmd.ID}
	op, ok := ops[cmd.Op]
	var result answer
	var err error
	if !ok || cmd.Op == "load" && p.speaks() < 2 {
		err = bad("unknown op %q", cmd.Op)
	} else {
		result, err = op(cmd)
	}
	if err != nil {
		log.Printf("command %d (%s) refused: %v", *cmd.ID, cmd.Op, err)
		msg["ok"] = false
		msg["error"] = err.Error()
	} else {
		for k, v := range result {
			msg[k] = v
		}
		msg["ok"] = true
	}
	p.out.write(msg)
}

// speaks is the protocol version agreed in hello (1 until then).
func (p *peer) speaks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.protocol
}

// negotiate picks the highest version both sides list: the harness lists its
// own in "protocols" (version 2), or offers one "protocol" (version 1).
func negotiate(cmd command) (int, error) {
	offered := cmd.Protocols
	if len(offered) == 0 && cmd.Protocol != nil {
		offered = []int{*cmd.Protocol}
	}
	if len(offered) == 0 {
		return 1, nil
	}
	best := 0
	for _, v := range offered {
		for _, mine := range protocols {
			if v == mine && v > best {
				best = v
			}
		}
	}
	if best == 0 {
		return 0, bad("this peer speaks protocols %v, not %v", protocols, offered)
	}
	return best, nil
}

func (p *peer) hello(cmd command) (answer, error) {
	version, err := negotiate(cmd)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := tlsOf(cmd.TLS)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.protocol = version
	if cmd.AMQPURL != "" {
		p.url = cmd.AMQPURL
	}
	p.urls = cmd.AMQPURLs
	p.tls = tlsConfig
	p.mu.Unlock()
	// TLS is additive to both versions: every connection this peer opens goes through dial.
	capabilities := []string{"request", "respond", "gather", "tls"}
	if version >= 2 {
		capabilities = append(capabilities, "load")
	}
	res := answer{
		"protocol":     version,
		"peer":         peerName,
		"language":     "Go",
		"binding":      "acemq-go " + acemq.Version,
		"client":       clientVersion(),
		"capabilities": capabilities,
	}
	if version >= 4 {
		res["knobs"], res["unreachable"] = knobs(), unreachable
	} else {
		// Older versions name profiles and mutants, which this peer no
		// longer knows: it offers the binding as it ships.
		res["profiles"], res["mutants"] = []string{"current"}, []string{}
	}
	return res, nil
}

// clientVersion names the AMQP client linked in. amqp091-go keeps its version
// in an unexported constant, so it is read from the module build info.
func clientVersion() string {
	const module = "github.com/rabbitmq/amqp091-go"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return "amqp091-go " + strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	return "amqp091-go (unknown version)"
}

// tlsOf is the client TLS configuration hello's "tls" asks for (nil for none).
func tlsOf(settings *tlsSettings) (*tls.Config, error) {
	if settings == nil {
		return nil, nil
	}
	if settings.CAFile == "" {
		return nil, bad("hello's tls needs a ca_file")
	}
	return acemq.TLSConfig(settings.CAFile)
}

// dial opens a connection of its own to hello's broker, with hello's TLS
// settings: binding requesters and responders, the raw client and the raw
// responder all connect here.
func (p *peer) dial() (*amqp.Connection, error) {
	p.mu.Lock()
	url, tlsConfig := p.url, p.tls
	p.mu.Unlock()
	return acemq.Dial(url, tlsConfig)
}

// connection is a version-5 role's connection settings: the command's
// amqp_urls (else hello's, else hello's amqp_url) and its connection_name.
func (p *peer) connection(cmd command) acemq.ConnectionConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	urls := cmd.AMQPURLs
	if len(urls) == 0 {
		urls = p.urls
	}
	if len(urls) == 0 {
		urls = []string{p.url}
	}
	return acemq.ConnectionConfig{URLs: urls, Name: cmd.ConnectionName, TLS: p.tls}
}

// recovered writes the version-5 recovered event of the role named.
func (p *peer) recovered(role, name string) func() {
	return func() {
		p.out.write(map[string]interface{}{"event": "recovered", role: name})
	}
}

func (p *peer) claim(name string) error {
	if name == "" {
		return bad("missing field 'name'")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claimed[name] {
		return bad("the name %q is already in use", name)
	}
	p.claimed[name] = true
	return nil
}

func (p *peer) release(name string) {
	p.mu.Lock()
	delete(p.claimed, name)
	p.mu.Unlock()
}

// lost writes connection_lost for the requester or responder named: the
// broker or the network closed what it consumes on (protocol 2 only).
func (p *peer) lost(role, name string) func(*amqp.Error) {
	return func(reason *amqp.Error) {
		if p.speaks() < 2 {
			return
		}
		text := reason.Reason
		if text == "" {
			text = reason.Error()
		}
		p.out.write(map[string]interface{}{"event": "connection_lost", role: name, "reason": fmt.Sprintf("%s (%d)", text, reason.Code)})
	}
}

// newRequester opens a requester through the binding's public constructor,
// with the policy the command's knob values resolved to.
func newRequester(conn *amqp.Connection, pol policy.Requester, opts acemq.RequesterOptions) (*acemq.Requester, error) {
	return acemq.NewRequester(conn, policy.WithRequester(opts, pol))
}

func (p *peer) requesterOpen(cmd command) (answer, error) {
	pol, err := requesterPolicy(cmd.Policy)
	if err != nil {
		return nil, err
	}
	if err := p.claim(cmd.Name); err != nil {
		return nil, err
	}
	name := cmd.Name
	opts := acemq.RequesterOptions{
		OnUnmatched: func(reply acemq.UnmatchedReply) {
			p.out.write(map[string]interface{}{
				"event": "unmatched", "requester": name,
				"correlation_id":      nullable(reply.CorrelationID),
				"response_message_id": nullable(reply.ResponseMessageID),
			})
		},
		OnLost: p.lost("requester", name),
	}
	var conn *amqp.Connection
	var r *acemq.Requester
	if p.speaks() >= recoveryProtocol {
		opts.OnRecovered = p.recovered("requester", name)
		r, err = acemq.DialRequester(p.connection(cmd), policy.WithRequester(opts, pol))
	} else if conn, err = p.dial(); err == nil {
		if r, err = newRequester(conn, pol, opts); err != nil {
			conn.Close()
		}
	}
	if err != nil {
		p.release(name)
		return nil, err
	}
	p.mu.Lock()
	p.requesters[name] = &openRequester{conn: conn, r: r}
	p.mu.Unlock()
	return answer{"reply_queue": r.ReplyQueue()}, nil
}

func (p *peer) requesterClose(cmd command) (answer, error) {
	p.mu.Lock()
	o := p.requesters[cmd.Name]
	delete(p.requesters, cmd.Name)
	p.mu.Unlock()
	if o == nil {
		return nil, bad("no requester named %q", cmd.Name)
	}
	// The binding's Close returns once its pending calls have ended
	// (closed), so they answer before this does.
	o.close()
	p.release(cmd.Name)
	return answer{}, nil
}

func (p *peer) requester(name string) (*acemq.Requester, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.requesters[name]
	if o == nil {
		return nil, bad("no requester named %q", name)
	}
	return o.r, nil
}

// timeoutOf is the command's timeout_ms; zero when absent, which the binding
// reads as its own default.
func timeoutOf(cmd command) (time.Duration, error) {
	if cmd.TimeoutMS == nil {
		return 0, nil
	}
	if *cmd.TimeoutMS <= 0 {
		return 0, bad("timeout_ms must be positive")
	}
	return time.Duration(*cmd.TimeoutMS * float64(time.Millisecond)), nil
}

func bodyOf(cmd command) json.RawMessage {
	if len(cmd.Body) == 0 {
		return json.RawMessage("null")
	}
	return cmd.Body
}

func (p *peer) request(cmd command) (answer, error) {
	r, err := p.requester(cmd.Requester)
	if err != nil {
		return nil, err
	}
	if cmd.RoutingKey == nil {
		return nil, bad("missing field 'routing_key'")
	}
	timeout, err := timeoutOf(cmd)
	if err != nil {
		return nil, err
	}
	// The adapter must report the request's message id, so it makes one
	// with the binding's own generator when the harness gives none.
	id := cmd.MessageID
	if id == "" {
		id = acemq.NewMessageID()
	}
	opts := []acemq.RequestOption{acemq.WithMessageID(id)}
	if cmd.Type != "" {
		opts = append(opts, acemq.WithType(cmd.Type))
	}
	if cmd.CorrelationID != nil {
		opts = append(opts, acemq.WithCorrelationID(*cmd.CorrelationID))
	}
	if cmd.TimeoutMS != nil {
		opts = append(opts, acemq.WithTimeout(timeout))
	}
	if len(cmd.Headers) > 0 {
		opts = append(opts, acemq.WithHeaders(table(cmd.Headers)))
	}
	started := time.Now()
	var reply json.RawMessage
	callErr := r.Request(context.Background(), cmd.Exchange, *cmd.RoutingKey, bodyOf(cmd), &reply, opts...)
	res, err := requestOutcome(reply, callErr)
	if res, err = p.versioned(res, err, callErr); err != nil {
		return nil, err
	}
	res["request_id"], res["elapsed_ms"] = id, elapsedMS(started)
	return res, nil
}

// requestOutcome is how a request call ended, as the protocol names it. The
// binding's errors are matched with errors.Is / errors.As, so a wrapped one
// (fmt.Errorf("...: %w", err)) is still its outcome; only an error that is no
// outcome (the call could not be made) is returned, as a refusal.
func requestOutcome(reply json.RawMessage, err error) (answer, error) {
	var failed *acemq.ResponderFailedError
	var undecodable *acemq.DecodeError
	switch {
	case err == nil:
		return answer{"outcome": "reply", "reply": reply}, nil
	case errors.Is(err, acemq.ErrTimedOut):
		return answer{"outcome": "timeout"}, nil
	case errors.As(err, &failed):
		return answer{"outcome": "responder_failed", "failure": failed.Failure}, nil
	case errors.As(err, &undecodable):
		return answer{"outcome": "decode_error", "error": undecodable.Err.Error()}, nil
	case errors.Is(err, acemq.ErrClosed):
		return answer{"outcome": "closed"}, nil
	}
	return lostOutcome(err)
}

// lostOutcome is the connection_lost outcome (version 5) of a call or
// gather its requester's connection's loss ended, with the client's reason;
// any other error is returned as it is.
func lostOutcome(err error) (answer, error) {
	var lost *acemq.ConnectionLostError
	if errors.As(err, &lost) {
		return answer{"outcome": "connection_lost", "reason": lost.ReasonText()}, nil
	}
	return nil, err
}

// versioned is the outcome of a call that ended with callErr as this
// protocol version has it: before version 5 there is no connection_lost
// outcome, and such a call is refused with its error's text.
func (p *peer) versioned(res answer, err, callErr error) (answer, error) {
	if err == nil && res["outcome"] == "connection_lost" && p.speaks() < recoveryProtocol {
		return nil, callErr
	}
	return res, err
}

func (p *peer) gather(cmd command) (answer, error) {
	r, err := p.requester(cmd.Requester)
	if err != nil {
		return nil, err
	}
	timeout, err := timeoutOf(cmd)
	if err != nil {
		return nil, err
	}
	opts := acemq.GatherOptions{
		Timeout:   timeout,
		MessageID: acemq.NewMessageID(),
		Type:      cmd.Type,
	}
	if cmd.CorrelationID != nil {
		opts.CorrelationID = *cmd.CorrelationID
	}
	if cmd.ExpectedReplyCount != nil {
		if *cmd.ExpectedReplyCount < 1 {
			return nil, bad("expected_reply_count must be at least 1")
		}
		opts.ExpectedReplyCount = *cmd.ExpectedReplyCount
	}
	body := bodyOf(cmd)
	started := time.Now()
	var replies []json.RawMessage
	switch cmd.Mode {
	case "", "multi":
		if cmd.Endpoint == "" {
			return nil, bad("missing field 'endpoint'")
		}
		replies, err = r.SendRequestMulti(context.Background(), cmd.Endpoint, body, opts)
	case "publish":
		if cmd.Exchange == "" {
			return nil, bad("missing field 'exchange'")
		}
		replies, err = r.PublishRequest(context.Background(), cmd.Exchange, body, nil, opts)
	default:
		return nil, bad("unknown gather mode %q", cmd.Mode)
	}
	callErr := err
	res, err := gatherOutcome(replies, callErr)
	if res, err = p.versioned(res, err, callErr); err != nil {
		return nil, err
	}
	res["request_id"], res["elapsed_ms"] = opts.MessageID, elapsedMS(started)
	return res, nil
}

// gatherOutcome is requestOutcome's counterpart: a shortfall, wrapped or
// not, is timeout_with_partial with its partial replies; any other timeout
// error (none has partial replies) is one with none.
func gatherOutcome(replies []json.RawMessage, err error) (answer, error) {
	var shortfall *acemq.RequestTimeoutError
	switch {
	case err == nil:
		return answer{"outcome": "replies", "replies": jsonValues(replies)}, nil
	case errors.As(err, &shortfall):
		return answer{"outcome": "timeout_with_partial", "replies": jsonValues(shortfall.PartialReplies)}, nil
	case errors.Is(err, acemq.ErrTimedOut):
		return answer{"outcome": "timeout_with_partial", "replies": []interface{}{}}, nil
	case errors.Is(err, acemq.ErrClosed):
		return answer{"outcome": "closed"}, nil
	}
	return lostOutcome(err)
}

func (p *peer) counters(cmd command) (answer, error) {
	p.mu.Lock()
	req, resp := p.requesters[cmd.Of], p.responders[cmd.Of]
	p.mu.Unlock()
	switch {
	case req != nil:
		return answer{"counters": map[string]int64{"timed_out": req.r.TimedOut(), "unmatched": req.r.Unmatched()}}, nil
	case resp != nil && resp.r != nil:
		return answer{"counters": map[string]int64{"answered": resp.r.Answered(), "unanswerable": resp.r.Unanswerable()}}, nil
	case resp != nil:
		// A raw responder keeps no counters.
		return answer{"counters": map[string]int64{}}, nil
	}
	return nil, bad("no requester or responder named %q", cmd.Of)
}

// closeAll closes every requester and responder, in parallel and each with a
// bound, so that exiting never hangs on a broker that stopped answering.
func (p *peer) closeAll() {
	p.mu.Lock()
	var closers []func()
	for _, o := range p.requesters {
		o := o
		closers = append(closers, o.close)
	}
	for _, o := range p.responders {
		closers = append(closers, o.close)
	}
	p.requesters = map[string]*openRequester{}
	p.responders = map[string]*openResponder{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, c := range closers {
			wg.Add(1)
			go func(c func()) { defer wg.Done(); c() }(c)
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		log.Printf("gave up waiting for connections to close")
	}
}

func elapsedMS(started time.Time) int64 {
	return time.Since(started).Milliseconds()
}

// nullable writes an empty string as JSON null: amqp091-go cannot tell an
// empty property from an absent one.
func nullable(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}

// jsonValues makes replies safe to embed: a body that is not JSON is passed
// on as a string rather than breaking the protocol line.
func jsonValues(replies []json.RawMessage) []interface{} {
	out := make([]interface{}, len(replies))
	for i, r := range replies {
		if json.Valid(r) {
			out[i] = r
		} else {
			out[i] = string(r)
		}
	}
	return out
}

// table converts JSON header values for amqp091-go: whole numbers become
// int64 (field type 'l', readable by every client), objects tables.
func table(m map[string]interface{}) amqp.Table {
	t := amqp.Table{}
	for k, v := range m {
		t[k] = fieldValue(v)
	}
	return t
}

func fieldValue(v interface{}) interface{} {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case map[string]interface{}:
		return table(x)
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = fieldValue(e)
		}
		return out
	}
	return v
}
