package acemq

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestHeaderStringAcceptsLongStringAndBytes(t *testing.T) {
	h := amqp.Table{"s": "queue-a", "x": []byte("queue-b"), "n": int64(7)}
	for name, want := range map[string]string{"s": "queue-a", "x": "queue-b"} {
		if got, ok := HeaderString(h, name); !ok || got != want {
			t.Errorf("HeaderString(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"n", "missing"} {
		if _, ok := HeaderString(h, name); ok {
			t.Errorf("HeaderString(%q) found a string", name)
		}
	}
}

func TestDeliveryAttemptReadsAnyIntegerType(t *testing.T) {
	for _, v := range []interface{}{int8(2), int16(2), int32(2), int64(2), int(2), uint8(2), uint16(2), uint32(2), uint64(2)} {
		if got := DeliveryAttempt(amqp.Table{DeliveryCountHeader: v}); got != 3 {
			t.Errorf("DeliveryAttempt(%T 2) = %d, want 3", v, got)
		}
	}
	for _, h := range []amqp.Table{nil, {}, {DeliveryCountHeader: "2"}, {DeliveryCountHeader: int64(-1)}} {
		if got := DeliveryAttempt(h); got != 1 {
			t.Errorf("DeliveryAttempt(%v) = %d, want 1", h, got)
		}
	}
}

func TestStripInternalRemovesOnlyTheEngineNamespace(t *testing.T) {
	h := amqp.Table{"x-acemq-trace": "t", "x-acemq-": 1, "acemq-reply-to": "q", "x-custom": true, "x-delivery-count": int64(1)}
	got := StripInternal(h)
	want := amqp.Table{"acemq-reply-to": "q", "x-custom": true, "x-delivery-count": int64(1)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("StripInternal = %v, want %v", got, want)
	}
	if len(h) != 5 {
		t.Error("StripInternal changed its argument")
	}
}

type ScenarioFailure struct{ msg string }

func (e *ScenarioFailure) Error() string { return e.msg }

type valueFailure struct{}

func (valueFailure) Error() string { return "by value" }

func TestFailureTextNamesTheTypeWithoutPackageOrPointer(t *testing.T) {
	cases := map[error]string{
		&ScenarioFailure{"no price"}:                     "ScenarioFailure: no price",
		valueFailure{}:                                   "valueFailure: by value",
		errors.New("plain"):                              "errorString: plain",
		fmt.Errorf("wrapped: %w", &ScenarioFailure{"x"}): "wrapError: wrapped: x",
	}
	for err, want := range cases {
		if got := FailureText(err); got != want {
			t.Errorf("FailureText(%T) = %q, want %q", err, got, want)
		}
	}
}

func TestShortStringsOverTheLimitAreRefused(t *testing.T) {
	ok := strings.Repeat("a", 255)
	if err := checkShortStrings(amqp.Publishing{MessageId: ok, CorrelationId: ok, ReplyTo: ok, Type: ok}); err != nil {
		t.Fatalf("255 bytes refused: %v", err)
	}
	long := strings.Repeat("é", 128) // 256 bytes in UTF-8
	for _, p := range []amqp.Publishing{{MessageId: long}, {CorrelationId: long}, {ReplyTo: long}, {Type: long}} {
		var e *ShortStringError
		if err := checkShortStrings(p); !errors.As(err, &e) || e.Length != 256 {
			t.Errorf("checkShortStrings(%+v) = %v, want a ShortStringError of 256 bytes", p, err)
		}
	}
}

func TestWritableTableWidensUnsignedBytes(t *testing.T) {
	h := amqp.Table{"b": uint8(3), "nested": amqp.Table{"b": uint8(4)}, "list": []interface{}{uint8(5), "s"}, "s": "x"}
	got := writableTable(h)
	want := amqp.Table{"b": int64(3), "nested": amqp.Table{"b": int64(4)}, "list": []interface{}{int64(5), "s"}, "s": "x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("writableTable = %v, want %v", got, want)
	}
}

func TestNewMessageIDIsAFreshUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewMessageID(), NewMessageID()
	if !re.MatchString(a) || a == b {
		t.Errorf("NewMessageID gave %q and %q", a, b)
	}
}

func TestTruncateShortStringsCutsOnARuneBoundary(t *testing.T) {
	long := strings.Repeat("é", 128) // 256 bytes
	p := amqp.Publishing{MessageId: "m-1", CorrelationId: strings.Repeat("c", 300), Type: long}
	truncateShortStrings(&p)
	if p.MessageId != "m-1" || p.CorrelationId != strings.Repeat("c", 255) || p.Type != strings.Repeat("é", 127) {
		t.Errorf("truncated to %q, %d bytes, %d bytes", p.MessageId, len(p.CorrelationId), len(p.Type))
	}
	if err := checkShortStrings(p); err != nil {
		t.Errorf("still too long: %v", err)
	}
}

func TestStrictHeaderErrorNamesTheFirstUnexpectedType(t *testing.T) {
	tolerated := amqp.Table{"s": "v", "x": []byte("b"), "l": int64(1), "i": int32(-7), "b": int8(5), "dec": amqp.Decimal{Scale: 1, Value: 5}}
	if err := strictHeaderError(tolerated); err != nil {
		t.Errorf("strings and integers refused: %v", err)
	}
	for _, v := range []interface{}{true, float32(0.5), 0.25, amqp.Table{"k": "v"}, []interface{}{"a"}} {
		h := amqp.Table{"x-z": v, "x-a": "ok"}
		var e *MalformedHeader
		if err := strictHeaderError(h); !errors.As(err, &e) || FailureText(err) != "MalformedHeader: x-z" {
			t.Errorf("%T header: %v", v, err)
		}
	}
	both := amqp.Table{"x-table": amqp.Table{}, "x-flag": false}
	if err := strictHeaderError(both); FailureText(err) != "MalformedHeader: x-flag" {
		t.Errorf("two headers: %v", err)
	}
}
