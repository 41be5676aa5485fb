package acemq

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate as PEM
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, file: file}
}

// serverCert is a certificate signed by ca for the given IP addresses.
func (ca *testCA) serverCert(t *testing.T, ips ...net.IP) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsListener completes TLS handshakes and then hangs up: enough to see
// whether the client accepted the server's certificate, and no broker.
func tlsListener(t *testing.T, cert tls.Certificate) int {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func dialTLS(t *testing.T, port int, caFile string) error {
	t.Helper()
	cfg, err := TLSConfig(caFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := Dial("amqps://guest:secret@127.0.0.1:"+strconv.Itoa(port)+"/", cfg)
	if err == nil {
		conn.Close()
		t.Fatal("a listener that hangs up after TLS gave a connection")
	}
	return err
}

func TestDialVerifiesTheChainAgainstTheCAFile(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	port := tlsListener(t, ca.serverCert(t, net.IPv4(127, 0, 0, 1)))

	err := dialTLS(t, port, other.file)
	if !strings.Contains(err.Error(), "unknown authority") || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("wrong CA: %v", err)
	}
	t.Logf("wrong CA: %v", err)
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
	// The right CA gets past TLS; the listener then hangs up in the AMQP handshake.
	if err := dialTLS(t, port, ca.file); strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "tls:") {
		t.Errorf("right CA refused: %v", err)
	}
}

func TestDialVerifiesTheHostName(t *testing.T) {
	ca := newTestCA(t, "ca")
	port := tlsListener(t, ca.serverCert(t, net.IPv4(127, 0, 0, 2))) // not the address dialled
	if err := dialTLS(t, port, ca.file); !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), "x509") {
		t.Errorf("a certificate for another address: %v", err)
	}
}

func TestTLSConfigRefusesAFileWithoutACertificate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(file, []byte("not a certificate\n"), 0o600)
	if _, err := TLSConfig(file); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("got %v", err)
	}
	if _, err := TLSConfig(filepath.Join(t.TempDir(), "missing.pem")); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("got %v", err)
	}
}

func TestDialRefusesTLSSettingsForAPlainURL(t *testing.T) {
	_, err := Dial("amqp://guest:guest@127.0.0.1:1/", &tls.Config{})
	if err == nil || !strings.Contains(err.Error(), "amqps://") {
		t.Errorf("got %v", err)
	}
}
