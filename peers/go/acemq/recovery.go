package acemq

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ConnectionConfig is where a requester or responder that owns its connection
// connects (DialRequester, DialResponder), and the name it connects under.
// amqp091-go has no automatic recovery: such a requester or responder
// reconnects by itself when the broker or the network closes its connection.
type ConnectionConfig struct {
	// URLs are the broker's nodes, the preferred one first. The first
	// reachable one is used; after a loss they are tried in turn from the one
	// after the node that was lost.
	URLs []string
	// Name is the client-provided connection name (the connection_name client
	// property, shown in the management UI), given on every connection.
	Name string
	// TLS is the configuration for amqps:// URLs (see Dial); nil for
	// amqp091-go's default.
	TLS *tls.Config
}

// ErrConnectionLost is wrapped by the *ConnectionLostError of a call or
// gather that was pending when its requester's connection was lost.
var ErrConnectionLost = errors.New("acemq: connection lost")

// ConnectionLostError ends a call or gather whose requester's connection was
// lost while it was pending, or before its publish was confirmed: its reply
// queue went with the connection, so no reply can reach it. The request may
// still be carried out; it is never counted in TimedOut.
type ConnectionLostError struct {
	// Reason is what the broker or the client said, nil when unknown.
	Reason *amqp.Error
}

func (e *ConnectionLostError) Error() string { return "acemq: connection lost: " + e.ReasonText() }

// Unwrap makes it errors.Is(err, ErrConnectionLost).
func (e *ConnectionLostError) Unwrap() error { return ErrConnectionLost }

// ReasonText is the loss's AMQP reply code and text, e.g.
// "320 CONNECTION_FORCED - Closed via management plugin".
func (e *ConnectionLostError) ReasonText() string {
	if e.Reason == nil {
		return "connection closed"
	}
	return fmt.Sprintf("%d %s", e.Reason.Code, e.Reason.Reason)
}

// The reconnect backoff: the first attempt a quarter of a second after the
// loss, doubling up to five seconds between attempts.
const (
	firstRetryDelay = 250 * time.Millisecond
	maxRetryDelay   = 5 * time.Second
	// dialTimeout bounds one dial and handshake: amqp091-go's own default. A
	// node that is down refuses at once; five seconds, tried first, failed
	// handshakes that a loaded broker was still completing (the suite's stress
	// run: "read tcp ...: i/o timeout" on opening a requester).
	dialTimeout = 30 * time.Second
)

// retryDelay is how long the attempt-th reconnection attempt (from 0) waits.
func retryDelay(attempt int) time.Duration {
	d := firstRetryDelay
	for i := 0; i < attempt && d < maxRetryDelay; i++ {
		d *= 2
	}
	if d > maxRetryDelay {
		d = maxRetryDelay
	}
	return d
}

// dialFrom connects to the first node that answers, trying them in turn from
// URLs[start]; it returns the connection and the index of its node.
func (c ConnectionConfig) dialFrom(start int) (*amqp.Connection, int, error) {
	if len(c.URLs) == 0 {
		return nil, 0, errors.New("acemq: no broker URL to connect to")
	}
	var err error
	for i := 0; i < len(c.URLs); i++ {
		node := (start + i) % len(c.URLs)
		var conn *amqp.Connection
		if conn, err = dialNamed(c.URLs[node], c.Name, c.TLS); err == nil {
			return conn, node, nil
		}
	}
	return nil, 0, err
}

// dialNamed is Dial with a connection name (none when empty).
func dialNamed(url, name string, tlsConfig *tls.Config) (*amqp.Connection, error) {
	uri, err := amqp.ParseURI(url)
	if err != nil {
		return nil, err
	}
	if uri.Scheme != "amqps" && tlsConfig != nil {
		return nil, errors.New("acemq: a TLS configuration was given for an amqp:// URL; use amqps:// to connect with TLS")
	}
	if tlsConfig != nil {
		tlsConfig = tlsConfig.Clone()
	}
	// amqp091-go sends only the properties given once any are: its own three
	// are given back.
	props := amqp.Table{"product": "acemq-go", "version": Version, "platform": "Go"}
	if name != "" {
		props["connection_name"] = name
	}
	return amqp.DialConfig(url, amqp.Config{
		Heartbeat:       10 * time.Second,
		Locale:          "en_US",
		TLSClientConfig: tlsConfig,
		Properties:      props,
		Dial:            amqp.DefaultDial(dialTimeout),
	})
}

// redial connects again after the node lost was lost, with retryDelay's
// backoff, until open takes a new connection (it returns nil) or stop closes
// (false). A connection open refused is closed and the next attempt made.
func (c ConnectionConfig) redial(stop <-chan struct{}, lost int, open func(conn *amqp.Connection, node int) error) bool {
	for attempt := 0; ; attempt++ {
		timer := time.NewTimer(retryDelay(attempt))
		select {
		case <-stop:
			timer.Stop()
			return false
		case <-timer.C:
		}
		conn, node, err := c.dialFrom(lost + 1)
		if err == nil {
			if err = open(conn, node); err == nil {
				return true
			}
			conn.Close()
		}
		log.Printf("acemq: reconnecting %q, attempt %d: %v", c.Name, attempt+1, err)
	}
}

// lostError is a NotifyClose value as a ConnectionLostError's reason.
func lostError(reason *amqp.Error) error { return &ConnectionLostError{Reason: reason} }
