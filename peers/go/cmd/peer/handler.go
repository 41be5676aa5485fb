package main

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"acemq-interop/peers/go/acemq"
)

// ScenarioFailure is the error a "fail" behaviour returns, so that the
// failure text is "ScenarioFailure: {message}" in every language.
type ScenarioFailure struct {
	Message string
}

func (e *ScenarioFailure) Error() string { return e.Message }

// makeHandler builds the handler a responder.start behaviour describes: echo
// or fail, after an optional delay.
func makeHandler(responder string, b *behavior) (acemq.Handler, error) {
	if b == nil {
		b = &behavior{Reply: "echo"}
	}
	kind := b.Reply
	if kind == "" {
		kind = "echo"
	}
	if kind != "echo" && kind != "fail" {
		return nil, bad("unknown behavior.reply %q", b.Reply)
	}
	if b.DelayMS < 0 {
		return nil, bad("behavior.delay_ms must not be negative")
	}
	delay := time.Duration(b.DelayMS * float64(time.Millisecond))
	if kind == "fail" && b.ErrorMessage == nil {
		return nil, bad("behavior.error_message is required when reply is fail")
	}
	var message string
	if b.ErrorMessage != nil {
		message = *b.ErrorMessage
	}
	return func(ctx context.Context, req *acemq.Request) (interface{}, error) {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if kind == "fail" {
			return nil, &ScenarioFailure{Message: message}
		}
		return echoOf(responder, req), nil
	}, nil
}

// echoOf is the echo body: what the handler saw, so that the harness checks
// wire facts the same way in every language.
func echoOf(responder string, req *acemq.Request) map[string]interface{} {
	var body interface{} = string(req.Body)
	if json.Valid(req.Body) {
		body = json.RawMessage(req.Body)
	}
	echo := map[string]interface{}{
		"echo":          body,
		"responder":     responder,
		"peer":          peerName,
		"seen":          seenOf(req),
		"correlationId": nil, // always present: null unless the body names one
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(req.Body, &obj) == nil {
		if c, ok := obj["correlationId"]; ok {
			echo["correlationId"] = c
		}
	}
	return echo
}

func seenOf(req *acemq.Request) map[string]interface{} {
	headers := make([]string, 0, len(req.Headers))
	for k := range req.Headers {
		headers = append(headers, k)
	}
	sort.Strings(headers)
	return map[string]interface{}{
		"message_id":      nullable(req.MessageID),
		"correlation_id":  nullable(req.CorrelationID),
		"reply_to":        req.ReplyTo,
		"reply_to_source": req.ReplyToSource,
		"headers":         headers,
		"attempt":         req.Attempt,
	}
}
