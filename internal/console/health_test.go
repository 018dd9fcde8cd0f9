package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/health"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// healthEnv is a console with the health route, the demo agent (which requires theAPIKey), and
// the connector's session router feeding a health Recorder: turns run as in production, and
// Flush writes them where the route reads.
type healthEnv struct {
	*env
	demoURL  string
	router   *session.Router
	recorder *health.Recorder
}

func newHealthEnv(t *testing.T) *healthEnv {
	t.Helper()
	demo := agent.New(agent.Options{APIKey: theAPIKey})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{3}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	inv := invoke.New(invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{InlineHTTP1: true}), Secrets: box})
	t.Cleanup(func() { _ = inv.Close(context.Background()) })
	logs := &syncBuffer{}
	st := store.New(testDB.Pool)
	hs := health.NewSummaries(st)
	srv := New(Config{
		Store:      st,
		Cards:      cardfetch.New(cardfetch.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3}), AllowInsecureHTTP: true}),
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Invoker:    inv,
		Health:     hs,
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	rec := health.NewRecorder(st, health.RecorderOptions{})
	router := session.New(session.Config{Store: st, Invoker: inv, Health: rec})
	t.Cleanup(router.Wait)
	return &healthEnv{env: &env{t: t, api: api, logs: logs}, demoURL: demoSrv.URL, recorder: rec, router: router}
}

// finalSink keeps a turn's Final.
type finalSink struct{ final connector.TurnFinal }

func (s *finalSink) Started(*connector.Agent, bool, string) error { return nil }
func (s *finalSink) Event(connector.TurnEvent) error              { return nil }
func (s *finalSink) Final(f connector.TurnFinal) error            { s.final = f; return nil }

// turn runs one production turn (a fresh session each) and returns its outcome.
func (e *healthEnv) turn(tenantID, agentID, text string) connector.Outcome {
	e.t.Helper()
	var sink finalSink
	id := fmt.Sprint(time.Now().UnixNano())
	err := e.router.HandleTurn(e.t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s" + id, TurnID: "t" + id,
		AgentID: agentID, Text: text}, &sink)
	if err != nil {
		e.t.Fatalf("turn %q: %v", text, err)
	}
	return sink.final.Outcome
}

// turns runs the scenario both health tests show: two completed turns, a handback, and, with a
// wrong key, a failed one; then the recorder flushes.
func (e *healthEnv) turns(tenantID, token, agentID string) {
	e.t.Helper()
	for _, tc := range []struct {
		text string
		want connector.Outcome
	}{
		{"1与2相加是多少", connector.OutcomeCompleted},
		{"3与4相加是多少", connector.OutcomeCompleted},
		{"tell me a joke", connector.OutcomeHandback},
	} {
		if got := e.turn(tenantID, agentID, tc.text); got != tc.want {
			e.t.Fatalf("turn %q = %s, want %s", tc.text, got, tc.want)
		}
	}
	e.expect(e.do("PATCH", "/v1/agents/"+agentID, token, map[string]string{"apiKey": "wrong"}), http.StatusOK)
	if got := e.turn(tenantID, agentID, "5与6相加是多少"); got != connector.OutcomeFailed {
		e.t.Fatalf("turn with a wrong key = %s, want FAILED", got)
	}
	if err := e.recorder.Flush(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
}

func TestAgentHealth(t *testing.T) {
	t.Parallel()
	e := newHealthEnv(t)
	tenantID, token := e.newTenant("health")
	_, otherToken := e.newTenant("health other")
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": e.demoURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	// Before any turn: zeros, 60 empty minutes, no failures, no percentiles.
	r = e.do("GET", "/v1/agents/"+id+"/health", token, nil)
	e.expect(r, http.StatusOK)
	var empty healthJSON
	if err := json.Unmarshal(r.body, &empty); err != nil {
		t.Fatal(err)
	}
	if empty.Hour.Turns != 0 || len(empty.Minutes) != 60 || len(empty.Failures) != 0 || empty.Day.Duration.P50Ms != nil {
		t.Fatalf("health before any turn = %s", r.body)
	}
	// The interface the turns call, as the agent resource says it.
	agent := e.do("GET", "/v1/agents/"+id, token, nil).json(t)
	if empty.EndpointURL == "" || empty.EndpointURL != agent["endpointUrl"] || empty.EndpointBinding != "JSONRPC" || empty.ProtocolVersion != agent["protocolVersion"] {
		t.Errorf("health names %q %q %q, agent %v %v", empty.EndpointURL, empty.EndpointBinding, empty.ProtocolVersion, agent["endpointUrl"], agent["protocolVersion"])
	}

	e.turns(tenantID, token, id)
	r = e.do("GET", "/v1/agents/"+id+"/health", token, nil)
	e.expect(r, http.StatusOK)
	var got healthJSON
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"COMPLETED": 2, "INPUT_REQUIRED": 0, "HANDBACK": 1, "FAILED": 1, "CANCELED": 0, "ERROR": 0}
	if diff := cmp.Diff(want, got.Hour.Outcomes); diff != "" {
		t.Errorf("hour outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got.Day.Outcomes); diff != "" {
		t.Errorf("day outcomes (-want +got):\n%s", diff)
	}
	if got.Hour.Turns != 4 || got.Hour.Failures != 1 {
		t.Errorf("hour: %d turns, %d failures; want 4, 1", got.Hour.Turns, got.Hour.Failures)
	}
	if l := got.Hour.Duration; l.Count != 4 || l.P50Ms == nil || l.P95Ms == nil || *l.P50Ms > *l.P95Ms {
		t.Errorf("hour duration = %+v", l)
	}
	if l := got.Hour.TimeToFirstText; l.Count < 2 || l.P50Ms == nil {
		t.Errorf("hour time to first text = %+v, want the completed turns' samples", l)
	}
	var turns, failures int64
	for _, m := range got.Minutes {
		turns, failures = turns+m.Turns, failures+m.Failures
	}
	if turns != 4 || failures != 1 {
		t.Errorf("minutes sum to %d turns, %d failures; want 4, 1", turns, failures)
	}
	if len(got.Failures) != 1 || got.Failures[0].Code != "agent_unauthorized" || got.Failures[0].Outcome != "FAILED" ||
		got.Failures[0].Message == "" || time.Since(got.Failures[0].At) > time.Hour {
		t.Errorf("failures = %+v, want the unauthorized turn", got.Failures)
	}
	// Never the user's text.
	for _, text := range []string{"相加", "joke"} {
		if strings.Contains(string(r.body), text) {
			t.Errorf("the health body holds the user's text %q: %s", text, r.body)
		}
	}

	if len(got.Breakers) != 0 {
		t.Errorf("breakers = %+v, want none before any turn failed", got.Breakers)
	}
	// The deployment's open breaker is the headline, with each replica's copy under it; a
	// replica that decided alone (Postgres away) for an endpoint the deployment keeps nothing
	// for is listed under that endpoint's closed breaker.
	since := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	openBreaker(t, tenantID, id, "https://agent.example/a2a", since)
	pub := breaker.NewPublisher(store.NewCircuits(testDB.Pool, "connector/pod-1", nil), nil)
	pub.Publish(breaker.Change{TenantID: tenantID, AgentID: id, Endpoint: "https://agent.example/a2a", State: breaker.Open,
		Since: since, Cause: "timeout: the agent sent no event within 10s", RetryAt: since.Add(time.Minute)})
	alone := breaker.NewPublisher(store.NewCircuits(testDB.Pool, "connector/pod-2", nil), nil)
	alone.Publish(breaker.Change{TenantID: tenantID, AgentID: id, Endpoint: "https://agent.example/v1", State: breaker.Open,
		Since: since, Cause: "agent_unreachable: connection refused", RetryAt: since.Add(time.Minute)})
	for _, p := range []*breaker.Publisher{pub, alone} {
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	r = e.do("GET", "/v1/agents/"+id+"/health", token, nil)
	e.expect(r, http.StatusOK)
	var withBreaker healthJSON
	if err := json.Unmarshal(r.body, &withBreaker); err != nil {
		t.Fatal(err)
	}
	retryAt := since.Add(time.Minute)
	wantBreakers := []breakerJSON{
		{Endpoint: "https://agent.example/a2a", State: "open", Failures: 1, Since: since, Cause: "timeout: the agent sent no event within 10s",
			RetryAt: &retryAt, Replicas: []replicaBreakerJSON{{Replica: "connector/pod-1", State: "open", Since: since,
				Cause: "timeout: the agent sent no event within 10s", RetryAt: &retryAt}}},
		{Endpoint: "https://agent.example/v1", State: "closed", Since: since, Replicas: []replicaBreakerJSON{{Replica: "connector/pod-2",
			State: "open", Since: since, Cause: "agent_unreachable: connection refused", RetryAt: &retryAt}}},
	}
	ignoreUpdated := cmpopts.IgnoreFields(breakerJSON{}, "UpdatedAt")
	if diff := cmp.Diff(wantBreakers, withBreaker.Breakers, ignoreUpdated, cmpopts.IgnoreFields(replicaBreakerJSON{}, "UpdatedAt")); diff != "" {
		t.Errorf("breakers (-want +got):\n%s", diff)
	}

	// Scoping: another tenant's token, an unknown id and a non-UUID are 404; no token is 401.
	e.expect(e.do("GET", "/v1/agents/"+id+"/health", otherToken, nil), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/agents/00000000-0000-4000-8000-000000000000/health", token, nil), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/agents/nope/health", token, nil), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/agents/"+id+"/health", "", nil), http.StatusUnauthorized)

	// A console without the health store says so.
	bare := httptest.NewServer(New(Config{Store: store.New(testDB.Pool), AdminToken: adminToken, Logger: slog.New(slog.DiscardHandler)}).Handler())
	t.Cleanup(bare.Close)
	be := &env{t: t, api: bare}
	be.expect(be.do("GET", "/v1/agents/"+id+"/health", token, nil), http.StatusNotImplemented)
}

// openBreaker opens the deployment's breaker of an agent endpoint at since, as the first failure
// of a deployment that opens at one does.
func openBreaker(t *testing.T, tenantID, agentID, endpoint string, since time.Time) {
	t.Helper()
	shared := store.NewCircuits(testDB.Pool, "connector/pod-1", nil)
	c, err := shared.Fail(t.Context(), breaker.CircuitKey{TenantID: tenantID, AgentID: agentID, Endpoint: endpoint}, since,
		"timeout: the agent sent no event within 10s", breaker.Policy{Failures: 1, Cooldown: time.Minute, MaxCooldown: time.Minute})
	if err != nil || c.State != breaker.Open {
		t.Fatalf("open the breaker: %+v, %v", c, err)
	}
}

// TestHealthCardInBrowser opens an agent's health card in headless Chromium after a few real
// turns: the chart (uPlot, vendored) is drawn, the numbers and the failure are listed, and the
// user's text is nowhere.
func TestHealthCardInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: skips (or fails in CI) before anything else starts
	e := newHealthEnv(t)
	tenantID, token := e.newTenant("health card")
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": e.demoURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	e.turns(tenantID, token, id)
	// The deployment stopped calling the agent: the card lists its breaker and the replica's copy.
	openBreaker(t, tenantID, id, "https://agent.example/a2a", time.Now().Add(-time.Minute))
	pub := breaker.NewPublisher(store.NewCircuits(testDB.Pool, "connector/pod-1", nil), nil)
	pub.Publish(breaker.Change{TenantID: tenantID, AgentID: id, Endpoint: "https://agent.example/a2a", State: breaker.Closed,
		Since: time.Now().Add(-time.Minute)})
	if err := pub.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	b.do("open the console", chromedp.Navigate(e.api.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")))
	b.typeInto("#token-input", token)
	b.click("#token-save")
	sel := fmt.Sprintf(`article.agent[data-agent-id=%q] details.health`, id)
	b.waitText(sel+" summary", "Health")
	b.click(sel + " summary")
	b.waitText(sel+" .health-numbers", "Last hour", "Last day")
	// The interface the turns call, as the agent's card chose it.
	b.waitText(sel+" .health-endpoint", "Turns call JSON-RPC", "A2A 0.2.5", e.demoURL)
	// uPlot drew into a canvas of the chart box, with both series in its legend.
	b.waitUntil("the chart is drawn", `(sel) => {
		const c = document.querySelector(sel + " .health-chart canvas");
		return !!c && c.width > 0 && c.height > 0;
	}`, sel)
	b.waitText(sel+" .health-chart", "Turns", "Failures")
	// Before any hover the legend says the latest minute, not uPlot's "--".
	legend := evalJS[[]string](b, fmt.Sprintf(`(() => {
		const box = document.querySelector(%s);
		const vals = [...box.querySelectorAll(".u-legend .u-value")].map((v) => v.textContent);
		return [...vals, String(box.uplot.data[1].at(-1)), String(box.uplot.data[2].at(-1))];
	})()`, jsString(sel+" .health-chart")))
	if len(legend) != 5 || slices.Contains(legend[:3], "--") || legend[1] != legend[3] || legend[2] != legend[4] || legend[0] == "" {
		t.Errorf("legend before hover = %q (then the latest minute's turns and failures); want the time and values of the latest minute", legend)
	}
	rows := evalJS[[][]string](b, fmt.Sprintf(`[...document.querySelectorAll(%s)].map((tr) => [...tr.children].map((c) => c.textContent))`,
		jsString(sel+" .health-numbers tbody tr")))
	want := map[string][]string{
		"Turns":                              {"Turns", "4", "4"},
		"Completed":                          {"Completed", "2", "2"},
		"Declined (handback)":                {"Declined (handback)", "1", "1"},
		"Failed":                             {"Failed", "1", "1"},
		"Canceled by the caller":             {"Canceled by the caller", "0", "0"},
		"Asked a follow-up (input required)": {"Asked a follow-up (input required)", "0", "0"},
	}
	seen := 0
	for _, row := range rows {
		if w, ok := want[row[0]]; ok {
			seen++
			if diff := cmp.Diff(w, row); diff != "" {
				t.Errorf("numbers row (-want +got):\n%s", diff)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("numbers rows = %q", rows)
	}
	if got := b.text(sel + " tr.health-duration"); !strings.Contains(got, "/") || strings.Contains(got, "—") {
		t.Errorf("duration row = %q, want p50 / p95 of both windows", got)
	}
	b.waitText(sel+" .health-failures", "FAILED", "agent_unauthorized")
	b.waitText(sel+" .health-breakers", "https://agent.example/a2a", "Open", "timeout: the agent sent no event", "connector/pod-1: Closed")
	b.snapElement("health-card", sel)
	if card := b.text(sel); strings.Contains(card, "相加") || strings.Contains(card, "joke") {
		t.Errorf("the health card shows the user's text: %q", card)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
	if len(b.security) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", b.security)
	}
}

// TestVendoredChartLibrary: the vendored chart library is served with the page's headers and its
// own bytes, and its license and version are in the repository.
func TestVendoredChartLibrary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, ctype := range map[string]string{"uplot.iife.min.js": "text/javascript; charset=utf-8", "uplot.min.css": "text/css; charset=utf-8"} {
		want, err := webFiles.ReadFile("web/" + name)
		if err != nil {
			t.Fatal(err)
		}
		r := e.do("GET", "/ui/"+name, "", nil)
		e.expect(r, http.StatusOK)
		if r.ctype != ctype || !bytes.Equal(r.body, want) {
			t.Errorf("GET /ui/%s: %s, %d bytes; want %s, the embedded %d bytes", name, r.ctype, len(r.body), ctype, len(want))
		}
	}
	for _, f := range []string{"third_party/uplot/LICENSE", "third_party/uplot/VERSION"} {
		if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
