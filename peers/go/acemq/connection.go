package acemq

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TLSConfig returns a client TLS configuration that trusts only the CA
// certificates in the PEM file caFile: the broker's certificate chain must
// lead to one of them, and (amqp091-go sets ServerName to the URL's host) the
// certificate must name that host, a DNS name or an IP address in its
// subjectAltName. No client certificate is sent.
func TLSConfig(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("acemq: cannot read the CA file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("acemq: %s holds no PEM certificate; give the CA certificate that signed the broker's", caFile)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

// Dial opens a connection to url, as amqp.Dial does. An amqps:// URL is
// dialled with TLS using tlsConfig (nil: amqp091-go's default, the system's
// roots); a tlsConfig with an amqp:// URL is refused rather than silently
// ignored. Each call uses its own copy of tlsConfig, because amqp091-go
// writes the URL's host into the ServerName of the config it is given, so
// one config can be shared by connections dialled at once.
func Dial(url string, tlsConfig *tls.Config) (*amqp.Connection, error) {
	uri, err := amqp.ParseURI(url)
	if err != nil {
		return nil, err
	}
	if uri.Scheme != "amqps" {
		if tlsConfig != nil {
			return nil, errors.New("acemq: a TLS configuration was given for an amqp:// URL; use amqps:// to connect with TLS")
		}
		return amqp.Dial(url)
	}
	if tlsConfig != nil {
		tlsConfig = tlsConfig.Clone()
	}
	conn, err := amqp.DialTLS(url, tlsConfig)
	var amqpErr *amqp.Error
	if err != nil && !errors.As(err, &amqpErr) {
		// A TCP or TLS failure (amqp091-go returns the handshake's error as is):
		// name where it happened, never the URL, which carries the password.
		addr := net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port))
		return nil, fmt.Errorf("acemq: TLS connection to %s failed: %w", addr, err)
	}
	return conn, err
}
