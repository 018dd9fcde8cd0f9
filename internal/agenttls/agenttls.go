// Package agenttls is the TLS an agent's calls are made with when its registration says more
// than the process-wide default: a CA bundle of its own (tls.caPem, added to the system roots
// and A2AC_AGENT_CA_FILE) and a client certificate (credentials.mtls). It checks what a tenant
// sends (CheckCA, CheckClientCert), builds the client configuration once per registration
// (Cache), and carries it to the transports on the call's context (With, From): the HTTP
// transports of internal/netguard and the gRPC pool of internal/a2aclient keep the connections
// of each Identity apart from every other's and from the default's.
//
// It refuses to put a private key, or anything read from one, in an error, and to make
// configurations that skip verification of the agent's certificate.
package agenttls

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits of what a tenant may send. A CA bundle of a private PKI is a few certificates of ~1-2
// KiB each; a client certificate with its chain and key likewise.
const (
	MaxCABytes  = 64 << 10
	MaxPEMBytes = 32 << 10
)

// Identity is the TLS of one agent's calls: Config (RootCAs, and the client certificate when
// there is one) for connections that only this Identity's calls use. Key names it for pools:
// two Identities with the same Key have the same configuration.
type Identity struct {
	Key string
	// Owner is the agent it belongs to: when an agent's Identity changes (a PATCH of its
	// certificate or CA), the transports close the connections of its previous one.
	Owner  string
	Config *tls.Config
}

// ErrClosedAfterClientCert marks a connection that the server closed or reset right after a
// TLS 1.3 handshake in which we sent a client certificate, before sending a byte: how a server
// that refused the certificate looks when its alert was lost (our first write crossed its
// close, and the reset dropped the alert). The transports wrap the read's error with it.
var ErrClosedAfterClientCert = errors.New("closed right after the TLS handshake with our client certificate")

// ClosedAfterClientCert wraps err with ErrClosedAfterClientCert when it is such a close: a
// reset or EOF before any byte (readAny false) on a TLS 1.3 connection that sent a client
// certificate (sentCert). Otherwise err as it is.
func ClosedAfterClientCert(err error, sentCert, readAny bool) error {
	if err == nil || !sentCert || readAny || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrClosedAfterClientCert, err)
}

type ctxKey struct{}

// With returns ctx carrying id for the calls made with it; a nil id returns ctx as it is.
func With(ctx context.Context, id *Identity) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, id)
}

// From is the Identity ctx carries, nil for the process-wide default.
func From(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}

// CheckCA reads a CA bundle: PEM holding only CERTIFICATE blocks, at least one, each a CA
// certificate (basicConstraints CA:TRUE), at most MaxCABytes. Its error is a reason to put
// after the field's name.
func CheckCA(caPEM string) ([]*x509.Certificate, error) {
	if len(caPEM) > MaxCABytes {
		return nil, fmt.Errorf("is %d bytes, more than %d", len(caPEM), MaxCABytes)
	}
	blocks, err := pemBlocks(caPEM)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("block %d is %q: only CERTIFICATE blocks are allowed", i+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d cannot be read: %v", i+1, err)
		}
		if !c.IsCA || !c.BasicConstraintsValid {
			return nil, fmt.Errorf("certificate %d (%s) is not a CA certificate (basicConstraints CA:TRUE): give the CA that signed the agent's certificate, not the certificate itself", i+1, c.Subject.CommonName)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// Field names of CheckClientCert's errors, under credentials.mtls.
const (
	FieldCertificate = "certificatePem"
	FieldPrivateKey  = "privateKeyPem"
)

// CertError is a client certificate that cannot work: Field is FieldCertificate or
// FieldPrivateKey, Reason a sentence that never quotes the key.
type CertError struct {
	Field, Reason string
}

func (e *CertError) Error() string { return e.Field + ": " + e.Reason }

// CheckClientCert checks a client certificate (its chain may follow it) and its private key as
// they are sent: readable PEM, valid at now, usable for client authentication (a certificate
// naming extended key usages must name clientAuth: TLS servers refuse it otherwise), and a
// key that matches the certificate. Errors are *CertError.
func CheckClientCert(certPEM, keyPEM string, now time.Time) (tls.Certificate, error) {
	fail := func(field, format string, a ...any) (tls.Certificate, error) {
		return tls.Certificate{}, &CertError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if len(certPEM) > MaxPEMBytes {
		return fail(FieldCertificate, "is %d bytes, more than %d", len(certPEM), MaxPEMBytes)
	}
	if len(keyPEM) > MaxPEMBytes {
		return fail(FieldPrivateKey, "is %d bytes, more than %d", len(keyPEM), MaxPEMBytes)
	}
	blocks, err := pemBlocks(certPEM)
	if err != nil {
		return fail(FieldCertificate, "%v", err)
	}
	var chain [][]byte
	var leaf *x509.Certificate
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			return fail(FieldCertificate, "block %d is %q: only CERTIFICATE blocks are allowed (the key goes in %s)", i+1, b.Type, FieldPrivateKey)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fail(FieldCertificate, "certificate %d cannot be read: %v", i+1, err)
		}
		if leaf == nil {
			leaf = c
		}
		chain = append(chain, b.Bytes)
	}
	switch {
	case now.After(leaf.NotAfter):
		return fail(FieldCertificate, "expired on %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fail(FieldCertificate, "is not valid before %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	case len(leaf.ExtKeyUsage) > 0 && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny):
		return fail(FieldCertificate, "is not for client authentication: its extended key usage lacks clientAuth, and agents' TLS servers refuse it")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return fail(FieldPrivateKey, "%v", err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return fail(FieldPrivateKey, "does not match the certificate in %s", FieldCertificate)
	}
	return tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

// pemBlocks is every PEM block of s; text around and between them is allowed (comments),
// anything else in a block is not.
func pemBlocks(s string) ([]*pem.Block, error) {
	var out []*pem.Block
	rest := []byte(s)
	for {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		out = append(out, b)
		rest = r
	}
	if len(out) == 0 {
		return nil, errors.New("is not PEM (no -----BEGIN CERTIFICATE----- block)")
	}
	if strings.Contains(string(rest), "-----BEGIN") {
		return nil, fmt.Errorf("has a PEM block that cannot be read after block %d", len(out))
	}
	return out, nil
}

// parseKey reads one unencrypted private key: PKCS #8, PKCS #1 (RSA) or SEC 1 (EC). Its errors
// name the form, never the key's bytes.
func parseKey(s string) (crypto.Signer, error) {
	blocks, err := pemBlocks(s)
	if err != nil {
		return nil, errors.New("is not PEM (no -----BEGIN PRIVATE KEY----- block)")
	}
	var keyBlock *pem.Block
	for _, b := range blocks {
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			if keyBlock != nil {
				return nil, errors.New("holds more than one private key")
			}
			keyBlock = b
		} else if b.Type != "EC PARAMETERS" {
			return nil, fmt.Errorf("holds a %q block: only the private key belongs here", b.Type)
		}
	}
	if keyBlock == nil {
		return nil, errors.New("holds no PRIVATE KEY block")
	}
	if keyBlock.Type == "ENCRYPTED PRIVATE KEY" || keyBlock.Headers["Proc-Type"] != "" {
		return nil, errors.New("is encrypted: give the key without a passphrase (it is sealed at rest)")
	}
	var k any
	switch keyBlock.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(keyBlock.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	}
	if err != nil {
		// The parser's words name the structure, not the key material.
		return nil, fmt.Errorf("cannot be read as a %s", keyBlock.Type)
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("is a key of type %T, not RSA, ECDSA or Ed25519", k)
}

// Cache builds and keeps the Identities of agents, so that a turn pays for reading PEM and
// building a pool only when the registration changed. Safe for concurrent use.
type Cache struct {
	base    *x509.CertPool // the process-wide roots; nil: the system's
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]*Identity
}

// maxCached bounds the Identities kept; past it, an arbitrary one is dropped (it is rebuilt
// on its agent's next turn).
const maxCached = 4096

// NewCache returns a Cache whose Identities trust base (the system roots plus
// A2AC_AGENT_CA_FILE in the binaries; nil: the system roots) plus each agent's own CA bundle.
// now is the clock certificates are checked with (nil: time.Now).
func NewCache(base *x509.CertPool, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{base: base, now: now, entries: map[string]*Identity{}}
}

// Source is what an Identity is made of; Cert and Key are empty for none, CA for none.
type Source struct {
	CA        string
	Cert, Key string
}

// KeyOf names an agent's Identity by what it is made of, without opening anything: the
// agent's id, its CA bundle and a fingerprint of its sealed credential (which changes with
// every new seal, so a changed certificate is a new Key).
func KeyOf(owner, caPEM string, sealed []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(owner), []byte(caPEM), sealed} {
		var n [8]byte
		l := len(part)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Get returns the Identity named key, building it with open when it is not cached. open returns
// what it is made of; its error is returned as is.
func (c *Cache) Get(key, owner string, open func() (Source, error)) (*Identity, error) {
	c.mu.Lock()
	id := c.entries[key]
	c.mu.Unlock()
	if id != nil {
		return id, nil
	}
	src, err := open()
	if err != nil {
		return nil, err
	}
	id, err = c.Build(key, owner, src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.entries) >= maxCached {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = id
	c.mu.Unlock()
	return id, nil
}

// Build makes an Identity from src without caching it (a registration's first card fetch, for
// an agent not yet stored). Its errors are *CertError or say what is wrong with the CA bundle.
func (c *Cache) Build(key, owner string, src Source) (*Identity, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if src.CA != "" {
		certs, err := CheckCA(src.CA)
		if err != nil {
			return nil, fmt.Errorf("tls.caPem %w", err)
		}
		pool := c.base
		if pool == nil {
			if pool, err = x509.SystemCertPool(); err != nil {
				pool = x509.NewCertPool()
			}
		}
		pool = pool.Clone()
		for _, cert := range certs {
			pool.AddCert(cert)
		}
		cfg.RootCAs = pool
	} else {
		cfg.RootCAs = c.base
	}
	if src.Cert != "" || src.Key != "" {
		cert, err := CheckClientCert(src.Cert, src.Key, c.now())
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &Identity{Key: key, Owner: owner, Config: cfg}, nil
}
