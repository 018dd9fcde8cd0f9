package console

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

const (
	adminToken = "admin-token-for-tests-0123456789"
	theAPIKey  = "sk-live-DO-NOT-LEAK-7f3a9c"
)

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func card(name, outputMode string) string {
	return fmt.Sprintf(`{
  "name": %q, "description": "Answers questions.", "protocolVersion": "0.2.5",
  "url": "https://agent.example.com/a2a", "version": "1.0.0",
  "capabilities": {"streaming": true},
  "security": ["apiKey"],
  "defaultInputModes": ["text/plain"], "defaultOutputModes": [%q],
  "skills": [{"id": "ask", "name": "Ask", "description": "Answers.", "tags": ["demo"]}]
}`, name, outputMode)
}

type env struct {
	t     *testing.T
	api   *httptest.Server
	cards *fixtureagent.CardHost
	logs  *syncBuffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cards := fixtureagent.NewCardHost(t, true)
	roots := x509.NewCertPool()
	roots.AddCert(cards.Certificate())
	client := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		netguard.ClientOptions{MaxRedirects: 3, RootCAs: roots})
	key := bytes.Repeat([]byte{7}, secret.KeySize)
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv := New(Config{
		Store:      store.New(testDB.Pool),
		Cards:      cardfetch.New(cardfetch.Options{Client: client}),
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	return &env{t: t, api: api, cards: cards, logs: logs}
}

type response struct {
	status int
	ctype  string
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// do sends one request. Every response body is checked for the API key right here.
func (e *env) do(method, path, token string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.api.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if bytes.Contains(b, []byte(theAPIKey)) {
		e.t.Fatalf("%s %s: response body contains the API key", method, path)
	}
	return response{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
}

func (e *env) expect(r response, status int) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status = %d, want %d; body: %s", r.status, status, r.body)
	}
	if status >= 400 && r.ctype != "application/problem+json" {
		e.t.Fatalf("error content type = %q, want application/problem+json", r.ctype)
	}
}

func (e *env) newTenant(name string) (id, token string) {
	e.t.Helper()
	r := e.do("POST", "/v1/tenants", adminToken, map[string]string{"name": name})
	e.expect(r, http.StatusCreated)
	m := r.json(e.t)
	return m["id"].(string), m["token"].(string)
}

func problemCodes(t *testing.T, r response) map[string]string {
	t.Helper()
	var doc struct {
		Problems []struct{ Path, Code, Severity string }
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range doc.Problems {
		if p.Severity == "error" {
			out[p.Path] = p.Code
		}
	}
	return out
}

func TestAgentLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	// Tenants and tokens are the operator's.
	e.expect(e.do("POST", "/v1/tenants", "", map[string]string{"name": "x"}), http.StatusUnauthorized)
	e.expect(e.do("POST", "/v1/tenants", "wrong-token", map[string]string{"name": "x"}), http.StatusUnauthorized)
	tenantA, tokenA := e.newTenant("Tenant A")
	_, tokenB := e.newTenant("Tenant B")
	e.expect(e.do("POST", "/v1/tenants", tokenA, map[string]string{"name": "x"}), http.StatusUnauthorized)
	r := e.do("POST", "/v1/tenants/"+tenantA+"/tokens", adminToken, nil)
	e.expect(r, http.StatusCreated)
	tokenA2 := r.json(t)["token"].(string)
	e.expect(e.do("GET", "/v1/agents", tokenA2, nil), http.StatusOK)
	e.expect(e.do("POST", "/v1/tenants/00000000-0000-0000-0000-000000000000/tokens", adminToken, nil), http.StatusNotFound)

	goodURL := e.cards.Set("/good.json", card("Helper", "text/plain"))
	badURL := e.cards.Set("/bad.json", card("Painter", "image/png"))

	// Validate is a dry run that reports every problem.
	r = e.do("POST", "/v1/agents/validate", tokenA, map[string]string{"cardUrl": badURL})
	e.expect(r, http.StatusOK)
	if m := r.json(t); m["valid"] != false || m["resolvedCardUrl"] != badURL {
		t.Fatalf("validate bad card: %s", r.body)
	}
	if diff := cmp.Diff(map[string]string{"defaultOutputModes": "unsupported_mode"}, problemCodes(t, r)); diff != "" {
		t.Fatalf("validate problems (-want +got):\n%s", diff)
	}

	// Register: invalid card, unreachable URL, blocked address, valid, duplicate.
	r = e.do("POST", "/v1/agents", tokenA, map[string]string{"cardUrl": badURL})
	e.expect(r, http.StatusUnprocessableEntity)
	if got := problemCodes(t, r); got["defaultOutputModes"] != "unsupported_mode" {
		t.Fatalf("422 problems = %v", got)
	}
	closed := closedPort(t)
	r = e.do("POST", "/v1/agents", tokenA, map[string]string{"cardUrl": "https://" + closed + "/card.json"})
	e.expect(r, http.StatusBadGateway)
	if m := r.json(t); m["reason"] != "refused" || m["code"] != "card_unreachable" {
		t.Fatalf("unreachable: %s", r.body)
	}
	r = e.do("POST", "/v1/agents", tokenA, map[string]string{"cardUrl": "https://169.254.169.254/latest/meta-data"})
	e.expect(r, http.StatusUnprocessableEntity)
	if m := r.json(t); m["reason"] != "blocked_address" || m["code"] != "card_url_unusable" {
		t.Fatalf("metadata address: %s", r.body)
	}

	r = e.do("POST", "/v1/agents", tokenA, map[string]string{"cardUrl": goodURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	agent := r.json(t)
	id := agent["id"].(string)
	for field, want := range map[string]any{"name": "Helper", "streaming": true, "apiKeyRequired": true,
		"apiKeySet": true, "enabled": true, "revision": float64(1), "endpointUrl": "https://agent.example.com/a2a", "cardUrl": goodURL} {
		if agent[field] != want {
			t.Errorf("agent.%s = %v, want %v", field, agent[field], want)
		}
	}
	if _, ok := agent["apiKey"]; ok {
		t.Error("agent resource has an apiKey field")
	}
	e.expect(e.do("POST", "/v1/agents", tokenA, map[string]string{"cardUrl": goodURL}), http.StatusConflict)
	// The same URL spelled differently is the same registration.
	e.expect(e.do("POST", "/v1/agents", tokenA, map[string]string{"cardUrl": " HTTPS" + strings.TrimPrefix(goodURL, "https") + "#top "}), http.StatusConflict)
	// Another tenant may register the same card.
	r = e.do("POST", "/v1/agents", tokenB, map[string]string{"cardUrl": goodURL})
	e.expect(r, http.StatusCreated)
	if r.json(t)["apiKeySet"] != false {
		t.Error("tenant B's agent has a key it never set")
	}

	// List and get.
	r = e.do("GET", "/v1/agents", tokenA, nil)
	e.expect(r, http.StatusOK)
	if agents := r.json(t)["agents"].([]any); len(agents) != 1 || agents[0].(map[string]any)["id"] != id {
		t.Fatalf("list = %s", r.body)
	}
	e.expect(e.do("GET", "/v1/agents/"+id, tokenA, nil), http.StatusOK)

	// Tenant B sees nothing of tenant A's agent, on every route.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/agents/" + id, nil},
		{"PATCH", "/v1/agents/" + id, map[string]any{"enabled": false}},
		{"PATCH", "/v1/agents/" + id, map[string]any{"apiKey": "stolen"}},
		{"POST", "/v1/agents/" + id + "/refresh", nil},
		{"POST", "/v1/agents/" + id + "/test", map[string]any{"text": "hi"}},
		{"DELETE", "/v1/agents/" + id, nil},
		{"GET", "/v1/agents/not-a-uuid", nil},
	} {
		e.expect(e.do(c.method, c.path, tokenB, c.body), http.StatusNotFound)
	}
	e.expect(e.do("GET", "/v1/agents/"+id, tokenA, nil), http.StatusOK)

	// Patch: disable, rotate the key, remove it.
	r = e.do("PATCH", "/v1/agents/"+id, tokenA, map[string]any{"enabled": false})
	e.expect(r, http.StatusOK)
	if r.json(t)["enabled"] != false {
		t.Fatal("agent still enabled")
	}
	e.expect(e.do("PATCH", "/v1/agents/"+id, tokenA, map[string]any{"apiKey": theAPIKey + "-v2"}), http.StatusOK)
	e.expect(e.do("PATCH", "/v1/agents/"+id, tokenA, map[string]any{}), http.StatusBadRequest)
	e.expect(e.do("PATCH", "/v1/agents/"+id, tokenA, map[string]any{"apiKey": 42}), http.StatusBadRequest)

	// Refresh: an invalid card leaves the live revision alone; a valid one becomes revision 2.
	e.cards.Set("/good.json", card("Helper", "image/png"))
	r = e.do("POST", "/v1/agents/"+id+"/refresh", tokenA, nil)
	e.expect(r, http.StatusUnprocessableEntity)
	r = e.do("GET", "/v1/agents/"+id, tokenA, nil)
	if m := r.json(t); m["revision"] != float64(1) || m["name"] != "Helper" {
		t.Fatalf("after failed refresh: %s", r.body)
	}
	e.cards.Set("/good.json", card("Helper v2", "text/plain"))
	r = e.do("POST", "/v1/agents/"+id+"/refresh", tokenA, nil)
	e.expect(r, http.StatusOK)
	if m := r.json(t); m["revision"] != float64(2) || m["name"] != "Helper v2" || m["apiKeySet"] != true {
		t.Fatalf("after refresh: %s", r.body)
	}

	// The key is nowhere in plaintext: not in any row, not in the logs.
	var rows string
	err := testDB.Pool.QueryRow(t.Context(), `
		SELECT coalesce(string_agg(t::text, E'\n'), '') FROM (
			SELECT row_to_json(a)::text AS t FROM agents a
			UNION ALL SELECT row_to_json(r)::text FROM agent_revisions r) x`).Scan(&rows)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rows, id) {
		t.Fatal("row dump does not contain the agent; the check below would prove nothing")
	}
	if strings.Contains(rows, theAPIKey) || strings.Contains(rows, fmt.Sprintf("%x", theAPIKey)) {
		t.Fatal("the API key is stored in plaintext")
	}
	if strings.Contains(e.logs.String(), theAPIKey) || strings.Contains(e.logs.String(), tokenA) {
		t.Fatal("the logs contain the API key or a token")
	}
	if !strings.Contains(e.logs.String(), "/v1/agents") {
		t.Fatal("no access log written; the log check above would prove nothing")
	}

	// Delete.
	e.expect(e.do("DELETE", "/v1/agents/"+id, tokenA, nil), http.StatusNoContent)
	e.expect(e.do("GET", "/v1/agents/"+id, tokenA, nil), http.StatusNotFound)
	e.expect(e.do("DELETE", "/v1/agents/"+id, tokenA, nil), http.StatusNotFound)
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("Bad requests")
	for _, c := range []struct {
		name   string
		body   any
		status int
	}{
		{"unknown_field", `{"cardUrl":"https://a.example","color":"red"}`, http.StatusBadRequest},
		{"not_json", `cardUrl=https://a.example`, http.StatusBadRequest},
		{"two_objects", `{"cardUrl":"https://a.example"}{}`, http.StatusBadRequest},
		{"missing_card_url", `{}`, http.StatusBadRequest},
		{"body_over_64KiB", `{"cardUrl":"` + strings.Repeat("a", 70<<10) + `"}`, http.StatusRequestEntityTooLarge},
		{"http_card_url", `{"cardUrl":"http://example.com/card.json"}`, http.StatusBadRequest},
		{"no_scheme", `{"cardUrl":"not a url"}`, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.expect(e.do("POST", "/v1/agents", token, c.body), c.status)
		})
	}
	e.expect(e.do("GET", "/v1/nope", token, nil), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/agents", "", nil), http.StatusUnauthorized)
	e.expect(e.do("GET", "/v1/agents", adminToken, nil), http.StatusUnauthorized)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(e.do("GET", "/healthz", "", nil), http.StatusOK)
	e.expect(e.do("GET", "/readyz", "", nil), http.StatusOK)
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// v1Card is an A2A 1.0 card offering JSON-RPC in 1.0 (with a tenant) and 0.3 at one URL, as a
// dual-version SDK serves it.
const v1Card = `{
  "name": "Dual", "description": "Answers questions.", "version": "2.0.0",
  "supportedInterfaces": [
    {"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "acme"},
    {"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3", "tenant": ""}
  ],
  "capabilities": {"streaming": true},
  "securitySchemes": {"apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-KEY"}}},
  "securityRequirements": [{"schemes": {"apiKey": {"list": []}}}],
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "ask", "name": "Ask", "description": "Answers.", "tags": ["demo"], "inputModes": [], "outputModes": []}]
}`

// TestAgentInterfaces: the preview and the agent resource show the interface and A2A version the
// connector calls, the tenant, and the fallback; a card mounted under a path prefix is found.
func TestAgentInterfaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tenantID, token := e.newTenant("Interfaces")
	cardAt := e.cards.Set("/agents/dual/.well-known/agent-card.json", v1Card)
	pasted := e.cards.URL + "/agents/dual"
	wantIface := map[string]any{
		"protocolVersion": "1.0", "endpointUrl": "https://agent.example.com/a2a", "endpointTenant": "acme", "endpointBinding": "JSONRPC",
		"fallback": map[string]any{"url": "https://agent.example.com/a2a", "protocolVersion": "0.3", "binding": "JSONRPC"},
	}
	pick := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k := range wantIface {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}

	r := e.do("POST", "/v1/agents/validate", token, map[string]string{"cardUrl": pasted})
	e.expect(r, http.StatusOK)
	m := r.json(t)
	if m["valid"] != true || m["resolvedCardUrl"] != cardAt {
		t.Fatalf("validate: %s", r.body)
	}
	if diff := cmp.Diff(wantIface, pick(m)); diff != "" {
		t.Errorf("preview interface (-want +got):\n%s", diff)
	}

	r = e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": pasted})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	r = e.do("GET", "/v1/agents/"+id, token, nil)
	e.expect(r, http.StatusOK)
	if diff := cmp.Diff(wantIface, pick(r.json(t))); diff != "" {
		t.Errorf("agent interface (-want +got):\n%s", diff)
	}

	// A 0.x card: no tenant, no fallback, and the members are absent rather than empty.
	r = e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": e.cards.Set("/v02.json", card("Old", "text/plain"))})
	e.expect(r, http.StatusCreated)
	want := map[string]any{"protocolVersion": "0.2.5", "endpointUrl": "https://agent.example.com/a2a", "endpointBinding": "JSONRPC"}
	if diff := cmp.Diff(want, pick(r.json(t))); diff != "" {
		t.Errorf("0.x agent interface (-want +got):\n%s", diff)
	}

	// A card offering only gRPC at a bare host:port (no scheme says whether it is TLS), served
	// over https: the interface is called with TLS, and the tenant is told so at its url.
	grpcOnly := strings.Replace(strings.Replace(v1Card, `"protocolBinding": "JSONRPC"`, `"protocolBinding": "GRPC"`, -1),
		`"url": "https://agent.example.com/a2a"`, `"url": "agent.example.com:50051"`, -1)
	r = e.do("POST", "/v1/agents/validate", token, map[string]string{"cardUrl": e.cards.Set("/grpc.json", grpcOnly)})
	e.expect(r, http.StatusOK)
	if m := r.json(t); m["valid"] != true || m["endpointUrl"] != "https://agent.example.com:50051" || m["endpointBinding"] != "GRPC" {
		t.Errorf("grpc-only preview: %s", r.body)
	}
	if codes := problemCodes(t, r); len(codes) != 0 || !bytes.Contains(r.body, []byte(`"path":"supportedInterfaces[0].url","code":"recommended"`)) {
		t.Errorf("grpc-only: errors %v, want none and a warning at the url: %s", codes, r.body)
	}

	// Once turns moved to the fallback (the preferred interface refused), the agent resource
	// names the interface turns use, and the one that refused.
	if err := store.New(testDB.Pool).MarkOnFallback(t.Context(), tenantID, id, 1); err != nil {
		t.Fatal(err)
	}
	r = e.do("GET", "/v1/agents/"+id, token, nil)
	e.expect(r, http.StatusOK)
	m = r.json(t)
	wantOn := map[string]any{"protocolVersion": "0.3", "endpointUrl": "https://agent.example.com/a2a", "endpointBinding": "JSONRPC",
		"fallback": wantIface["fallback"]}
	if diff := cmp.Diff(wantOn, pick(m)); diff != "" || m["onFallback"] != true {
		t.Errorf("agent on its fallback: onFallback %v (-want +got):\n%s", m["onFallback"], diff)
	}
	if p, _ := m["preferred"].(map[string]any); p["protocolVersion"] != "1.0" || p["tenant"] != "acme" {
		t.Errorf("preferred = %v, want the 1.0 interface that refused", m["preferred"])
	}
}
