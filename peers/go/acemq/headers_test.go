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

// The shared cases are in wirevectors_test.go; these are amqp091-go's extras.

func TestDeliveryAttemptReadsEveryGoIntegerType(t *testing.T) {
	for _, v := range []interface{}{int16(2), int(2), uint8(2), uint16(2), uint32(2), uint64(2)} {
		if got := DeliveryAttempt(amqp.Table{DeliveryCountHeader: v}); got != 3 {
			t.Errorf("DeliveryAttempt(%T 2) = %d, want 3", v, got)
		}
	}
	if got := DeliveryAttempt(nil); got != 1 {
		t.Errorf("DeliveryAttempt(nil) = %d, want 1", got)
	}
}

func TestStripInternalLeavesItsArgumentAlone(t *testing.T) {
	h := amqp.Table{"x-acemq-trace": "t", "x-custom": true}
	if got := StripInternal(h); len(got) != 1 || len(h) != 2 {
		t.Errorf("StripInternal = %v, argument now %v", got, h)
	}
}

type ScenarioFailure struct{ msg string }

func (e *ScenarioFailure) Error() string { return e.msg }

type valueFailure struct{}

func (valueFailure) Error() string { return "by value" }

type genericFailure[T any] struct{}

func (*genericFailure[T]) Error() string { return "generic" }

func TestFailureTextNamesTheGoTypeWithoutPackageOrPointer(t *testing.T) {
	cases := map[error]string{
		&ScenarioFailure{"no price"}:                     "ScenarioFailure: no price",
		valueFailure{}:                                   "valueFailure: by value",
		errors.New("plain"):                              "errorString: plain",
		&genericFailure[ScenarioFailure]{}:               "genericFailure: generic",
		fmt.Errorf("wrapped: %w", &ScenarioFailure{"x"}): "wrapError: wrapped: x",
	}
	for err, want := range cases {
		if got := FailureText(err); got != want {
			t.Errorf("FailureText(%T) = %q, want %q", err, got, want)
		}
	}
}

func TestEveryShortStringPropertyIsChecked(t *testing.T) {
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
