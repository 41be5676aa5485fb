package main

// The adapter's table from the catalogue's names (catalogue/catalogue.yaml)
// to the binding's policies. The binding knows no mutant and no profile: only
// this table does, and catalogue_test.go checks it against the catalogue.

import (
	"fmt"
	"strings"

	"acemq-interop/peers/go/internal/policy"
)

// A mutant acts on one side; gatherer mutants act on the requester's gathers.
type mutant struct {
	name      string
	side      string // "requester", "gatherer" or "responder"
	requester func(*policy.Requester)
	responder func(*policy.Responder)
}

func req(side string, f func(*policy.Requester)) mutant {
	return mutant{side: side, requester: f}
}

func resp(f func(*policy.Responder)) mutant { return mutant{side: "responder", responder: f} }

// mutants is every catalogue mutant, in catalogue order.
var mutants = named([]mutant{
	req("requester", func(p *policy.Requester) { p.WriteHeaderAddress = false }),
	req("requester", func(p *policy.Requester) { p.HeaderAddressAsBytes = true }),
	req("requester", func(p *policy.Requester) { p.ReplyQueuePerRequest = true }),
	req("requester", func(p *policy.Requester) { p.MatchRepliesBy = policy.ByOldestWaiter }),
	req("requester", func(p *policy.Requester) { p.ReadErrorHeader = false }),
	resp(func(p *policy.Responder) { p.ReadOrder = []policy.Source{policy.Native, policy.Header} }),
	resp(func(p *policy.Responder) { p.StripEngineHeaders = false }),
	resp(func(p *policy.Responder) { p.DeadLetterFailures = false }),
	resp(func(p *policy.Responder) { p.CountFailuresAnswered = true }),
	resp(func(p *policy.Responder) { p.Unanswerable = policy.DeadLetterIt }),
	resp(func(p *policy.Responder) { p.RollbackAnswered = false }),
	resp(func(p *policy.Responder) { p.AnsweredTiming = policy.AfterConfirm }),
	resp(func(p *policy.Responder) { p.CountersCreated = policy.AfterFirstDelivery }),
	req("gatherer", func(p *policy.Requester) { p.GatherDemuxBy = policy.DemuxByCorrelationID }),
	req("gatherer", func(p *policy.Requester) { p.GatherShortfall = policy.ResolveShortfall }),
	req("requester", func(p *policy.Requester) { p.ExplicitReplyQueueType = false }),
	req("requester", func(p *policy.Requester) { p.CountTimeouts = false }),
	req("requester", func(p *policy.Requester) { p.HonourReturns = false }),
	req("requester", func(p *policy.Requester) { p.LongShortString = policy.Truncate }),
	req("requester", func(p *policy.Requester) { p.UndecodableReply = policy.Drop }),
	resp(func(p *policy.Responder) { p.ReplyCorrelationFrom = policy.FromCorrelationID }),
	resp(func(p *policy.Responder) { p.UndeliverableReply = policy.AckIt }),
	resp(func(p *policy.Responder) { p.DLQQueueType = policy.Classic }),
	resp(func(p *policy.Responder) { p.ResponseMessageID = false }),
	resp(func(p *policy.Responder) { p.HeaderTypes = policy.Strict }),
	req("gatherer", func(p *policy.Requester) { p.GatherCopyIDs = policy.DistinctIDs }),
	req("gatherer", func(p *policy.Requester) { p.MultiCopies = policy.OneCopy }),
	req("gatherer", func(p *policy.Requester) { p.GatherResolvesEarly = false }),
	req("gatherer", func(p *policy.Requester) { p.GatherMissingCount = policy.MissingCountIsOne }),
	req("gatherer", func(p *policy.Requester) { p.GatherStrayReply = policy.StrayOldestGather }),
	req("requester", func(p *policy.Requester) { p.DefaultTimeoutMS = 10000 }),
	resp(func(p *policy.Responder) { p.DefaultMaxAttempts = 5 }),
	resp(func(p *policy.Responder) { p.AttemptBase = 0 }),
	req("gatherer", func(p *policy.Requester) { p.GatherDefaultCorrelation = policy.NoDefaultCorrelation }),
	req("gatherer", func(p *policy.Requester) { p.CountGatherTimeouts = true }),
	req("requester", func(p *policy.Requester) { p.PendingAtClose = policy.WaitTimeout }),
	req("gatherer", func(p *policy.Requester) { p.HonourGatherReturns = false }),
	req("requester", func(p *policy.Requester) { p.TypeCarrier = policy.TypeHeader }),
	resp(func(p *policy.Responder) { p.FailureReplyDelivery = policy.Unchecked }),
	resp(func(p *policy.Responder) { p.MalformedRequest = policy.DropMalformed }),
	req("requester", func(p *policy.Requester) { p.WriteNativeAddress = false }),
	req("requester", func(p *policy.Requester) { p.NativeAddress = policy.StaleAddress }),
	req("requester", func(p *policy.Requester) { p.NarrowIntHeader = true }),
	req("requester", func(p *policy.Requester) { p.CountUnmatched = false }),
	req("requester", func(p *policy.Requester) { p.UnmatchedReply = policy.UnmatchedToOldestWaiter }),
	req("requester", func(p *policy.Requester) { p.TimeoutOutcome = policy.TimeoutIsNullReply }),
	req("requester", func(p *policy.Requester) { p.UnknownReplyHeaders = policy.FailUnknownHeaders }),
	req("requester", func(p *policy.Requester) { p.ExclusiveReplyQueue = false }),
	req("gatherer", func(p *policy.Requester) { p.CountGatherUnmatched = false }),
	req("gatherer", func(p *policy.Requester) { p.PublishCopies = 2 }),
	req("gatherer", func(p *policy.Requester) { p.MultiCopiesWithoutCount = 0 }),
	resp(func(p *policy.Responder) { p.ReadOrder = []policy.Source{policy.Header} }),
	resp(func(p *policy.Responder) { p.BytesAddress = policy.IgnoreBytesAddress }),
	resp(func(p *policy.Responder) { p.ReplyContentType = policy.NoContentType }),
	resp(func(p *policy.Responder) { p.StripPrefix = "x-" }),
	resp(func(p *policy.Responder) { p.FailureBody = policy.JSONFailureBody }),
	resp(func(p *policy.Responder) { p.ErrorTypeName = policy.QualifiedTypeName }),
	resp(func(p *policy.Responder) { p.RetryFailures = true }),
	resp(func(p *policy.Responder) { p.CountUnanswerable = false }),
	resp(func(p *policy.Responder) { p.RequestQueue = policy.ClassicIfMissing }),
	req("requester", func(p *policy.Requester) { p.RequestDeadline = policy.LateDeadline }),
	req("gatherer", func(p *policy.Requester) { p.GatherDeadline = policy.RestartPerReply }),
	req("gatherer", func(p *policy.Requester) { p.GatherFailureReply = policy.KeepGatherFailure }),
	req("gatherer", func(p *policy.Requester) { p.CountGatherFailures = false }),
	resp(func(p *policy.Responder) { p.PassSpecHeaders = false }),
	resp(func(p *policy.Responder) { p.LastAttempt = policy.AckLastAttempt }),
},
	"native-only", "header-bytes", "queue-per-request", "late-reply-to-next", "ignores-error-header",
	"native-first", "no-strip", "no-dlq-on-failure", "counts-failures", "dead-letter-unanswerable",
	"no-rollback", "answered-after-publish", "counters-after-subscribe",
	"gather-by-correlation-id", "shortfall-resolves",
	"implicit-queue-type", "timeouts-not-counted", "ignores-returns", "truncates-short-strings", "drops-undecodable",
	"correlation-from-correlation-id", "acks-undeliverable", "classic-dlq", "no-response-message-id", "strict-header-types",
	"copies-distinct-ids", "multi-one-copy", "no-early-resolve", "no-count-means-one", "stray-reply-to-oldest-gather",
	"default-timeout-10s", "default-attempts-5", "attempt-from-zero", "gather-no-default-correlation", "gather-timeouts-counted",
	"close-abandons-pending", "gather-ignores-returns", "type-in-header", "failure-reply-unchecked", "malformed-request-dropped",
	"header-only-address", "mismatched-addresses", "narrow-int-header", "unmatched-not-counted", "unmatched-to-waiter", "timeout-as-null-reply",
	"fails-on-unknown-headers", "shared-reply-queue", "gather-unmatched-not-counted", "publish-twice", "no-count-no-copy",
	"header-only-reader", "ignores-bytes-address", "no-content-type", "strips-x-headers", "failure-with-body",
	"qualified-error-type", "retries-failures", "unanswerable-not-counted", "classic-request-queue",
	"late-timeout", "budget-restarts-per-reply", "gather-keeps-failures", "gather-failures-not-counted", "hides-acemq-headers",
	"last-attempt-acked",
)

func named(ms []mutant, names ...string) []mutant {
	if len(ms) != len(names) {
		panic(fmt.Sprintf("%d mutants, %d names", len(ms), len(names)))
	}
	for i := range ms {
		ms[i].name = names[i]
	}
	return ms
}

// A profile is the policy values of an older Go release (the catalogue's
// profiles.<name>.peers.go); nil changes nothing.
type profile struct {
	name      string
	requester func(*policy.Requester)
	responder func(*policy.Responder)
}

var profiles = []profile{
	{name: "current"},
	{name: "0.5.0"},
	{
		name:      "0.3.0",
		requester: func(p *policy.Requester) { p.WriteNativeAddress = false },
		responder: func(p *policy.Responder) { p.ReadOrder = []policy.Source{policy.Header} },
	},
}

func mutantNames() []string {
	out := make([]string, len(mutants))
	for i, m := range mutants {
		out[i] = m.name
	}
	return out
}

func profileNames() []string {
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = p.name
	}
	return out
}

func findProfile(name string) (profile, error) {
	if name == "" {
		name = "current"
	}
	for _, p := range profiles {
		if p.name == name {
			return p, nil
		}
	}
	return profile{}, bad("unknown profile %q: this peer offers %s", name, strings.Join(profileNames(), ", "))
}

// findMutant is the named mutant; none (nil or "") is the zero mutant, which
// changes nothing on either side.
func findMutant(name *string) (mutant, error) {
	if name == nil || *name == "" {
		return mutant{}, nil
	}
	for _, m := range mutants {
		if m.name == *name {
			return m, nil
		}
	}
	return mutant{}, bad("unknown mutant %q: this peer offers %s", *name, strings.Join(mutantNames(), ", "))
}

// requesterPolicy is the profile's requester policy with the mutant on top. A
// mutant of the responder side leaves it as it is.
func requesterPolicy(profileName string, mutantName *string) (policy.Requester, error) {
	p := policy.DefaultRequester()
	pr, err := findProfile(profileName)
	if err != nil {
		return p, err
	}
	m, err := findMutant(mutantName)
	if err != nil {
		return p, err
	}
	for _, f := range []func(*policy.Requester){pr.requester, m.requester} {
		if f != nil {
			f(&p)
		}
	}
	return p, nil
}

// responderPolicy is requesterPolicy's counterpart.
func responderPolicy(profileName string, mutantName *string) (policy.Responder, error) {
	p := policy.DefaultResponder()
	pr, err := findProfile(profileName)
	if err != nil {
		return p, err
	}
	m, err := findMutant(mutantName)
	if err != nil {
		return p, err
	}
	for _, f := range []func(*policy.Responder){pr.responder, m.responder} {
		if f != nil {
			f(&p)
		}
	}
	return p, nil
}
