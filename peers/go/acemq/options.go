package acemq

import (
	"fmt"
	"time"
)

// Version is this binding's release.
const Version = "0.9.0"

// DefaultTimeout is how long a request waits for its reply unless told
// otherwise.
const DefaultTimeout = 30 * time.Second

// DefaultMaxAttempts is how often a responder tries to deliver a reply before
// it dead-letters the request.
const DefaultMaxAttempts = 3

// Profile makes a requester or responder behave like an older release, so
// that the interop suite can reproduce the incompatibilities history had.
type Profile string

const (
	// ProfileCurrent is this release.
	ProfileCurrent Profile = "current"
	// Profile050 is 0.5.0, which already wrote and read both reply addresses:
	// for Go it behaves as current.
	Profile050 Profile = "0.5.0"
	// Profile030 is 0.3.0, which wrote and read the reply address only in the
	// acemq-reply-to header, never the native reply_to property.
	Profile030 Profile = "0.3.0"
)

// Profiles lists the profiles this binding supports.
var Profiles = []Profile{ProfileCurrent, Profile050, Profile030}

// ParseProfile accepts a profile name; the empty name is ProfileCurrent.
func ParseProfile(s string) (Profile, error) {
	if s == "" {
		return ProfileCurrent, nil
	}
	for _, p := range Profiles {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown profile %q", s)
}

// headerOnly reports whether the profile uses only the acemq-reply-to header.
func (p Profile) headerOnly() bool { return p == Profile030 }

// Mutant is a named, deliberate defect from the wire spec's catalogue. The
// interop suite opens bindings with mutants to show that it catches each
// broken rule. Production code leaves it empty.
type Mutant string

// Role is the part of the binding a mutant acts on.
type Role string

const (
	RoleRequester Role = "requester"
	RoleResponder Role = "responder"
)

// The mutant catalogue (docs/wire-spec.md), with the rule each one breaks.
const (
	NoMutant Mutant = ""

	MutantNativeOnly         Mutant = "native-only"              // RR-1
	MutantHeaderBytes        Mutant = "header-bytes"             // RR-2
	MutantQueuePerRequest    Mutant = "queue-per-request"        // RR-6
	MutantLateReplyToNext    Mutant = "late-reply-to-next"       // RR-8
	MutantIgnoresErrorHeader Mutant = "ignores-error-header"     // RR-10
	MutantGatherByCorrID     Mutant = "gather-by-correlation-id" // SG-4
	MutantShortfallResolves  Mutant = "shortfall-resolves"       // SG-6

	MutantNativeFirst            Mutant = "native-first"             // RR-3
	MutantNoStrip                Mutant = "no-strip"                 // RR-5
	MutantNoDLQOnFailure         Mutant = "no-dlq-on-failure"        // RR-11
	MutantCountsFailures         Mutant = "counts-failures"          // RR-11
	MutantDeadLetterUnanswerable Mutant = "dead-letter-unanswerable" // RR-12
	MutantNoRollback             Mutant = "no-rollback"              // RR-15
	MutantAnsweredAfterPublish   Mutant = "answered-after-publish"   // RR-15
	MutantCountersAfterSubscribe Mutant = "counters-after-subscribe" // RR-16

	MutantImplicitQueueType     Mutant = "implicit-queue-type"          // RR-7
	MutantTimeoutsNotCounted    Mutant = "timeouts-not-counted"         // RR-9
	MutantIgnoresReturns        Mutant = "ignores-returns"              // RR-13
	MutantTruncatesShortStrings Mutant = "truncates-short-strings"      // RR-18
	MutantDropsUndecodable      Mutant = "drops-undecodable"            // RR-19
	MutantCopiesDistinctIDs     Mutant = "copies-distinct-ids"          // SG-1
	MutantMultiOneCopy          Mutant = "multi-one-copy"               // SG-2
	MutantNoEarlyResolve        Mutant = "no-early-resolve"             // SG-5
	MutantNoCountMeansOne       Mutant = "no-count-means-one"           // SG-7
	MutantStrayToOldestGather   Mutant = "stray-reply-to-oldest-gather" // SG-8

	MutantCorrelationFromCorrID Mutant = "correlation-from-correlation-id" // RR-4
	MutantAcksUndeliverable     Mutant = "acks-undeliverable"              // RR-14
	MutantClassicDLQ            Mutant = "classic-dlq"                     // RR-17
	MutantNoResponseMessageID   Mutant = "no-response-message-id"          // SG-3
	MutantStrictHeaderTypes     Mutant = "strict-header-types"             // WF-1
)

var mutantRoles = map[Mutant]Role{
	MutantNativeOnly:         RoleRequester,
	MutantHeaderBytes:        RoleRequester,
	MutantQueuePerRequest:    RoleRequester,
	MutantLateReplyToNext:    RoleRequester,
	MutantIgnoresErrorHeader: RoleRequester,
	MutantGatherByCorrID:     RoleRequester,
	MutantShortfallResolves:  RoleRequester,

	MutantNativeFirst:            RoleResponder,
	MutantNoStrip:                RoleResponder,
	MutantNoDLQOnFailure:         RoleResponder,
	MutantCountsFailures:         RoleResponder,
	MutantDeadLetterUnanswerable: RoleResponder,
	MutantNoRollback:             RoleResponder,
	MutantAnsweredAfterPublish:   RoleResponder,
	MutantCountersAfterSubscribe: RoleResponder,

	MutantImplicitQueueType:     RoleRequester,
	MutantTimeoutsNotCounted:    RoleRequester,
	MutantIgnoresReturns:        RoleRequester,
	MutantTruncatesShortStrings: RoleRequester,
	MutantDropsUndecodable:      RoleRequester,
	MutantCopiesDistinctIDs:     RoleRequester,
	MutantMultiOneCopy:          RoleRequester,
	MutantNoEarlyResolve:        RoleRequester,
	MutantNoCountMeansOne:       RoleRequester,
	MutantStrayToOldestGather:   RoleRequester,

	MutantCorrelationFromCorrID: RoleResponder,
	MutantAcksUndeliverable:     RoleResponder,
	MutantClassicDLQ:            RoleResponder,
	MutantNoResponseMessageID:   RoleResponder,
	MutantStrictHeaderTypes:     RoleResponder,
}

// Mutants lists every mutant this binding implements, in catalogue order.
var Mutants = []Mutant{
	MutantNativeOnly, MutantHeaderBytes, MutantQueuePerRequest,
	MutantLateReplyToNext, MutantIgnoresErrorHeader,
	MutantNativeFirst, MutantNoStrip, MutantNoDLQOnFailure,
	MutantCountsFailures, MutantDeadLetterUnanswerable, MutantNoRollback,
	MutantAnsweredAfterPublish, MutantCountersAfterSubscribe,
	MutantGatherByCorrID, MutantShortfallResolves,
	MutantImplicitQueueType, MutantTimeoutsNotCounted, MutantIgnoresReturns,
	MutantTruncatesShortStrings, MutantDropsUndecodable,
	MutantCorrelationFromCorrID, MutantAcksUndeliverable, MutantClassicDLQ,
	MutantNoResponseMessageID, MutantStrictHeaderTypes,
	MutantCopiesDistinctIDs, MutantMultiOneCopy, MutantNoEarlyResolve,
	MutantNoCountMeansOne, MutantStrayToOldestGather,
}

// ParseMutant accepts a mutant name for the given role; the empty name is
// NoMutant.
func ParseMutant(s string, role Role) (Mutant, error) {
	if s == "" {
		return NoMutant, nil
	}
	m := Mutant(s)
	r, ok := mutantRoles[m]
	if !ok {
		return "", fmt.Errorf("unknown mutant %q", s)
	}
	if r != role {
		return "", fmt.Errorf("mutant %q acts on a %s, not a %s", s, r, role)
	}
	return m, nil
}
