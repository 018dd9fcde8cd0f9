package console

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// fakeClock is the rate limiter's clock, moved by the test only.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newCheckEnv is a console with a prober whose fetches and agent calls may reach loopback over
// plain HTTP, limited by limit, and a demo agent that requires theAPIKey.
func newCheckEnv(t *testing.T, limit CheckLimit) (*env, string) {
	t.Helper()
	demo := agent.New(agent.Options{APIKey: theAPIKey})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)

	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{8}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	cards := cardfetch.New(cardfetch.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3}), AllowInsecureHTTP: true})
	invOpts := invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{InlineHTTP1: true}), Secrets: box}
	inv := invoke.New(invOpts)
	t.Cleanup(func() { inv.Close(context.Background()) })
	logs := &syncBuffer{}
	srv := New(Config{
		Store:      store.New(testDB.Pool),
		Cards:      cards,
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Invoker:    inv,
		Prober:     probe.New(probe.Config{Cards: cards, Invoke: invOpts}),
		CheckLimit: limit,
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	return &env{t: t, api: api, logs: logs}, demoSrv.URL
}

// TestCheckMyAgent runs the check route against the real demo agent: every check passes, the
// answer has the documented shape, and another tenant's agent is 404.
func TestCheckMyAgent(t *testing.T) {
	t.Parallel()
	e, demoURL := newCheckEnv(t, CheckLimit{})
	_, token := e.newTenant("check")
	_, otherToken := e.newTenant("check other")

	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	r = e.do("POST", "/v1/agents/"+id+"/check", token, nil)
	e.expect(r, http.StatusOK)
	var got checkResponse
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.AgentID != id || got.Revision != 1 || got.ProtocolVersion != "0.2.5" || !strings.HasSuffix(got.AnsweredURL, "/stream") || got.Text == "" {
		t.Errorf("check answer = %s", r.body)
	}
	if diff := cmp.Diff(checkSummary{Pass: 8}, got.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s\n%s", diff, r.body)
	}
	var names []string
	for _, c := range got.Checks {
		names = append(names, c.Check)
	}
	want := []string{probe.CheckCard, probe.CheckRevision, probe.CheckEndpoint, probe.CheckVersion, probe.CheckStreaming,
		probe.CheckFirstEvent, probe.CheckTaskIDs, probe.CheckAPIKey}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}

	// Another tenant's agent, an unknown one and no token.
	e.expect(e.do("POST", "/v1/agents/"+id+"/check", otherToken, nil), http.StatusNotFound)
	e.expect(e.do("POST", "/v1/agents/00000000-0000-4000-8000-000000000000/check", token, nil), http.StatusNotFound)
	e.expect(e.do("POST", "/v1/agents/"+id+"/check", "", nil), http.StatusUnauthorized)
	e.expect(e.do("GET", "/v1/agents/"+id+"/check", token, nil), http.StatusMethodNotAllowed)

	if strings.Contains(e.logs.String(), theAPIKey) {
		t.Error("the logs hold the API key")
	}
}

// TestCheckRateLimit: a tenant gets Burst checks, then 429 with Retry-After until the clock has
// moved on; other tenants are not affected. The clock is the test's, so speed does not matter.
func TestCheckRateLimit(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)}
	e, demoURL := newCheckEnv(t, CheckLimit{Burst: 2, Every: time.Minute, Now: clock.now})
	_, token := e.newTenant("limited")
	_, otherToken := e.newTenant("not limited")
	register := func(token string) string {
		r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoURL, "apiKey": theAPIKey})
		e.expect(r, http.StatusCreated)
		return r.json(t)["id"].(string)
	}
	id, otherID := register(token), register(otherToken)
	check := func(token, id string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.api.URL+"/v1/agents/"+id+"/check", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			var p problemDoc
			if err := json.Unmarshal(body.Bytes(), &p); err != nil || p.Code != "rate_limited" || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("429 body = %s (%v)", body.Bytes(), err)
			}
		}
		return resp
	}

	for i := range 2 {
		if resp := check(token, id); resp.StatusCode != http.StatusOK {
			t.Fatalf("check %d = %d, want 200", i+1, resp.StatusCode)
		}
	}
	resp := check(token, id)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("third check = %d, Retry-After %q; want 429 and 60", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A refused check costs nothing: 30 seconds later the wait is 30 seconds.
	clock.add(30 * time.Second)
	if resp := check(token, id); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("check after 30s = %d, Retry-After %q; want 429 and 30", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := check(otherToken, otherID); resp.StatusCode != http.StatusOK {
		t.Fatalf("another tenant's check = %d, want 200", resp.StatusCode)
	}
	clock.add(30 * time.Second)
	if resp := check(token, id); resp.StatusCode != http.StatusOK {
		t.Fatalf("check after the wait = %d, want 200", resp.StatusCode)
	}
}

// TestCheckLimiterIsBounded: the limiter remembers at most Tenants tenants and forgets the ones
// whose bucket is full again first.
func TestCheckLimiterIsBounded(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)}
	l := newCheckLimiter(CheckLimit{Burst: 1, Every: time.Minute, Tenants: 2, Now: clock.now})
	if _, ok := l.allow("a"); !ok {
		t.Fatal("a refused")
	}
	clock.add(time.Minute) // a's bucket is full again
	if _, ok := l.allow("b"); !ok {
		t.Fatal("b refused")
	}
	if _, ok := l.allow("c"); !ok { // evicts a, whose bucket is full
		t.Fatal("c refused")
	}
	if len(l.tenants) != 2 {
		t.Fatalf("%d tenants remembered, want 2", len(l.tenants))
	}
	if _, ok := l.tenants["a"]; ok {
		t.Fatal("a, whose bucket was full, is still remembered")
	}
	if _, ok := l.allow("b"); ok {
		t.Fatal("b allowed twice within a minute")
	}
}

// TestCheckWithoutProber: a console built without a prober answers 501.
func TestCheckWithoutProber(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("no prober")
	cardURL := e.cards.Set("/check.json", card("Checked", "text/plain"))
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": cardURL})
	e.expect(r, http.StatusCreated)
	e.expect(e.do("POST", "/v1/agents/"+r.json(t)["id"].(string)+"/check", token, nil), http.StatusNotImplemented)
}

// TestOpenAPICheckSchemas keeps the documented check answer equal to the types written.
func TestOpenAPICheckSchemas(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for name, typ := range map[string]reflect.Type{
		"CheckReport":  reflect.TypeFor[checkResponse](),
		"CheckSummary": reflect.TypeFor[checkSummary](),
		"CheckResult":  reflect.TypeFor[probe.Result](),
	} {
		var documented, written []string
		for k := range doc.Components.Schemas[name].Properties {
			documented = append(documented, k)
		}
		for i := range typ.NumField() {
			n, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			written = append(written, n)
		}
		slices.Sort(documented)
		slices.Sort(written)
		if diff := cmp.Diff(written, documented); diff != "" {
			t.Errorf("%s members (-written +documented):\n%s", name, diff)
		}
	}
}
