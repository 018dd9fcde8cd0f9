package agenttls

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// Every refusal of a CA bundle says what is wrong with it; a bundle of CA certificates, with
// comments between them, is read whole.
func TestCheckCA(t *testing.T) {
	t.Parallel()
	ca, other := testca.New(t), testca.New(t)
	leaf, _ := ca.ClientCert(t, "client", testca.ClientOptions{})
	key := keyPEM(t)
	for _, tc := range []struct {
		name, pem, reason string
	}{
		{"not PEM", "MIIBszCCAVmgAwIBAgIU", "is not PEM"},
		{"empty", "", "is not PEM"},
		{"a private key block", string(ca.PEM) + key, `block 2 is "PRIVATE KEY": only CERTIFICATE blocks are allowed`},
		{"a leaf certificate", string(leaf), "certificate 1 (client) is not a CA certificate (basicConstraints CA:TRUE)"},
		{"garbage in a block", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "certificate 1 cannot be read"},
		{"a broken block after a good one", string(ca.PEM) + "-----BEGIN CERTIFICATE-----\n!!\n", "has a PEM block that cannot be read after block 1"},
		{"too big", string(ca.PEM) + strings.Repeat("# comment\n", MaxCABytes/10), fmt.Sprintf("more than %d", MaxCABytes)},
	} {
		certs, err := CheckCA(tc.pem)
		if err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %d certificates, error %v; want one saying %q", tc.name, len(certs), err, tc.reason)
		}
	}
	certs, err := CheckCA("our private CA\n" + string(ca.PEM) + "and the old one\n" + string(other.PEM))
	if err != nil || len(certs) != 2 || !certs[0].IsCA || !certs[1].IsCA {
		t.Fatalf("a bundle of two CAs: %d certificates, %v", len(certs), err)
	}
}

// Every refusal of a client certificate names its field (certificatePem or privateKeyPem) and
// says why, never quoting the key.
func TestCheckClientCert(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	cert, key := ca.ClientCert(t, "client", testca.ClientOptions{})
	_, otherKey := ca.ClientCert(t, "other", testca.ClientOptions{})
	serverOnly, serverOnlyKey := ca.ClientCert(t, "server", testca.ClientOptions{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	anyUsage, anyUsageKey := ca.ClientCert(t, "any", testca.ClientOptions{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	now := time.Now()
	// Encrypted keys, both ways PEM says so: PKCS #8 and the legacy Proc-Type header.
	encPKCS8 := string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("0123456789abcdef")}))
	block, _ := pem.Decode(key)
	encLegacy := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: block.Bytes,
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00112233445566778899AABBCCDDEEFF"}}))
	for _, tc := range []struct {
		name             string
		cert, key        string
		at               time.Time
		field, reason    string
		keyMustNotLeakIn bool
	}{
		{"certificate not PEM", "not a certificate", string(key), now, FieldCertificate, "is not PEM", false},
		{"key in the certificate field", string(key), string(key), now, FieldCertificate, `block 1 is "PRIVATE KEY": only CERTIFICATE blocks are allowed (the key goes in privateKeyPem)`, true},
		{"unreadable certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", string(key), now, FieldCertificate, "certificate 1 cannot be read", false},
		{"certificate too big", string(cert) + strings.Repeat("#", MaxPEMBytes), string(key), now, FieldCertificate, fmt.Sprintf("more than %d", MaxPEMBytes), false},
		{"key too big", string(cert), string(key) + strings.Repeat("#", MaxPEMBytes), now, FieldPrivateKey, fmt.Sprintf("more than %d", MaxPEMBytes), true},
		{"expired", string(cert), string(key), now.Add(48 * time.Hour), FieldCertificate, "expired on ", false},
		{"not yet valid", string(cert), string(key), now.Add(-2 * time.Hour), FieldCertificate, "is not valid before ", false},
		{"no clientAuth in its extended key usage", string(serverOnly), string(serverOnlyKey), now, FieldCertificate, "its extended key usage lacks clientAuth", false},
		{"key not PEM", string(cert), "hunter2", now, FieldPrivateKey, "is not PEM", true},
		{"a certificate in the key field", string(cert), string(cert), now, FieldPrivateKey, `holds a "CERTIFICATE" block`, false},
		{"two keys", string(cert), string(key) + string(otherKey), now, FieldPrivateKey, "holds more than one private key", true},
		{"key of another certificate", string(cert), string(otherKey), now, FieldPrivateKey, "does not match the certificate in certificatePem", true},
		{"encrypted PKCS #8 key", string(cert), encPKCS8, now, FieldPrivateKey, "is encrypted", false},
		{"encrypted legacy key", string(cert), encLegacy, now, FieldPrivateKey, "is encrypted", true},
		{"unreadable key", string(cert), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", now, FieldPrivateKey, `cannot be read as a PRIVATE KEY`, false},
	} {
		_, err := CheckClientCert(tc.cert, tc.key, tc.at)
		var ce *CertError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%s: %v; want %s: …%s…", tc.name, err, tc.field, tc.reason)
			continue
		}
		if tc.keyMustNotLeakIn {
			secret := tc.key // a short non-PEM key whole, else a stretch of its base64
			if b, _ := pem.Decode([]byte(tc.key)); b != nil {
				secret = string(pem.EncodeToMemory(&pem.Block{Type: "K", Bytes: b.Bytes}))[20:60]
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error quotes the key: %v", tc.name, err)
			}
		}
	}
	for name, kp := range map[string][2][]byte{"clientAuth": {cert, key}, "any extended key usage": {anyUsage, anyUsageKey}} {
		c, err := CheckClientCert(string(kp[0]), string(kp[1]), now)
		if err != nil || c.Leaf == nil || len(c.Certificate) != 1 || c.PrivateKey == nil {
			t.Errorf("%s: %+v, %v; want the certificate and its key", name, c.Leaf, err)
		}
	}
}

// The key forms a tenant may paste are read: PKCS #8 (RSA, ECDSA, Ed25519), PKCS #1 and SEC 1,
// the last with its EC PARAMETERS block before it as openssl writes it.
func TestCheckClientCertKeyForms(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	pkcs8 := func(k any) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return enc("PRIVATE KEY", der)
	}
	for name, tc := range map[string]struct {
		signer any
		pub    any
		key    string
	}{
		"PKCS #1 RSA":     {rsaKey, &rsaKey.PublicKey, enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))},
		"PKCS #8 RSA":     {rsaKey, &rsaKey.PublicKey, pkcs8(rsaKey)},
		"SEC 1 EC":        {ecKey, &ecKey.PublicKey, enc("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}) + enc("EC PRIVATE KEY", sec1)},
		"PKCS #8 Ed25519": {edKey, edKey.Public(), pkcs8(edKey)},
	} {
		cert := selfSigned(t, tc.pub, tc.signer)
		if _, err := CheckClientCert(cert, tc.key, time.Now()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// selfSigned is a client certificate for pub signed by signer (its own key).
func selfSigned(t *testing.T, pub, signer any) string {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: newSerial(), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

var serials atomic.Int64

func newSerial() *big.Int { return big.NewInt(serials.Add(1)) }

// keyPEM is a PKCS #8 private key, PEM.
func keyPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// The cache builds an Identity once per Key: the same registration is the same configuration,
// a changed CA or certificate (a new Key) a new one; the agent's CA is trusted beside base; and
// the cache stays within its bound.
func TestCache(t *testing.T) {
	t.Parallel()
	ca, other := testca.New(t), testca.New(t)
	cert, key := ca.ClientCert(t, "client", testca.ClientOptions{})
	cert2, key2 := ca.ClientCert(t, "client 2", testca.ClientOptions{})
	c := NewCache(x509.NewCertPool(), nil)
	var opened atomic.Int64
	get := func(caPEM string, sealed []byte, src Source) *Identity {
		t.Helper()
		id, err := c.Get(KeyOf("agent-1", caPEM, sealed), "agent-1", func() (Source, error) {
			opened.Add(1)
			return src, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := get(string(ca.PEM), []byte("sealed-1"), Source{CA: string(ca.PEM), Cert: string(cert), Key: string(key)})
	if again := get(string(ca.PEM), []byte("sealed-1"), Source{}); again != first || opened.Load() != 1 {
		t.Errorf("same registration: a new Identity (%v) or opened %d times; want the cached one, opened once", again != first, opened.Load())
	}
	if first.Owner != "agent-1" || len(first.Config.Certificates) != 1 || first.Config.InsecureSkipVerify {
		t.Errorf("Identity: owner %q, %d certificates, InsecureSkipVerify %v", first.Owner, len(first.Config.Certificates), first.Config.InsecureSkipVerify)
	}
	newCert := get(string(ca.PEM), []byte("sealed-2"), Source{CA: string(ca.PEM), Cert: string(cert2), Key: string(key2)})
	newCA := get(string(other.PEM), []byte("sealed-1"), Source{CA: string(other.PEM), Cert: string(cert), Key: string(key)})
	if newCert == first || newCA == first || newCert.Key == first.Key || newCA.Key == first.Key || opened.Load() != 3 {
		t.Errorf("a changed certificate or CA kept the Identity (opened %d times, want 3)", opened.Load())
	}
	if newCert.Config.Certificates[0].Leaf.Subject.CommonName != "client 2" {
		t.Errorf("the changed certificate's Identity presents %q", newCert.Config.Certificates[0].Leaf.Subject.CommonName)
	}
	// The agent's CA verifies a server certificate it signed; another CA's Identity does not.
	server := ca.ServerTLS(t).Certificates[0].Certificate[0]
	leaf, err := x509.ParseCertificate(server)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: first.Config.RootCAs}); err != nil {
		t.Errorf("the agent's CA does not verify its server: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: newCA.Config.RootCAs}); err == nil {
		t.Error("another CA's Identity verifies the server")
	}

	// Errors of open and of the material are returned, and nothing is cached for them.
	boom := errors.New("boom")
	if _, err := c.Get("k-err", "agent-2", func() (Source, error) { return Source{}, boom }); !errors.Is(err, boom) {
		t.Errorf("open's error: %v", err)
	}
	if _, err := c.Get("k-bad", "agent-2", func() (Source, error) { return Source{CA: "nope"}, nil }); err == nil || !strings.HasPrefix(err.Error(), "tls.caPem is not PEM") {
		t.Errorf("a bad CA: %v; want tls.caPem named", err)
	}
	if _, err := c.Get("k-bad", "agent-2", func() (Source, error) { return Source{Cert: string(cert), Key: string(key2)}, nil }); !errors.As(err, new(*CertError)) {
		t.Errorf("a mismatched key: %v; want a *CertError", err)
	}

	// Bounded: past maxCached Identities, older ones are dropped.
	for i := range maxCached + 10 {
		if _, err := c.Get(fmt.Sprint("bulk-", i), "agent-3", func() (Source, error) { return Source{}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n > maxCached {
		t.Errorf("%d Identities cached, more than %d", n, maxCached)
	}
}

// KeyOf tells registrations apart by each part, and parts cannot run into one another.
func TestKeyOf(t *testing.T) {
	t.Parallel()
	base := KeyOf("a", "ca", []byte("s"))
	for name, k := range map[string]string{
		"owner":   KeyOf("b", "ca", []byte("s")),
		"CA":      KeyOf("a", "cb", []byte("s")),
		"sealed":  KeyOf("a", "ca", []byte("t")),
		"shifted": KeyOf("ac", "a", []byte("s")),
	} {
		if k == base {
			t.Errorf("a different %s gives the same Key", name)
		}
	}
	if KeyOf("a", "ca", []byte("s")) != base {
		t.Error("KeyOf is not stable")
	}
}
