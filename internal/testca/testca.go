// Package testca is a private certificate authority for tests: a CA certificate and key made on
// the spot, and the server certificates it signs, so that a test can prove what trusting (or not
// trusting) a private CA does to the connections it serves. It must never be linked into a
// binary.
package testca

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
	"testing"
	"time"
)

// CA is a certificate authority nobody else trusts.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM encoded: what an operator puts in a CA bundle.
	PEM []byte
}

// New makes a CA valid for a day around now.
func New(tb testing.TB) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: "a2a-connector test CA " + tb.Name()},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("testca: CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testca: %v", err)
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// File writes the CA's PEM to a file in the test's temporary folder and returns its path.
func (ca *CA) File(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "agent-ca.pem")
	if err := os.WriteFile(path, ca.PEM, 0o600); err != nil {
		tb.Fatalf("testca: %v", err)
	}
	return path
}

// ServerTLS is a server TLS configuration whose certificate the CA signed for hosts (IP
// addresses or DNS names; default 127.0.0.1).
func (ca *CA) ServerTLS(tb testing.TB, hosts ...string) *tls.Config {
	tb.Helper()
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatalf("testca: server certificate: %v", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testca: key: %v", err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatalf("testca: serial: %v", err)
	}
	return n
}

// MutualServerTLS is ServerTLS for a server that demands a client certificate the CA signed
// (tls.RequireAndVerifyClientCert): an agent behind mutual TLS.
func (ca *CA) MutualServerTLS(tb testing.TB, hosts ...string) *tls.Config {
	tb.Helper()
	cfg := ca.ServerTLS(tb, hosts...)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return cfg
}

// ClientOptions shape a client certificate; the zero value is one valid for a day around now,
// for client authentication.
type ClientOptions struct {
	// NotAfter, when set, ends its validity (a time past: an expired certificate).
	NotAfter time.Time
	// ExtKeyUsage replaces clientAuth (e.g. serverAuth only: a certificate not for clients).
	ExtKeyUsage []x509.ExtKeyUsage
}

// ClientCert is a client certificate the CA signed for name, and its private key (PKCS #8),
// both PEM: what a tenant registers as credentials.mtls.
func (ca *CA) ClientCert(tb testing.TB, name string, o ClientOptions) (certPEM, keyPEM []byte) {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if !o.NotAfter.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = o.NotAfter.Add(-48*time.Hour), o.NotAfter
	}
	if o.ExtKeyUsage != nil {
		tmpl.ExtKeyUsage = o.ExtKeyUsage
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatalf("testca: client certificate: %v", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("testca: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}
