package acemq

// The shared cases of the pure wire rules (catalogue/wire-vectors.json),
// run through this binding's pure functions. Every binding reads the same
// file; the Go-only extras live beside the functions' own tests.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"acemq-interop/peers/go/internal/policy"

	amqp "github.com/rabbitmq/amqp091-go"
)

type wireCase map[string]json.RawMessage

type wireGroup struct {
	Rule  string     `json:"rule"`
	Cases []wireCase `json:"cases"`
}

// loadWireVectors finds the file through $ACEMQ_WIRE_VECTORS, else by walking
// up from this package's directory to a folder holding catalogue/.
func loadWireVectors(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	path := os.Getenv("ACEMQ_WIRE_VECTORS")
	if path == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			candidate := filepath.Join(dir, "catalogue", "wire-vectors.json")
			if _, err := os.Stat(candidate); err == nil {
				path = candidate
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				t.Fatal("no catalogue/wire-vectors.json above the test's directory; set ACEMQ_WIRE_VECTORS")
			}
			dir = parent
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return file
}

// eachCase runs fn as a subtest named after every case of the group.
func eachCase(t *testing.T, group string, fn func(t *testing.T, c wireCase)) {
	file := loadWireVectors(t)
	var g wireGroup
	if err := json.Unmarshal(file[group], &g); err != nil || len(g.Cases) == 0 {
		t.Fatalf("group %s: %v (%d cases)", group, err, len(g.Cases))
	}
	for _, c := range g.Cases {
		var name string
		json.Unmarshal(c["name"], &name)
		t.Run(name, func(t *testing.T) { fn(t, c) })
	}
}

// field decodes one field of a case; it reports whether the field is there.
func (c wireCase) field(t *testing.T, key string, v interface{}) bool {
	t.Helper()
	raw, ok := c[key]
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("field %s: %v", key, err)
	}
	return true
}

// amqpValue converts the probe's typed notation to what amqp091-go decodes
// each field type into: S string, x []byte, l int64, I int32, b int8,
// t bool, d float64, F amqp.Table, A []interface{}.
func amqpValue(t *testing.T, raw json.RawMessage) interface{} {
	t.Helper()
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var typed map[string]json.RawMessage
	if err := json.Unmarshal(raw, &typed); err != nil {
		t.Fatalf("not a typed header value: %s", raw)
	}
	if rep, ok := typed["repeat"]; ok {
		var unit string
		var times int
		json.Unmarshal(rep, &unit)
		json.Unmarshal(typed["times"], &times)
		return strings.Repeat(unit, times)
	}
	for kind, v := range typed {
		var n int64
		switch kind {
		case "bytes":
			json.Unmarshal(v, &s)
			return []byte(s)
		case "long":
			json.Unmarshal(v, &n)
			return n
		case "int":
			json.Unmarshal(v, &n)
			return int32(n)
		case "byte":
			json.Unmarshal(v, &n)
			return int8(n)
		case "bool":
			var b bool
			json.Unmarshal(v, &b)
			return b
		case "double":
			var f float64
			json.Unmarshal(v, &f)
			return f
		case "table":
			return amqpTable(t, v)
		case "array":
			var items []json.RawMessage
			json.Unmarshal(v, &items)
			out := make([]interface{}, len(items))
			for i, item := range items {
				out[i] = amqpValue(t, item)
			}
			return out
		}
	}
	t.Fatalf("unknown typed header value %s", raw)
	return nil
}

func amqpTable(t *testing.T, raw json.RawMessage) amqp.Table {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("not a table: %s", raw)
	}
	out := amqp.Table{}
	for k, v := range fields {
		out[k] = amqpValue(t, v)
	}
	return out
}

func (c wireCase) headers(t *testing.T) amqp.Table {
	if raw, ok := c["headers"]; ok {
		return amqpTable(t, raw)
	}
	return amqp.Table{}
}

func TestWireHeaderString(t *testing.T) {
	eachCase(t, "header_string", func(t *testing.T, c wireCase) {
		h := amqp.Table{}
		if raw, ok := c["value"]; ok {
			h[ReplyToHeader] = amqpValue(t, raw)
		}
		var want *string
		c.field(t, "expect", &want)
		got, ok := HeaderString(h, ReplyToHeader)
		if want == nil && ok || want != nil && (!ok || got != *want) {
			t.Errorf("HeaderString = %q, %v; want %v", got, ok, want)
		}
	})
}

func TestWireReplyAddress(t *testing.T) {
	eachCase(t, "reply_address", func(t *testing.T, c wireCase) {
		order := policy.DefaultResponder().ReadOrder
		c.field(t, "read_order", &order)
		var replyTo string
		c.field(t, "reply_to", &replyTo)
		var want *struct{ Address, Source string }
		c.field(t, "expect", &want)
		addr, source := replyAddress(c.headers(t), replyTo, order)
		switch {
		case want == nil && addr != "":
			t.Errorf("address %q from %s, want unanswerable", addr, source)
		case want != nil && (addr != want.Address || source != want.Source):
			t.Errorf("address %q from %q, want %q from %q", addr, source, want.Address, want.Source)
		}
	})
}

func TestWireStripEngineHeaders(t *testing.T) {
	eachCase(t, "strip_engine_headers", func(t *testing.T, c wireCase) {
		var kept []string
		c.field(t, "kept", &kept)
		got := []string{}
		for k := range StripInternal(c.headers(t)) {
			got = append(got, k)
		}
		sort.Strings(got)
		sort.Strings(kept)
		if !reflect.DeepEqual(got, kept) {
			t.Errorf("kept %v, want %v", got, kept)
		}
	})
}

func TestWireFailureText(t *testing.T) {
	eachCase(t, "failure_text", func(t *testing.T, c wireCase) {
		var typ, message, want string
		c.field(t, "type", &typ)
		c.field(t, "message", &message)
		c.field(t, "expect", &want)
		if got := failureText(typ, message); got != want {
			t.Errorf("failureText(%q, %q) = %q, want %q", typ, message, got, want)
		}
	})
}

func TestWireDeliveryAttempt(t *testing.T) {
	eachCase(t, "delivery_attempt", func(t *testing.T, c wireCase) {
		var want int
		c.field(t, "expect", &want)
		if got := DeliveryAttempt(c.headers(t)); got != want {
			t.Errorf("DeliveryAttempt = %d, want %d", got, want)
		}
	})
}

func TestWireRetryDecision(t *testing.T) {
	eachCase(t, "retry_decision", func(t *testing.T, c wireCase) {
		var attempt, max int
		var want string
		c.field(t, "attempt", &attempt)
		c.field(t, "max_attempts", &max) // absent: zero, the binding's default
		c.field(t, "expect", &want)
		got := "dead_letter"
		if retryDecision(attempt, max) {
			got = "requeue"
		}
		if got != want {
			t.Errorf("attempt %d of %d: %s, want %s", attempt, max, got, want)
		}
	})
}

func TestWireShortString(t *testing.T) {
	eachCase(t, "short_string", func(t *testing.T, c wireCase) {
		value, _ := amqpValue(t, c["value"]).(string)
		var want string
		c.field(t, "expect", &want)
		err := checkShortString("message_id", value)
		var refused *ShortStringError
		switch {
		case want == "accepted" && err != nil:
			t.Errorf("%d bytes refused: %v", len(value), err)
		case want == "refused" && !errors.As(err, &refused):
			t.Errorf("%d bytes accepted", len(value))
		}
	})
}
