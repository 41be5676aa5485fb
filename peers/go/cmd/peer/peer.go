package main

import (
	"bytes"
	"context"
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

	amqp "github.com/rabbitmq/amqp091-go"
)

// command is every field any op takes; each op reads the ones it needs.
type command struct {
	ID       *int64 `json:"id"`
	Op       string `json:"op"`
	Protocol *int   `json:"protocol"`
	AMQPURL  string `json:"amqp_url"`

	Name    string  `json:"name"`
	Profile string  `json:"profile"`
	Mutant  *string `json:"mutant"`

	Requester     string                 `json:"requester"`
	Exchange      string                 `json:"exchange"`
	RoutingKey    *string                `json:"routing_key"`
	Body          json.RawMessage        `json:"body"`
	TimeoutMS     *float64               `json:"timeout_ms"`
	Headers       map[string]interface{} `json:"headers"`
	MessageID     string                 `json:"message_id"`
	CorrelationID string                 `json:"correlation_id"`
	Type          string                 `json:"type"`

	Mode               string `json:"mode"`
	Endpoint           string `json:"endpoint"`
	ExpectedReplyCount *int   `json:"expected_reply_count"`

	Queue       string    `json:"queue"`
	Bind        *binding  `json:"bind"`
	Behavior    *behavior `json:"behavior"`
	MaxAttempts int       `json:"max_attempts"`

	Of string `json:"of"`
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

type openRequester struct {
	conn *amqp.Connection
	r    *acemq.Requester
}

type openResponder struct {
	conn *amqp.Connection
	r    *acemq.Responder
}

type peer struct {
	out *output

	mu         sync.Mutex
	url        string
	claimed    map[string]bool
	requesters map[string]*openRequester
	responders map[string]*openResponder
}

func newPeer(out *output, url string) *peer {
	return &peer{
		out:        out,
		url:        url,
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
	}
	msg := map[string]interface{}{"id": *cmd.ID}
	op, ok := ops[cmd.Op]
	var result answer
	var err error
	if !ok {
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

func (p *peer) hello(cmd command) (answer, error) {
	if cmd.Protocol != nil && *cmd.Protocol != protocolVersion {
		return nil, bad("this peer speaks protocol %d, not %d", protocolVersion, *cmd.Protocol)
	}
	if cmd.AMQPURL != "" {
		p.mu.Lock()
		p.url = cmd.AMQPURL
		p.mu.Unlock()
	}
	profiles := make([]string, len(acemq.Profiles))
	for i, pr := range acemq.Profiles {
		profiles[i] = string(pr)
	}
	mutants := make([]string, len(acemq.Mutants))
	for i, m := range acemq.Mutants {
		mutants[i] = string(m)
	}
	return answer{
		"protocol":     protocolVersion,
		"peer":         peerName,
		"language":     "Go",
		"binding":      "acemq-go " + acemq.Version,
		"client":       clientVersion(),
		"profiles":     profiles,
		"mutants":      mutants,
		"capabilities": []string{"request", "respond", "gather"},
	}, nil
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

// mutantFor is the command's mutant when it acts on the given role. A peer
// spec such as "go+no-strip" may fill both roles of a cell, so a mutant of
// the other role is ignored; an unknown name goes on to be refused.
func mutantFor(cmd command, role acemq.Role) acemq.Mutant {
	if cmd.Mutant == nil || *cmd.Mutant == "" {
		return acemq.NoMutant
	}
	name := *cmd.Mutant
	if _, err := acemq.ParseMutant(name, role); err != nil {
		other := acemq.RoleRequester
		if role == acemq.RoleRequester {
			other = acemq.RoleResponder
		}
		if _, otherErr := acemq.ParseMutant(name, other); otherErr == nil {
			log.Printf("mutant %s acts on a %s: ignored by %s", name, other, cmd.Op)
			return acemq.NoMutant
		}
	}
	return acemq.Mutant(name)
}

func (p *peer) dial() (*amqp.Connection, error) {
	p.mu.Lock()
	url := p.url
	p.mu.Unlock()
	return amqp.Dial(url)
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

func (p *peer) requesterOpen(cmd command) (answer, error) {
	profile, err := acemq.ParseProfile(cmd.Profile)
	if err != nil {
		return nil, err
	}
	if err := p.claim(cmd.Name); err != nil {
		return nil, err
	}
	conn, err := p.dial()
	if err != nil {
		p.release(cmd.Name)
		return nil, err
	}
	name := cmd.Name
	r, err := acemq.NewRequester(conn, acemq.RequesterOptions{
		Profile: profile,
		Mutant:  mutantFor(cmd, acemq.RoleRequester),
		OnUnmatched: func(correlationID string) {
			p.out.write(map[string]interface{}{"event": "unmatched", "requester": name, "correlation_id": nullable(correlationID)})
		},
	})
	if err != nil {
		conn.Close()
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
	o.r.Close()
	o.conn.Close()
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
	id := cmd.MessageID
	if id == "" {
		id = acemq.NewMessageID()
	}
	opts := []acemq.RequestOption{acemq.WithMessageID(id), acemq.WithCorrelationID(cmd.CorrelationID), acemq.WithType(cmd.Type)}
	if timeout > 0 {
		opts = append(opts, acemq.WithTimeout(timeout))
	}
	if len(cmd.Headers) > 0 {
		opts = append(opts, acemq.WithHeaders(table(cmd.Headers)))
	}
	started := time.Now()
	var reply json.RawMessage
	err = r.Request(context.Background(), cmd.Exchange, *cmd.RoutingKey, bodyOf(cmd), &reply, opts...)
	res := answer{"request_id": id}
	var failed *acemq.ResponderFailedError
	var undecodable *acemq.DecodeError
	switch {
	case err == nil:
		res["outcome"], res["reply"] = "reply", reply
	case errors.Is(err, acemq.ErrTimedOut):
		res["outcome"] = "timeout"
	case errors.As(err, &failed):
		res["outcome"], res["failure"] = "responder_failed", failed.Failure
	case errors.As(err, &undecodable):
		res["outcome"], res["error"] = "decode_error", undecodable.Err.Error()
	default:
		return nil, err
	}
	res["elapsed_ms"] = elapsedMS(started)
	return res, nil
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
		Timeout:       timeout,
		CorrelationID: cmd.CorrelationID,
		MessageID:     acemq.NewMessageID(),
		Type:          cmd.Type,
	}
	if cmd.ExpectedReplyCount != nil {
		if *cmd.ExpectedReplyCount < 1 {
			return nil, bad("expected_reply_count must be at least 1")
		}
		opts.ExpectedReplyCount = *cmd.ExpectedReplyCount
	}
	body := bodyOf(cmd)
	if opts.CorrelationID == "" {
		// The bus takes the business correlation id from the message.
		var msg struct {
			CorrelationID interface{} `json:"correlationId"`
		}
		if json.Unmarshal(body, &msg) == nil {
			if s, ok := msg.CorrelationID.(string); ok {
				opts.CorrelationID = s
			}
		}
	}
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
	res := answer{"request_id": opts.MessageID}
	var shortfall *acemq.RequestTimeoutError
	switch {
	case err == nil:
		res["outcome"], res["replies"] = "replies", jsonValues(replies)
	case errors.As(err, &shortfall):
		res["outcome"], res["replies"] = "timeout_with_partial", jsonValues(shortfall.PartialReplies)
	default:
		return nil, err
	}
	res["elapsed_ms"] = elapsedMS(started)
	return res, nil
}

func (p *peer) responderStart(cmd command) (answer, error) {
	profile, err := acemq.ParseProfile(cmd.Profile)
	if err != nil {
		return nil, err
	}
	if cmd.Queue == "" {
		return nil, bad("missing field 'queue'")
	}
	if cmd.MaxAttempts < 0 {
		return nil, bad("max_attempts must be positive")
	}
	handler, err := makeHandler(cmd.Name, cmd.Behavior)
	if err != nil {
		return nil, err
	}
	if err := p.claim(cmd.Name); err != nil {
		return nil, err
	}
	conn, err := p.dial()
	if err != nil {
		p.release(cmd.Name)
		return nil, err
	}
	opts := acemq.ResponderOptions{
		Profile:     profile,
		Mutant:      mutantFor(cmd, acemq.RoleResponder),
		MaxAttempts: cmd.MaxAttempts,
		Hooks:       p.responderEvents(cmd.Name),
	}
	if cmd.Bind != nil {
		if cmd.Bind.Exchange == "" {
			conn.Close()
			p.release(cmd.Name)
			return nil, bad("bind needs an exchange")
		}
		opts.Bindings = []acemq.Binding{{Exchange: cmd.Bind.Exchange, RoutingKey: cmd.Bind.RoutingKey}}
	}
	r, err := acemq.NewResponder(conn, cmd.Queue, handler, opts)
	if err != nil {
		conn.Close()
		p.release(cmd.Name)
		return nil, err
	}
	p.mu.Lock()
	p.responders[cmd.Name] = &openResponder{conn: conn, r: r}
	p.mu.Unlock()
	return answer{}, nil
}

// responderEvents turns the binding's hooks into protocol events.
func (p *peer) responderEvents(name string) acemq.ResponderHooks {
	emit := func(event string, fields map[string]interface{}) {
		fields["event"] = event
		fields["responder"] = name
		p.out.write(fields)
	}
	return acemq.ResponderHooks{
		Handled: func(req *acemq.Request) {
			emit("handled", map[string]interface{}{"message_id": nullable(req.MessageID), "attempt": req.Attempt, "seen": seenOf(req)})
		},
		Replied: func(messageID, failure string) {
			emit("replied", map[string]interface{}{"message_id": nullable(messageID), "failure": nullable(failure)})
		},
		ReplyFailed: func(messageID string, attempt int, err error) {
			emit("reply_failed", map[string]interface{}{"message_id": nullable(messageID), "attempt": attempt, "error": err.Error()})
		},
		DeadLettered: func(messageID, reason string) {
			emit("dead_lettered", map[string]interface{}{"message_id": nullable(messageID), "reason": reason})
		},
		Unanswerable: func(messageID string) {
			emit("unanswerable", map[string]interface{}{"message_id": nullable(messageID)})
		},
	}
}

func (p *peer) responderStop(cmd command) (answer, error) {
	p.mu.Lock()
	o := p.responders[cmd.Name]
	delete(p.responders, cmd.Name)
	p.mu.Unlock()
	if o == nil {
		return nil, bad("no responder named %q", cmd.Name)
	}
	o.r.Close()
	o.conn.Close()
	p.release(cmd.Name)
	return answer{}, nil
}

func (p *peer) counters(cmd command) (answer, error) {
	p.mu.Lock()
	req, resp := p.requesters[cmd.Of], p.responders[cmd.Of]
	p.mu.Unlock()
	switch {
	case req != nil:
		return answer{"counters": map[string]int64{"timed_out": req.r.TimedOut(), "unmatched": req.r.Unmatched()}}, nil
	case resp != nil:
		return answer{"counters": map[string]int64{"answered": resp.r.Answered(), "unanswerable": resp.r.Unanswerable()}}, nil
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
		closers = append(closers, func() { o.r.Close(); o.conn.Close() })
	}
	for _, o := range p.responders {
		o := o
		closers = append(closers, func() { o.r.Close(); o.conn.Close() })
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
