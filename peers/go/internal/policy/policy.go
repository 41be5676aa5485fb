// Package policy holds the knobs a requester or responder of package acemq
// resolves once, when it is opened: the catalogue's policies
// (catalogue/catalogue.yaml), spelled the Go way, each defaulting to the
// value the wire spec requires.
//
// It is internal so that no service can import it: the binding's public API
// has no way to change a policy. Package acemq registers into it (at init)
// how a policy is attached to its options; the interop adapter, inside this
// module, is the only other importer. Every field's struct tag is the
// catalogue's knob name: the adapter names and sets the fields by it.
package policy

// Source is a place a reply address is read from.
type Source string

const (
	Header Source = "header" // the acemq-reply-to header
	Native Source = "native" // the AMQP reply_to property
)

// The values of the catalogue's enumerated knobs. Each constant's text is the
// catalogue's spelling.
type (
	ReplyMatch      string
	ShortStringRule string
	UndecodableRule string
	CopyIDs         string
	CopyCount       string
	DemuxKey        string
	ShortfallRule   string
	MissingCount    string
	StrayRule       string

	Correlation        string
	FailureRule        string
	UnanswerableRule   string
	UndeliverableRule  string
	AnsweredTiming     string
	CountersCreation   string
	QueueType          string
	HeaderTypesReading string

	GatherCorrelation string
	PendingRule       string
	TypeCarrier       string
	FailureDelivery   string
	MalformedRule     string
	DeadLetterCopy    string

	NativeAddress    string
	UnmatchedRule    string
	TimeoutOutcome   string
	UnknownHeaders   string
	BytesAddressRule string
	ContentType      string
	FailureBody      string
	ErrorTypeName    string
	LastAttemptRule  string
	RequestQueueRule string

	RequestDeadline    string
	GatherDeadline     string
	GatherFailureReply string

	RequestCorrelation string
	DirectReplyTo      string

	LostCallRule string
	AckTiming    string
)

const (
	ByCorrelationID ReplyMatch = "correlation_id"
	ByOldestWaiter  ReplyMatch = "oldest_waiter"

	Refuse   ShortStringRule = "refuse"
	Truncate ShortStringRule = "truncate"

	DecodeError UndecodableRule = "decode_error"
	Drop        UndecodableRule = "drop"

	SharedIDs   CopyIDs = "shared"
	DistinctIDs CopyIDs = "distinct"

	ExpectedCountCopies CopyCount = "expected_count"
	OneCopy             CopyCount = "one"

	DemuxByResponseMessageID DemuxKey = "response_message_id"
	DemuxByCorrelationID     DemuxKey = "correlation_id"

	RejectShortfall  ShortfallRule = "reject"
	ResolveShortfall ShortfallRule = "resolve"

	MissingCountIsBudget MissingCount = "budget"
	MissingCountIsOne    MissingCount = "one"
	// MissingCountIsCopies takes sendRequestMulti's copies as its count.
	MissingCountIsCopies MissingCount = "copies"

	StrayUnmatched    StrayRule = "unmatched"
	StrayOldestGather StrayRule = "oldest_gather"

	// FromRequestID copies the request's id: its message_id, else its
	// correlation_id (RR-4.2); FromMessageID copies the message_id alone.
	FromRequestID     Correlation = "request_id"
	FromMessageID     Correlation = "message_id"
	FromCorrelationID Correlation = "correlation_id"

	ErrorReply FailureRule = "error_reply"
	Retry      FailureRule = "retry"

	Accept             UnanswerableRule  = "accept"
	DeadLetterIt       UnanswerableRule  = "dead_letter"
	RequeueIt          UndeliverableRule = "requeue"
	AckIt              UndeliverableRule = "ack"
	BeforePublish      AnsweredTiming    = "before_publish"
	AfterConfirm       AnsweredTiming    = "after_confirm"
	BeforeSubscribe    CountersCreation  = "before_subscribe"
	AfterFirstDelivery CountersCreation  = "after_first_delivery"

	Quorum  QueueType = "quorum"
	Classic QueueType = "classic"

	Lenient HeaderTypesReading = "lenient"
	Strict  HeaderTypesReading = "strict"

	CorrelateByRequestMessageID GatherCorrelation = "request_message_id"
	NoDefaultCorrelation        GatherCorrelation = "none"

	EndClosed   PendingRule = "end_closed"
	WaitTimeout PendingRule = "wait"

	TypeProperty TypeCarrier = "property"
	TypeHeader   TypeCarrier = "header"

	Checked   FailureDelivery = "checked"
	Unchecked FailureDelivery = "unchecked"

	FailReply     MalformedRule = "fail_reply"
	DropMalformed MalformedRule = "drop"
	// ReplyOnlyMalformed sends the failure reply and acks, no dead-letter.
	ReplyOnlyMalformed MalformedRule = "reply_only"

	FullCopy         DeadLetterCopy = "full"
	IDAndHeadersCopy DeadLetterCopy = "id_and_headers"

	ReplyQueueAddress NativeAddress = "reply_queue"
	StaleAddress      NativeAddress = "stale"
	// EmptyAddress sets reply_to to "": amqp091-go sends no reply_to
	// property for an empty string, so on the wire it is absent.
	EmptyAddress NativeAddress = "empty"

	DropUnmatched           UnmatchedRule = "drop"
	UnmatchedToOldestWaiter UnmatchedRule = "oldest_waiter"

	TimeoutIsTimeout   TimeoutOutcome = "timeout"
	TimeoutIsNullReply TimeoutOutcome = "null_reply"

	IgnoreUnknownHeaders UnknownHeaders = "ignore"
	FailUnknownHeaders   UnknownHeaders = "fail"

	AcceptBytesAddress BytesAddressRule = "accept"
	IgnoreBytesAddress BytesAddressRule = "ignore"

	JSONContentType ContentType = "application/json"
	NoContentType   ContentType = "none"

	EmptyFailureBody FailureBody = "empty"
	JSONFailureBody  FailureBody = "json"

	SimpleTypeName    ErrorTypeName = "simple"
	QualifiedTypeName ErrorTypeName = "qualified"

	DeadLetterLastAttempt LastAttemptRule = "dead_letter"
	AckLastAttempt        LastAttemptRule = "ack"

	QuorumRequestQueue RequestQueueRule = "quorum"
	// ClassicIfMissing declares the request queue passively first and keeps
	// it as it is; only a missing queue is declared, durable and classic.
	ClassicIfMissing RequestQueueRule = "classic_if_missing"

	DeadlineAtTimeout RequestDeadline = "timeout"
	// LateDeadline gives up at 1.5 x the timeout (RR-9.6 says at it).
	LateDeadline RequestDeadline = "late"

	FixedGatherDeadline GatherDeadline = "fixed"
	// RestartPerReply starts the gather's timeout again at every reply it
	// keeps (SG-9.1 says a reply does not extend it).
	RestartPerReply GatherDeadline = "restart_per_reply"

	// CorrelationIsMessageID gives a request correlation_id = message_id (RR-8.4).
	CorrelationIsMessageID RequestCorrelation = "message_id"
	NoRequestCorrelation   RequestCorrelation = "none"

	// DirectAtMostOnce publishes a reply to amq.rabbitmq.reply-to.* without
	// mandatory and never retries it (RR-14.5); DirectChecked treats it as any
	// reply (mandatory, retried on the broker's return).
	DirectAtMostOnce DirectReplyTo = "at_most_once"
	DirectChecked    DirectReplyTo = "checked"

	DropGatherFailure GatherFailureReply = "drop"
	// KeepGatherFailure keeps a failure reply in its gather as a null reply
	// (SG-10.1 says it is not an answer).
	KeepGatherFailure GatherFailureReply = "keep"

	// EndLost ends a call pending when its connection is lost at once
	// (RR-20.1); WaitLost leaves it to wait out its timeout.
	EndLost  LostCallRule = "end_lost"
	WaitLost LostCallRule = "wait"

	// AckAfterHandling acknowledges a request once it is settled (RR-14);
	// AckOnDelivery as soon as it is delivered, before its handler runs
	// (RR-20.4 says a request held at a lost connection must come back).
	AckAfterHandling AckTiming = "after_handling"
	AckOnDelivery    AckTiming = "on_delivery"
)

// Requester is the requester's (and gatherer's) policy.
type Requester struct {
	WriteHeaderAddress     bool            `policy:"write_header_address"`
	WriteNativeAddress     bool            `policy:"write_native_address"`
	HeaderAddressAsBytes   bool            `policy:"header_address_as_bytes"`
	ReplyQueuePerRequest   bool            `policy:"reply_queue_per_request"`
	ExplicitReplyQueueType bool            `policy:"explicit_reply_queue_type"`
	MatchRepliesBy         ReplyMatch      `policy:"match_replies_by"`
	CountTimeouts          bool            `policy:"count_timeouts"`
	ReadErrorHeader        bool            `policy:"read_error_header"`
	HonourReturns          bool            `policy:"honour_returns"`
	LongShortString        ShortStringRule `policy:"long_short_string"`
	UndecodableReply       UndecodableRule `policy:"undecodable_reply"`
	GatherCopyIDs          CopyIDs         `policy:"gather_copy_ids"`
	MultiCopies            CopyCount       `policy:"multi_copies"`
	GatherDemuxBy          DemuxKey        `policy:"gather_demux_by"`
	GatherResolvesEarly    bool            `policy:"gather_resolves_early"`
	GatherShortfall        ShortfallRule   `policy:"gather_shortfall"`
	GatherMissingCount     MissingCount    `policy:"gather_missing_count"`
	GatherStrayReply       StrayRule       `policy:"gather_stray_reply"`
	// DefaultTimeoutMS is the timeout of a call given none (RR-9: 30 s).
	DefaultTimeoutMS         int               `policy:"default_timeout_ms"`
	GatherDefaultCorrelation GatherCorrelation `policy:"gather_default_correlation"`
	CountGatherTimeouts      bool              `policy:"count_gather_timeouts"`
	PendingAtClose           PendingRule       `policy:"pending_at_close"`
	HonourGatherReturns      bool              `policy:"honour_gather_returns"`
	TypeCarrier              TypeCarrier       `policy:"type_carrier"`
	NativeAddress            NativeAddress     `policy:"native_address"`
	// NarrowIntHeader adds x-acemq-hops = uint8(1), which amqp091-go writes
	// as field type 'B' (WF-2 forbids B, u and i).
	NarrowIntHeader      bool           `policy:"narrow_int_header"`
	CountUnmatched       bool           `policy:"count_unmatched"`
	UnmatchedReply       UnmatchedRule  `policy:"unmatched_reply"`
	TimeoutOutcome       TimeoutOutcome `policy:"timeout_outcome"`
	UnknownReplyHeaders  UnknownHeaders `policy:"unknown_reply_headers"`
	ExclusiveReplyQueue  bool           `policy:"exclusive_reply_queue"`
	CountGatherUnmatched bool           `policy:"count_gather_unmatched"`
	// PublishCopies is how many messages publishRequest publishes (SG-2: 1).
	PublishCopies int `policy:"publish_copies"`
	// MultiCopiesWithoutCount is how many copies sendRequestMulti publishes
	// when given no expected count (SG-2: 1).
	MultiCopiesWithoutCount int                `policy:"multi_copies_without_count"`
	RequestDeadline         RequestDeadline    `policy:"request_deadline"`
	GatherDeadline          GatherDeadline     `policy:"gather_deadline"`
	GatherFailureReply      GatherFailureReply `policy:"gather_failure_reply"`
	// CountGatherFailures counts a failure reply its gather dropped in
	// Unmatched (SG-10.2); independent of CountGatherUnmatched (SG-8).
	CountGatherFailures bool `policy:"count_gather_failures"`
	// RequestCorrelationID is a request's correlation_id (RR-8.4: its message_id).
	RequestCorrelationID RequestCorrelation `policy:"request_correlation_id"`
	// OnConnectionLost is what a call pending at a lost connection does (RR-20.1).
	OnConnectionLost LostCallRule `policy:"on_connection_lost"`
	// RecoverConnection reconnects and consumes a new reply queue after a
	// lost connection (RR-20.3).
	RecoverConnection bool `policy:"recover_connection"`
}

// Responder is the responder's policy.
type Responder struct {
	ReadOrder             []Source           `policy:"read_order"`
	ReplyCorrelationFrom  Correlation        `policy:"reply_correlation_from"`
	StripEngineHeaders    bool               `policy:"strip_engine_headers"`
	HandlerFailure        FailureRule        `policy:"handler_failure"`
	DeadLetterFailures    bool               `policy:"dead_letter_failures"`
	CountFailuresAnswered bool               `policy:"count_failures_answered"`
	Unanswerable          UnanswerableRule   `policy:"unanswerable"`
	UndeliverableReply    UndeliverableRule  `policy:"undeliverable_reply"`
	AnsweredTiming        AnsweredTiming     `policy:"answered_timing"`
	RollbackAnswered      bool               `policy:"rollback_answered"`
	CountersCreated       CountersCreation   `policy:"counters_created"`
	DLQQueueType          QueueType          `policy:"dlq_queue_type"`
	ResponseMessageID     bool               `policy:"response_message_id"`
	HeaderTypes           HeaderTypesReading `policy:"header_types"`
	// DefaultMaxAttempts is the attempts of a responder given none (RR-14: 3).
	DefaultMaxAttempts int `policy:"default_max_attempts"`
	// AttemptBase is added to x-delivery-count to number an attempt (RR-14: 1).
	AttemptBase          int              `policy:"attempt_base"`
	FailureReplyDelivery FailureDelivery  `policy:"failure_reply_delivery"`
	MalformedRequest     MalformedRule    `policy:"malformed_request"`
	DeadLetterCopy       DeadLetterCopy   `policy:"dead_letter_copy"`
	BytesAddress         BytesAddressRule `policy:"bytes_address"`
	ReplyContentType     ContentType      `policy:"reply_content_type"`
	// StripPrefix is the header prefix removed before the handler (RR-5:
	// x-acemq-), when StripEngineHeaders is on.
	StripPrefix       string          `policy:"strip_prefix"`
	FailureBody       FailureBody     `policy:"failure_body"`
	ErrorTypeName     ErrorTypeName   `policy:"error_type_name"`
	RetryFailures     bool            `policy:"retry_failures"`
	CountUnanswerable bool            `policy:"count_unanswerable"`
	LastAttempt       LastAttemptRule `policy:"last_attempt"`
	// RequestQueue is how the request queue is declared (RR-17: quorum).
	RequestQueue RequestQueueRule `policy:"request_queue"`
	// PassSpecHeaders shows the handler the spec's own acemq-* headers
	// (RR-5.2: only x-acemq-* is removed).
	PassSpecHeaders bool `policy:"pass_spec_headers"`
	// DirectReplyTo is how a reply to a direct reply-to address is sent (RR-14.5).
	DirectReplyTo DirectReplyTo `policy:"direct_reply_to"`
	// RecoverConnection reconnects, declares again and consumes again after a
	// lost connection (RR-20.2).
	RecoverConnection bool `policy:"recover_connection"`
	// AckTiming is when a request is acknowledged (RR-20.4).
	AckTiming AckTiming `policy:"ack_timing"`
}

// DefaultRequester is every requester knob at the catalogue's default.
func DefaultRequester() Requester {
	return Requester{
		WriteHeaderAddress:     true,
		WriteNativeAddress:     true,
		ExplicitReplyQueueType: true,
		MatchRepliesBy:         ByCorrelationID,
		CountTimeouts:          true,
		ReadErrorHeader:        true,
		HonourReturns:          true,
		LongShortString:        Refuse,
		UndecodableReply:       DecodeError,
		GatherCopyIDs:          SharedIDs,
		MultiCopies:            ExpectedCountCopies,
		GatherDemuxBy:          DemuxByResponseMessageID,
		GatherResolvesEarly:    true,
		GatherShortfall:        RejectShortfall,
		GatherMissingCount:     MissingCountIsBudget,
		GatherStrayReply:       StrayUnmatched,

		DefaultTimeoutMS:         30000,
		GatherDefaultCorrelation: CorrelateByRequestMessageID,
		PendingAtClose:           EndClosed,
		HonourGatherReturns:      true,
		TypeCarrier:              TypeProperty,
		NativeAddress:            ReplyQueueAddress,
		CountUnmatched:           true,
		UnmatchedReply:           DropUnmatched,
		TimeoutOutcome:           TimeoutIsTimeout,
		UnknownReplyHeaders:      IgnoreUnknownHeaders,
		ExclusiveReplyQueue:      true,
		CountGatherUnmatched:     true,
		PublishCopies:            1,
		MultiCopiesWithoutCount:  1,
		RequestDeadline:          DeadlineAtTimeout,
		GatherDeadline:           FixedGatherDeadline,
		GatherFailureReply:       DropGatherFailure,
		CountGatherFailures:      true,
		RequestCorrelationID:     CorrelationIsMessageID,
		OnConnectionLost:         EndLost,
		RecoverConnection:        true,
	}
}

// DefaultResponder is every responder knob at the catalogue's default.
func DefaultResponder() Responder {
	return Responder{
		ReadOrder:            []Source{Header, Native},
		ReplyCorrelationFrom: FromRequestID,
		StripEngineHeaders:   true,
		HandlerFailure:       ErrorReply,
		DeadLetterFailures:   true,
		Unanswerable:         Accept,
		UndeliverableReply:   RequeueIt,
		AnsweredTiming:       BeforePublish,
		RollbackAnswered:     true,
		CountersCreated:      BeforeSubscribe,
		DLQQueueType:         Quorum,
		ResponseMessageID:    true,
		HeaderTypes:          Lenient,

		DefaultMaxAttempts:   3,
		AttemptBase:          1,
		FailureReplyDelivery: Checked,
		MalformedRequest:     FailReply,
		DeadLetterCopy:       FullCopy,
		BytesAddress:         AcceptBytesAddress,
		ReplyContentType:     JSONContentType,
		StripPrefix:          "x-acemq-",
		FailureBody:          EmptyFailureBody,
		ErrorTypeName:        SimpleTypeName,
		CountUnanswerable:    true,
		LastAttempt:          DeadLetterLastAttempt,
		RequestQueue:         QuorumRequestQueue,
		PassSpecHeaders:      true,
		DirectReplyTo:        DirectAtMostOnce,
		RecoverConnection:    true,
		AckTiming:            AckAfterHandling,
	}
}

// Package acemq cannot be imported from here (it imports this package), so
// it registers functions that attach a policy to a value of its options
// types; the generic wrappers below give callers back their own type.
var (
	attachRequester func(opts interface{}, p Requester) interface{}
	attachResponder func(opts interface{}, p Responder) interface{}
)

// RegisterRequester and RegisterResponder are called by package acemq's init.
func RegisterRequester(f func(opts interface{}, p Requester) interface{}) { attachRequester = f }
func RegisterResponder(f func(opts interface{}, p Responder) interface{}) { attachResponder = f }

// WithRequester returns opts (an acemq.RequesterOptions) carrying p, which the
// requester opened with them resolves once and keeps.
func WithRequester[O any](opts O, p Requester) O { return attachRequester(opts, p).(O) }

// WithResponder returns opts (an acemq.ResponderOptions) carrying p.
func WithResponder[O any](opts O, p Responder) O { return attachResponder(opts, p).(O) }
