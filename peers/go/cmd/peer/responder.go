package main

import (
	"acemq-interop/peers/go/acemq"
	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

func (p *peer) responderStart(cmd command) (answer, error) {
	if cmd.Queue == "" {
		return nil, bad("missing field 'queue'")
	}
	switch cmd.Client {
	case "", "binding":
	case "raw":
		return p.rawResponderStart(cmd)
	default:
		return nil, bad("unknown client %q: binding or raw", cmd.Client)
	}
	pol, err := responderPolicy(cmd.Policy)
	if err != nil {
		return nil, err
	}
	opts := acemq.ResponderOptions{Hooks: p.responderHooks(cmd.Name, cmd.Events)}
	if cmd.MaxAttempts != nil {
		if *cmd.MaxAttempts < 1 {
			return nil, bad("max_attempts must be at least 1")
		}
		opts.MaxAttempts = *cmd.MaxAttempts
	}
	if cmd.Bind != nil {
		if cmd.Bind.Exchange == "" {
			return nil, bad("bind needs an exchange")
		}
		opts.Bindings = []acemq.Binding{{Exchange: cmd.Bind.Exchange, RoutingKey: cmd.Bind.RoutingKey}}
	}
	handler, err := makeHandler(cmd.Name, cmd.Behavior)
	if err != nil {
		return nil, err
	}
	if err := p.claim(cmd.Name); err != nil {
		return nil, err
	}
	var conn *amqp.Connection
	var r *acemq.Responder
	if p.speaks() >= recoveryProtocol {
		opts.Hooks.Recovered = p.recovered("responder", cmd.Name)
		r, err = acemq.DialResponder(p.connection(cmd), cmd.Queue, handler, policy.WithResponder(opts, pol))
	} else if conn, err = p.dial(); err == nil {
		if r, err = acemq.NewResponder(conn, cmd.Queue, handler, policy.WithResponder(opts, pol)); err != nil {
			conn.Close()
		}
	}
	if err != nil {
		p.release(cmd.Name)
		return nil, err
	}
	p.mu.Lock()
	p.responders[cmd.Name] = &openResponder{conn: conn, r: r}
	p.mu.Unlock()
	return answer{}, nil
}

// rawResponderStart starts the bare-client echo responder (protocol 2).
func (p *peer) rawResponderStart(cmd command) (answer, error) {
	if p.speaks() < 2 {
		return nil, bad("client raw needs protocol 2")
	}
	if err := p.claim(cmd.Name); err != nil {
		return nil, err
	}
	conn, err := p.dial()
	if err != nil {
		p.release(cmd.Name)
		return nil, err
	}
	raw, err := startRawResponder(conn, cmd.Queue)
	if err != nil {
		conn.Close()
		p.release(cmd.Name)
		return nil, err
	}
	lost := p.lost("responder", cmd.Name)
	go func(closes <-chan *amqp.Error) {
		if reason, ok := <-closes; ok && reason != nil {
			lost(reason)
		}
	}(conn.NotifyClose(make(chan *amqp.Error, 1)))
	p.mu.Lock()
	p.responders[cmd.Name] = &openResponder{conn: conn, raw: raw}
	p.mu.Unlock()
	return answer{}, nil
}

// responderHooks is responderEvents, or with events false (protocol 4, for
// a load) only the lost connection: a fault the harness must still hear of,
// once, where the other events come for every request.
func (p *peer) responderHooks(name string, events *bool) acemq.ResponderHooks {
	if events != nil && !*events {
		return acemq.ResponderHooks{Lost: p.lost("responder", name)}
	}
	return p.responderEvents(name)
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
		Lost: p.lost("responder", name),
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
	o.close()
	p.release(cmd.Name)
	return answer{}, nil
}
