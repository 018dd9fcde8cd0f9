package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// An agent behind mutual TLS on a private CA (an a2a-go v2 agent whose card and gRPC interface
// demand a client certificate of that CA, its card declaring mtlsSecurityScheme), registered
// through the console with credentials.mtls and tls.caPem and no A2AC_AGENT_CA_FILE: what
// cannot work is a 400 naming the field, or a 502 saying what the handshake refused; the
// registration is credentialKind mtls, shows its CA bundle and never the key; a test turn and
// "check my agent" converse; without the CA bundle the check says in words what to fix.
func TestRegisterAnAgentBehindMutualTLS(t *testing.T) {
	t.Parallel()
	ca, other := testca.New(t), testca.New(t)
	peer := sdkagent.New(t, sdkagent.Options{TLS: ca.MutualServerTLS(t), MTLS: true, Streaming: true, GRPCOnly: true})
	certPEM, keyPEM := ca.ClientCert(t, "connector", testca.ClientOptions{})
	_, otherKey := ca.ClientCert(t, "other", testca.ClientOptions{})
	expired, expiredKey := ca.ClientCert(t, "old", testca.ClientOptions{NotAfter: time.Now().Add(-time.Hour)})
	serverOnly, serverOnlyKey := ca.ClientCert(t, "server", testca.ClientOptions{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	leafOnly, _ := ca.ClientCert(t, "leaf", testca.ClientOptions{})

	s := &consoleStack{admin: "admin-token-mtls-0123456789abcdef", client: &http.Client{Timeout: time.Minute}}
	s.base = "http://" + openConsole(t, map[string]string{
		"DATABASE_URL":       testDB.URL,
		"A2AC_SECRET_KEY":    base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{6}, 32)),
		"A2AC_ADMIN_TOKEN":   s.admin,
		"A2AC_LOG_LEVEL":     "error",
		"A2AC_ALLOWED_CIDRS": "127.0.0.0/8",
	}, io.Discard).Addr()
	_, token := s.newTenant(t, "mtls")
	mtls := func(cert, key []byte) map[string]any {
		return map[string]any{"mtls": map[string]any{"certificatePem": string(cert), "privateKeyPem": string(key)}}
	}
	caPem := map[string]any{"caPem": string(ca.PEM)}

	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"key_of_another_certificate", map[string]any{"credentials": mtls(certPEM, otherKey), "tls": caPem}, "credentials.mtls.privateKeyPem"},
		{"expired_certificate", map[string]any{"credentials": mtls(expired, expiredKey), "tls": caPem}, "credentials.mtls.certificatePem"},
		{"certificate_not_for_clients", map[string]any{"credentials": mtls(serverOnly, serverOnlyKey), "tls": caPem}, "credentials.mtls.certificatePem"},
		{"certificate_not_pem", map[string]any{"credentials": mtls([]byte("MIIB..."), keyPEM), "tls": caPem}, "credentials.mtls.certificatePem"},
		{"key_not_pem", map[string]any{"credentials": mtls(certPEM, []byte("secret")), "tls": caPem}, "credentials.mtls.privateKeyPem"},
		{"ca_not_pem", map[string]any{"credentials": mtls(certPEM, keyPEM), "tls": map[string]any{"caPem": "not a bundle"}}, "tls.caPem"},
		{"ca_bundle_of_a_leaf", map[string]any{"credentials": mtls(certPEM, keyPEM), "tls": map[string]any{"caPem": string(leafOnly)}}, "tls.caPem"},
		{"ca_bundle_with_a_key", map[string]any{"credentials": mtls(certPEM, keyPEM), "tls": map[string]any{"caPem": string(ca.PEM) + string(keyPEM)}}, "tls.caPem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["cardUrl"] = peer.CardURL
			m := s.call(t, "POST", "/v1/agents", token, tc.body, http.StatusBadRequest)
			if m["field"] != tc.field {
				t.Errorf("answer %v, want a 400 naming %s", m, tc.field)
			}
			if b, _ := json.Marshal(m); strings.Contains(string(b), string(keyPEM[40:80])) || strings.Contains(string(b), string(otherKey[40:80])) {
				t.Errorf("the answer quotes the key: %s", b)
			}
		})
	}
	// The card itself is behind mutual TLS: without a certificate, or without the CA, no card.
	for name, body := range map[string]map[string]any{
		"no_certificate": {"cardUrl": peer.CardURL, "tls": caPem},
		"no_ca_bundle":   {"cardUrl": peer.CardURL, "credentials": mtls(certPEM, keyPEM)},
	} {
		m := s.call(t, "POST", "/v1/agents", token, body, http.StatusBadGateway)
		if m["code"] != "card_unreachable" || m["reason"] != "tls" {
			t.Errorf("%s: answer %v, want card_unreachable for tls", name, m)
		}
	}

	// The preview fetches the card as registering would: over the CA bundle and with the
	// client certificate it is given, checked alike, stored nowhere.
	if m := s.call(t, "POST", "/v1/agents/validate", token, map[string]any{"cardUrl": peer.CardURL, "tls": caPem}, http.StatusBadGateway); m["code"] != "card_unreachable" || m["reason"] != "tls" {
		t.Errorf("preview without the certificate: %v, want card_unreachable for tls", m)
	}
	for field, body := range map[string]map[string]any{
		"credentials.mtls.privateKeyPem": {"cardUrl": peer.CardURL, "credentials": mtls(certPEM, otherKey), "tls": caPem},
		"tls.caPem":                      {"cardUrl": peer.CardURL, "credentials": mtls(certPEM, keyPEM), "tls": map[string]any{"caPem": string(leafOnly)}},
		"credentials.mtls":               {"cardUrl": peer.CardURL, "credentials": map[string]any{}},
	} {
		if m := s.call(t, "POST", "/v1/agents/validate", token, body, http.StatusBadRequest); m["field"] != field {
			t.Errorf("preview: answer %v, want a 400 naming %s", m, field)
		}
	}
	s.call(t, "POST", "/v1/agents/validate", token, map[string]any{"cardUrl": peer.CardURL, "credentials": map[string]any{"apiKey": "k"}}, http.StatusBadRequest)
	preview := s.call(t, "POST", "/v1/agents/validate", token, map[string]any{"cardUrl": peer.CardURL, "credentials": mtls(certPEM, keyPEM), "tls": caPem}, http.StatusOK)
	if preview["valid"] != true || preview["credentialKind"] != "mtls" || preview["endpointBinding"] != "GRPC" {
		t.Errorf("preview over the certificate and the CA: %v", preview)
	}
	if b, _ := json.Marshal(preview); strings.Contains(string(b), string(keyPEM[40:80])) {
		t.Error("the preview quotes the key")
	}

	a := s.call(t, "POST", "/v1/agents", token, map[string]any{"cardUrl": peer.CardURL, "credentials": mtls(certPEM, keyPEM), "tls": caPem}, http.StatusCreated)
	id, _ := a["id"].(string)
	if a["credentialKind"] != "mtls" || a["credentialsSet"] != true || a["endpointBinding"] != "GRPC" {
		t.Errorf("registered %v", a)
	}
	got := s.call(t, "GET", "/v1/agents/"+id, token, nil, http.StatusOK)
	if tlsOut, _ := got["tls"].(map[string]any); tlsOut["caPem"] != string(ca.PEM) {
		t.Errorf("GET tls = %v, want the CA bundle as sent", got["tls"])
	}
	if b, _ := json.Marshal(got); strings.Contains(string(b), "PRIVATE KEY") || strings.Contains(string(b), string(keyPEM[40:80])) {
		t.Error("GET shows the private key")
	}
	if res := s.call(t, "POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "weather please"}, http.StatusOK); res["outcome"] != "COMPLETED" {
		t.Errorf("test turn: %v", res)
	}
	if check := checkOf(t, s.call(t, "POST", "/v1/agents/"+id+"/check", token, map[string]any{}, http.StatusOK), "endpoint"); check["status"] != "pass" {
		t.Errorf("check my agent, endpoint: %v", check)
	}

	// A CA bundle of another CA: the check says the agent's certificate does not chain to it.
	s.call(t, "PATCH", "/v1/agents/"+id, token, map[string]any{"tls": map[string]any{"caPem": string(other.PEM)}}, http.StatusOK)
	check := checkOf(t, s.call(t, "POST", "/v1/agents/"+id+"/check", token, map[string]any{}, http.StatusOK), "endpoint")
	if check["status"] != "fail" || !strings.Contains(check["message"].(string), "certificate signed by unknown authority") ||
		!strings.Contains(check["fix"].(string), "does not chain to the CA you gave") {
		t.Errorf("check with another CA: %v", check)
	}
	// A certificate of another CA: the agent refused it, in words.
	strangerCert, strangerKey := other.ClientCert(t, "stranger", testca.ClientOptions{})
	s.call(t, "PATCH", "/v1/agents/"+id, token, map[string]any{"tls": caPem, "credentials": mtls(strangerCert, strangerKey)}, http.StatusOK)
	check = checkOf(t, s.call(t, "POST", "/v1/agents/"+id+"/check", token, map[string]any{}, http.StatusOK), "endpoint")
	// "the agent refused our client certificate (tls: bad certificate)", or, when TLS 1.3's alert
	// was lost as our first write crossed the agent's close, "… it most likely refused our client
	// certificate": either way the tenant reads what to look at.
	if check["status"] != "fail" || !strings.Contains(check["message"].(string), "our client certificate") {
		t.Errorf("check with another CA's certificate: %v", check)
	}
	s.call(t, "PATCH", "/v1/agents/"+id, token, map[string]any{"tls": map[string]any{"caPem": "-----BEGIN CERTIFICATE-----\nno\n-----END CERTIFICATE-----\n"}}, http.StatusBadRequest)
}

// checkOf is the named check of a "check my agent" answer.
func checkOf(t *testing.T, report map[string]any, name string) map[string]any {
	t.Helper()
	checks, _ := report["checks"].([]any)
	for _, c := range checks {
		if m, _ := c.(map[string]any); m["check"] == name {
			return m
		}
	}
	t.Fatalf("no check %q in %v", name, report)
	return nil
}
