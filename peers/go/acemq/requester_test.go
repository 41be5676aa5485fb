package acemq

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// newTestRequester is a Requester without a broker: enough for addressing and
// reply matching, which are pure.
func newTestRequester(profile Profile, mutant Mutant) *Requester {
	return &Requester{
		opts:       RequesterOptions{Profile: profile, Mutant: mutant},
		replyQueue: "amq.gen-reply",
		calls:      map[string]*call{},
		gathers:    map[string]*gathering{},
		done:       make(chan struct{}),
	}
}

func TestRequestNamesTheReplyAddressTwice(t *testing.T) {
	cases := []struct {
		profile    Profile
		mutant     Mutant
		native     string
		header     interface{}
		headerSent bool
	}{
		{ProfileCurrent, NoMutant, "amq.gen-reply", "amq.gen-reply", true},
		{Profile050, NoMutant, "amq.gen-reply", "amq.gen-reply", true},
		{Profile030, NoMutant, "", "amq.gen-reply", true},
		{ProfileCurrent, MutantNativeOnly, "amq.gen-reply", nil, false},
		{ProfileCurrent, MutantHeaderBytes, "amq.gen-reply", []byte("amq.gen-reply"), true},
	}
	for _, c := range cases {
		r := newTestRequester(c.profile, c.mutant)
		msg := r.requestPublishing("m-1", "c-1", r.replyQueue, []byte(`{}`), amqp.Table{"x-extra": "e", ReplyToHeader: "caller's"})
		if msg.ReplyTo != c.native {
			t.Errorf("%s/%s: reply_to = %q, want %q", c.profile, c.mutant, msg.ReplyTo, c.native)
		}
		h, sent := msg.Headers[ReplyToHeader]
		if c.headerSent {
			if b, ok := c.header.([]byte); ok {
				if got, isBytes := h.([]byte); !isBytes || string(got) != string(b) {
					t.Errorf("%s/%s: header = %#v, want bytes %q", c.profile, c.mutant, h, b)
				}
			} else if h != c.header {
				t.Errorf("%s/%s: header = %#v, want %#v", c.profile, c.mutant, h, c.header)
			}
		} else if sent && h != "caller's" {
			t.Errorf("%s/%s: header written: %#v", c.profile, c.mutant, h)
		}
		if msg.MessageId != "m-1" || msg.CorrelationId != "c-1" || msg.ContentType != "application/json" || msg.Headers["x-extra"] != "e" {
			t.Errorf("%s/%s: publishing %+v", c.profile, c.mutant, msg)
		}
	}
}

func TestRepliesGoToTheCallerWithTheirCorrelationID(t *testing.T) {
	r := newTestRequester(ProfileCurrent, NoMutant)
	var unmatched []string
	r.opts.OnUnmatched = func(id string) { unmatched = append(unmatched, id) }
	first, _ := r.register("m-1")
	second, _ := r.register("m-2")

	r.dispatch(amqp.Delivery{CorrelationId: "m-2", Body: []byte(`2`)})
	r.dispatch(amqp.Delivery{CorrelationId: "m-9", Body: []byte(`9`)})
	if got := string((<-second.reply).Body); got != "2" {
		t.Errorf("second caller got %s", got)
	}
	select {
	case d := <-first.reply:
		t.Errorf("first caller was handed %s", d.Body)
	default:
	}
	// m-1 gives up; its late reply is Unmatched, not given to anyone else.
	if !r.forget("m-1") {
		t.Fatal("m-1 was not waiting")
	}
	r.dispatch(amqp.Delivery{CorrelationId: "m-1"})
	if r.Unmatched() != 2 || len(unmatched) != 2 || unmatched[0] != "m-9" || unmatched[1] != "m-1" {
		t.Errorf("Unmatched = %d, hook saw %v", r.Unmatched(), unmatched)
	}
}

func TestLateReplyToNextMutantHandsRepliesToTheOldestCaller(t *testing.T) {
	r := newTestRequester(ProfileCurrent, MutantLateReplyToNext)
	first, _ := r.register("m-1")
	r.register("m-2")
	r.dispatch(amqp.Delivery{CorrelationId: "m-2", Body: []byte(`2`)})
	if got := string((<-first.reply).Body); got != "2" {
		t.Errorf("oldest caller got %s", got)
	}
}

func TestDecodeChecksTheErrorHeaderFirst(t *testing.T) {
	r := newTestRequester(ProfileCurrent, NoMutant)
	var v json.RawMessage
	for _, h := range []interface{}{"ScenarioFailure: no price", []byte("ScenarioFailure: no price")} {
		err := r.decode(amqp.Delivery{Headers: amqp.Table{ErrorHeader: h}}, &v)
		var failed *ResponderFailedError
		if !errors.As(err, &failed) || failed.Failure != "ScenarioFailure: no price" {
			t.Errorf("decode with %T error header = %v", h, err)
		}
	}
	var undecodable *DecodeError
	if err := r.decode(amqp.Delivery{Body: []byte("not json")}, &v); !errors.As(err, &undecodable) {
		t.Errorf("decode of a non-JSON body = %v", err)
	}
	if err := r.decode(amqp.Delivery{Body: []byte(`{"a":1}`)}, &v); err != nil || string(v) != `{"a":1}` {
		t.Errorf("decode = %s, %v", v, err)
	}

	ignoring := newTestRequester(ProfileCurrent, MutantIgnoresErrorHeader)
	if err := ignoring.decode(amqp.Delivery{Headers: amqp.Table{ErrorHeader: "E: x"}}, &v); !errors.As(err, &undecodable) {
		t.Errorf("ignores-error-header decode = %v, want a DecodeError", err)
	}
}

func TestReplyQueueTypeIsExplicit(t *testing.T) {
	if got := newTestRequester(ProfileCurrent, NoMutant).replyQueueArgs(); got["x-queue-type"] != "classic" {
		t.Errorf("reply queue args %v", got)
	}
	if got := newTestRequester(ProfileCurrent, MutantImplicitQueueType).replyQueueArgs(); got != nil {
		t.Errorf("implicit-queue-type args %v", got)
	}
}

func TestLongShortStringsAreRefusedOrTruncatedByTheMutant(t *testing.T) {
	long := strings.Repeat("c", 300)
	msg := amqp.Publishing{MessageId: "m-1", CorrelationId: long}
	var e *ShortStringError
	if err := newTestRequester(ProfileCurrent, NoMutant).checkShortStrings(&msg); !errors.As(err, &e) || msg.CorrelationId != long {
		t.Errorf("refusal = %v, correlation id of %d bytes", err, len(msg.CorrelationId))
	}
	if err := newTestRequester(ProfileCurrent, MutantTruncatesShortStrings).checkShortStrings(&msg); err != nil || len(msg.CorrelationId) != 255 {
		t.Errorf("truncates-short-strings = %v, correlation id of %d bytes", err, len(msg.CorrelationId))
	}
}

func TestUndecodableReplyEndsTheCallUnlessDropped(t *testing.T) {
	notJSON := amqp.Delivery{CorrelationId: "m-1", Body: []byte("not json{")}

	r := newTestRequester(ProfileCurrent, NoMutant)
	c, _ := r.register("m-1")
	r.dispatch(notJSON)
	var v json.RawMessage
	var undecodable *DecodeError
	if err := r.decode(<-c.reply, &v); !errors.As(err, &undecodable) {
		t.Errorf("decode = %v, want a DecodeError", err)
	}

	dropping := newTestRequester(ProfileCurrent, MutantDropsUndecodable)
	var unmatched []string
	dropping.opts.OnUnmatched = func(id string) { unmatched = append(unmatched, id) }
	c, _ = dropping.register("m-1")
	dropping.dispatch(notJSON)
	select {
	case d := <-c.reply:
		t.Errorf("drops-undecodable handed over %s", d.Body)
	default:
	}
	if dropping.Unmatched() != 1 || len(unmatched) != 1 || unmatched[0] != "m-1" {
		t.Errorf("Unmatched = %d, hook saw %v", dropping.Unmatched(), unmatched)
	}
	// JSON and failure replies still reach their callers.
	dropping.dispatch(amqp.Delivery{CorrelationId: "m-1", Body: []byte(`{"a":1}`)})
	if got := string((<-c.reply).Body); got != `{"a":1}` {
		t.Errorf("JSON reply = %s", got)
	}
	c, _ = dropping.register("m-2")
	dropping.dispatch(amqp.Delivery{CorrelationId: "m-2", Headers: amqp.Table{ErrorHeader: "E: x"}})
	if d := <-c.reply; d.Headers[ErrorHeader] != "E: x" {
		t.Errorf("failure reply = %+v", d)
	}
}
