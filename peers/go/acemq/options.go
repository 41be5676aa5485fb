package acemq

import "time"

// Version is this binding's release.
const Version = "0.9.0"

// DefaultTimeout is how long a request waits for its reply unless told
// otherwise.
const DefaultTimeout = 30 * time.Second

// DefaultMaxAttempts is how often a responder tries to deliver a reply before
// it dead-letters the request.
const DefaultMaxAttempts = 3
