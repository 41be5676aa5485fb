package acemq

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Header names on the wire. They are part of the contract with the other
// languages' bindings, so they never change.
const (
	ReplyToHeader           = "acemq-reply-to"
	ErrorHeader             = "acemq-error"
	DeadLetterReasonHeader  = "acemq-dead-letter-reason"
	ResponseMessageIDHeader = "responseMessageId"
	DeliveryCountHeader     = "x-delivery-count"

	// InternalHeaderPrefix marks the engine's own headers; a handler never
	// sees them.
	InternalHeaderPrefix = "x-acemq-"

	contentTypeJSON = "application/json"

	// maxShortString is the AMQP short string limit in bytes.
	maxShortString = 255
)

// ShortStringError reports a property value that does not fit an AMQP short
// string. amqp091-go before 1.13 truncates such values silently, and a
// truncated id correlates with nothing, so the binding refuses them itself.
type ShortStringError struct {
	Property string
	Length   int
}

func (e *ShortStringError) Error() string {
	return fmt.Sprintf("%s is %d bytes, more than the %d an AMQP short string holds", e.Property, e.Length, maxShortString)
}

// checkShortString refuses a short-string property value over 255 bytes of
// UTF-8 (RR-18).
func checkShortString(property, value string) error {
	if len(value) > maxShortString {
		return &ShortStringError{Property: property, Length: len(value)}
	}
	return nil
}

func checkShortStrings(p amqp.Publishing) error {
	for _, f := range []struct{ name, value string }{
		{"message_id", p.MessageId},
		{"correlation_id", p.CorrelationId},
		{"reply_to", p.ReplyTo},
		{"type", p.Type},
	} {
		if err := checkShortString(f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}

// truncateShortStrings cuts every short-string property over the limit to
// the limit, on a UTF-8 boundary. Only a Truncate policy does this: a
// truncated id correlates with nothing (RR-18).
func truncateShortStrings(p *amqp.Publishing) {
	for _, f := range []*string{&p.MessageId, &p.CorrelationId, &p.ReplyTo, &p.Type} {
		*f = truncateUTF8(*f, maxShortString)
	}
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MalformedHeader is the failure a Strict header-types policy reports: a
// request header of a type a strict reader did not expect.
type MalformedHeader struct {
	Name string
}

func (e *MalformedHeader) Error() string { return e.Name }

// strictHeaderError is what a reader that knows only strings and integers
// says about h: a *MalformedHeader for the first header, by name, holding a
// boolean, a floating-point number, a table or an array. amqp091-go decodes
// headers into a map, so the wire order is lost and the name decides.
func strictHeaderError(h amqp.Table) error {
	var names []string
	for k, v := range h {
		switch v.(type) {
		case bool, float32, float64, amqp.Table, []interface{}:
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return &MalformedHeader{Name: names[0]}
}

// HeaderString reads a string header that may arrive as an AMQP long string
// or as a byte array: other clients write either, and .NET reads every long
// string as bytes. Any other type counts as absent.
func HeaderString(h amqp.Table, name string) (string, bool) {
	switch v := h[name].(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}

// DeliveryAttempt is the attempt number of a delivery from a quorum queue:
// x-delivery-count (the failed deliveries before this one) plus one, 1 when
// the header is absent (RabbitMQ 3.10 stamps 0 on a first delivery, 4.0
// leaves it out).
func DeliveryAttempt(h amqp.Table) int { return attemptNumber(h, 1) }

// attemptNumber is x-delivery-count plus base (the policy's; RR-14 says 1).
func attemptNumber(h amqp.Table, base int) int { return deliveryCount(h) + base }

// deliveryCount is x-delivery-count, 0 when absent. Clients write integers
// with whatever width they like, so any integer type is read.
func deliveryCount(h amqp.Table) int {
	var n int64
	switch v := h[DeliveryCountHeader].(type) {
	case int8:
		n = int64(v)
	case int16:
		n = int64(v)
	case int32:
		n = int64(v)
	case int64:
		n = v
	case int:
		n = int64(v)
	case uint8:
		n = int64(v)
	case uint16:
		n = int64(v)
	case uint32:
		n = int64(v)
	case uint64:
		n = int64(v)
	default:
		return 0
	}
	if n < 0 {
		return 0
	}
	return int(n)
}

// StripInternal returns a copy of h without the x-acemq- headers.
func StripInternal(h amqp.Table) amqp.Table { return stripPrefix(h, InternalHeaderPrefix) }

// stripPrefix returns a copy of h without the headers whose name starts
// with prefix (the policy's; RR-5 says x-acemq-).
func stripPrefix(h amqp.Table, prefix string) amqp.Table {
	out := make(amqp.Table, len(h))
	for k, v := range h {
		if !strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// FailureText is the acemq-error text of a handler error:
// "{TypeName}: {message}", the type named without package or pointer mark.
func FailureText(err error) string {
	return failureText(typeName(err), err.Error())
}

// qualifiedFailureText is a qualified error-type policy's acemq-error text:
// the type as Go names it with its package ("main.ScenarioFailure"), where
// RR-10.2 wants the bare name.
func qualifiedFailureText(err error) string {
	return strings.TrimLeft(typeName(err), "*&") + ": " + err.Error()
}

// failureText is the acemq-error text from a type name as any language
// reports it (RR-10.2): the part after the last '.', '::', '/' or '$', with
// any leading '*' or '&' dropped, then ": " and the message.
func failureText(typeName, message string) string {
	name := strings.TrimLeft(typeName, "*&")
	if i := strings.LastIndexAny(name, "./:$"); i >= 0 {
		name = name[i+1:]
	}
	return name + ": " + message
}

// typeName is the error's type as Go prints it ("*main.ScenarioFailure"),
// without type arguments, whose own package paths would confuse the cut.
func typeName(v interface{}) string {
	t := reflect.TypeOf(v)
	u := t
	for u != nil && u.Kind() == reflect.Ptr {
		u = u.Elem()
	}
	if u == nil || u.Name() == "" {
		return "error"
	}
	name := t.String()
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	return name
}

// replyAddress is where a responder finds a request's reply address: the
// first place of order holding a non-empty text (RR-3). An empty value counts
// as absent, since amqp091-go cannot even write one. No address (an empty
// string) makes the request unanswerable (RR-12).
func replyAddress(h amqp.Table, replyTo string, order []policy.Source) (address, source string) {
	for _, place := range order {
		var v string
		switch place {
		case policy.Header:
			v, _ = HeaderString(h, ReplyToHeader)
		case policy.Native:
			v = replyTo
		}
		if v != "" {
			return v, string(place)
		}
	}
	return "", ""
}

// retryDecision says what follows a reply publish that failed on attempt of
// maxAttempts (zero means DefaultMaxAttempts): another attempt while some
// are left, else the dead-letter queue (RR-14).
func retryDecision(attempt, maxAttempts int) (requeue bool) {
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	return attempt < maxAttempts
}

// writableTable copies headers received from the broker so they can be
// published again: a uint8 would go out as field type 'B', which Java and
// Ruby clients refuse, so it is widened.
func writableTable(h amqp.Table) amqp.Table {
	out := make(amqp.Table, len(h))
	for k, v := range h {
		out[k] = writableValue(v)
	}
	return out
}

func writableValue(v interface{}) interface{} {
	switch x := v.(type) {
	case uint8:
		return int64(x)
	case amqp.Table:
		return writableTable(x)
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = writableValue(e)
		}
		return out
	}
	return v
}
