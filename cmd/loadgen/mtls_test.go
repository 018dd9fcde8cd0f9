package main

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The mTLS row's agent takes a call only with a client certificate of the run's CA: the
// handshake fails without one and with one of another CA, and the API key over TLS row's port
// takes the key without a certificate. The direct side's TLS, as the rows use it, gets through.
func TestMTLSRowDemandsTheClientCertificate(t *testing.T) {
	t.Parallel()
	p, err := newPKI("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := newPKI("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	mutual, plain, ok, err := agentTLS(func(k string) string { return p.env()[k] })
	if err != nil || !ok {
		t.Fatalf("agentTLS: %v, %v", ok, err)
	}
	f := newFaces(newStubAgent(2, 0), stubSecrets{apiKey: "k1"}, "")
	serve := func(cfg *tls.Config) string {
		srv := httptest.NewUnstartedServer(f)
		srv.TLS = cfg
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	mtlsAddr, tlsAddr := serve(mutual), serve(plain)
	call := func(cfg *tls.Config, url string, header http.Header) (int, error) {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"id=a chunks=1"}]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		if resp.StatusCode == http.StatusOK && !strings.Contains(b.String(), `"completed"`) {
			t.Errorf("%s: 200 without a completed task: %s", url, b.String())
		}
		return resp.StatusCode, nil
	}
	withCert, _ := p.clientTLS(true)
	noCert, _ := p.clientTLS(false)
	strangerCert, _ := other.clientTLS(true)
	strangerCert.RootCAs = withCert.RootCAs // trusts the agent, presents another CA's certificate
	if code, err := call(withCert, "https://"+mtlsAddr+"/mtls/", http.Header{}); err != nil || code != http.StatusOK {
		t.Errorf("mtls with the run's client certificate: %d, %v", code, err)
	}
	for name, cfg := range map[string]*tls.Config{"no certificate": noCert, "another CA's certificate": strangerCert} {
		// TLS 1.3: the refusal reaches the client as an alert or a closed connection.
		if code, err := call(cfg, "https://"+mtlsAddr+"/mtls/", http.Header{}); err == nil {
			t.Errorf("mtls with %s: answered %d, want a refused handshake", name, code)
		}
	}
	if code, err := call(noCert, "https://"+tlsAddr+"/apikey-tls/", http.Header{"X-Api-Key": {"k1"}}); err != nil || code != http.StatusOK {
		t.Errorf("apikey-tls with the key: %d, %v", code, err)
	}
	if code, err := call(noCert, "https://"+tlsAddr+"/apikey-tls/", http.Header{}); err != nil || code != http.StatusUnauthorized {
		t.Errorf("apikey-tls without the key: %d, %v; want 401", code, err)
	}
	// The mtls face on a port that asked for no certificate still refuses the call.
	if code, err := call(noCert, "https://"+tlsAddr+"/mtls/", http.Header{}); err != nil || code != http.StatusForbidden {
		t.Errorf("mtls face without a verified certificate: %d, %v; want 403", code, err)
	}
}
