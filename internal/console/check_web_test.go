package console

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// TestCheckMyAgentInBrowser drives "Check my agent" in headless Chromium against a real console
// (real Postgres) and real agents: the demo agent passes every check; a fixture agent whose card
// demands a key it does not check, and that streams on its url only, shows a fail and a warn,
// each with its fix. Nothing from the agents becomes markup, and the page breaks no rule of its
// CSP.
func TestCheckMyAgentInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: skips (or fails in CI) before anything else starts

	demo := agent.New(agent.Options{APIKey: theAPIKey})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	fx := fixtureagent.New(t)
	fx.SetBehavior(fixtureagent.NoStreamPath)
	fxCard := fmt.Sprintf(`{
  "name": "Leaky <b>agent</b>", "description": "Answers without its key.", "protocolVersion": "0.2.5",
  "url": %q, "version": "1.0.0", "capabilities": {"streaming": true},
  "security": ["apiKey"], "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"}},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "echo", "name": "Echo", "description": "Answers.", "tags": ["demo"], "examples": ["<img src=x onerror=alert(1)>"]}]
}`, fx.URL)
	cardSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fxCard)
	}))
	t.Cleanup(cardSrv.Close)

	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{6}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	cards := cardfetch.New(cardfetch.Options{AllowInsecureHTTP: true, Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3})})
	invOpts := invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{InlineHTTP1: true}), Secrets: box}
	logs := &syncBuffer{}
	srv := New(Config{
		Store:      store.New(testDB.Pool),
		Cards:      cards,
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Prober:     probe.New(probe.Config{Cards: cards, Invoke: invOpts}),
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	e := &env{t: t, api: api, logs: logs}
	_, token := e.newTenant("check in browser")
	register := func(cardURL string) string {
		r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": cardURL, "apiKey": theAPIKey})
		e.expect(r, http.StatusCreated)
		return r.json(t)["id"].(string)
	}
	demoSel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, register(demoSrv.URL))
	fxSel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, register(cardSrv.URL+"/card.json"))

	b.do("open the console", chromedp.Navigate(api.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")))
	b.typeInto("#token-input", token)
	b.click("#token-save")
	b.waitText(demoSel, "超级AI助理", "Check my agent")

	// The demo agent: every check passes.
	b.click(demoSel + " .check-run")
	b.waitText(demoSel+" .check-result .check-summary", "8 pass", "0 warn", "0 fail", "Everything as the platform expects")
	items := evalJS[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%s)].map((li) => li.className + " " + li.dataset.check)`,
		jsString(demoSel+" .check-result li.check-item")))
	if len(items) != 8 {
		t.Fatalf("check items = %q, want 8", items)
	}
	for _, it := range items {
		if !strings.HasPrefix(it, "check-item check-pass ") {
			t.Errorf("demo agent check %q, want a pass", it)
		}
	}
	b.waitText(demoSel+" .check-result .check-facts", "示例: 重复我说的话", "A2A 0.2.5", "/stream")
	if n := evalJS[int](b, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(demoSel+" .check-fix"))); n != 0 {
		t.Errorf("a passing agent shows %d fixes", n)
	}
	b.snapElement("check-my-agent-pass", demoSel)

	// The leaky agent: the key check fails and the stream path warns, each with its fix.
	b.click(fxSel + " .check-run")
	b.waitText(fxSel+" .check-result .check-summary", "6 pass", "1 warn", "1 fail", "Some checks failed")
	b.waitText(fxSel+` li.check-fail[data-check="api_key_refused"]`, "Refuses calls without the key", "answered", "Fix: ", "X-API-KEY")
	b.waitText(fxSel+` li.check-warn[data-check="streaming"]`, "HTTP 404", "Fix: ", "{url}/stream")
	b.waitText(fxSel+" .check-result .check-facts", "<img src=x onerror=alert(1)>")
	if n := evalJS[int](b, `document.querySelectorAll("img, b").length`); n != 0 {
		t.Fatalf("the agent's text became %d elements", n)
	}
	b.snapElement("check-my-agent-fail", fxSel)

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("the page opened dialogs: %q", b.dialogs)
	}
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
	if len(b.security) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", b.security)
	}
	if strings.Contains(logs.String(), theAPIKey) {
		t.Error("the server logs hold the API key")
	}
}
