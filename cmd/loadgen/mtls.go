package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"
)

// The TLS rows (-credentials mtls, apikey-tls): the JSON-RPC agent on two TLS ports of the stub
// agent, whose certificate a private CA that loadgen makes for the run signed. The mtls port
// demands a client certificate of that CA (tls.RequireAndVerifyClientCert), and its agent is
// registered with credentials.mtls and tls.caPem; the apikey-tls port asks for none, and its
// agent is registered with an API key and tls.caPem: the like of the mTLS row without the
// client certificate, so "added" beside it is what the client certificate costs the connector.
// The direct sides trust the same CA and, on the mtls row, send the same client certificate.
// Both sides keep their connections (HTTP/1.1 over TLS, the only protocol the connector's
// transport offers), so a handshake is paid per connection, not per turn.

// pki is the run's private CA: the stub agent's server certificate and the client certificate
// of the mTLS row, PEM.
type pki struct {
	caPEM                 string
	serverCert, serverKey string
	clientCert, clientKey string
}

// Environment of `loadgen agent`: its TLS server certificate and the CA its mtls port trusts
// for client certificates (the parent made them; the key stays out of the command line).
const (
	envTLSCert  = "LOADGEN_AGENT_TLS_CERT"
	envTLSKey   = "LOADGEN_AGENT_TLS_KEY"
	envClientCA = "LOADGEN_AGENT_CLIENT_CA"
)

func (p pki) env() map[string]string {
	return map[string]string{envTLSCert: p.serverCert, envTLSKey: p.serverKey, envClientCA: p.caPEM}
}

// newPKI makes a CA valid for a day around now, a server certificate it signs for host (an IP
// address) and a client certificate for client authentication.
func newPKI(host string) (pki, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		return pki{}, fmt.Errorf("pki: %q is not an IP address", host)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pki{}, fmt.Errorf("pki: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "loadgen private CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return pki{}, fmt.Errorf("pki: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return pki{}, fmt.Errorf("pki: %w", err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) (certPEM, keyPEM string, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return "", "", err
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})), nil
	}
	p := pki{caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))}
	if p.serverCert, p.serverKey, err = leaf(2, host, x509.ExtKeyUsageServerAuth, []net.IP{ip}); err != nil {
		return pki{}, fmt.Errorf("pki: server certificate: %w", err)
	}
	if p.clientCert, p.clientKey, err = leaf(3, "loadgen connector", x509.ExtKeyUsageClientAuth, nil); err != nil {
		return pki{}, fmt.Errorf("pki: client certificate: %w", err)
	}
	return p, nil
}

// clientTLS is the direct side's TLS: trusting the CA, with the client certificate when
// withCert.
func (p pki) clientTLS(withCert bool) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(p.caPEM)) {
		return nil, errors.New("pki: no CA certificate")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if withCert {
		cert, err := tls.X509KeyPair([]byte(p.clientCert), []byte(p.clientKey))
		if err != nil {
			return nil, fmt.Errorf("pki: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// agentTLS are the stub agent's two TLS server configurations, read from its environment: the
// mtls port's (demanding a client certificate of clientCA) and the plain TLS port's. ok is
// false when the environment names no certificate (the agent then serves no TLS port).
func agentTLS(getenv func(string) string) (mutual, plain *tls.Config, ok bool, err error) {
	certPEM, keyPEM, caPEM := getenv(envTLSCert), getenv(envTLSKey), getenv(envClientCA)
	if certPEM == "" {
		return nil, nil, false, nil
	}
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return nil, nil, false, fmt.Errorf("agent: TLS certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, nil, false, fmt.Errorf("agent: %s holds no CA certificate", envClientCA)
	}
	plain = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	mutual = plain.Clone()
	mutual.ClientCAs, mutual.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return mutual, plain, true, nil
}

// requireTLS answers 403 to a call to the face of target that did not come over the TLS it is
// measured with (a verified client certificate for mtls, TLS for apikey-tls): a row must never
// pass without it.
func requireTLS(w http.ResponseWriter, r *http.Request, target string) bool {
	switch {
	case r.TLS == nil:
		http.Error(w, "the "+target+" face is served over TLS only", http.StatusForbidden)
		return false
	case target == targetMTLS && len(r.TLS.VerifiedChains) == 0:
		http.Error(w, "no verified client certificate", http.StatusForbidden)
		return false
	}
	return true
}
