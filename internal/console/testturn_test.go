package console

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// TestTryItRunsARealTurn registers the demo agent (which requires an API key) and uses the
// console's "try it" endpoint against it over real HTTP.
func TestTryItRunsARealTurn(t *testing.T) {
	t.Parallel()
	demo := agent.New(agent.Options{APIKey: theAPIKey})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)

	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv := New(Config{
		Store:      store.New(testDB.Pool),
		Cards:      cardfetch.New(cardfetch.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3}), AllowInsecureHTTP: true}),
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Invoker:    invoke.New(invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{}), Secrets: box}),
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	e := &env{t: t, api: api, logs: logs}
	_, token := e.newTenant("try it")

	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoSrv.URL})
	e.expect(r, http.StatusCreated)
	a := r.json(t)
	id := a["id"].(string)
	if a["apiKeyRequired"] != true || a["apiKeySet"] != false {
		t.Fatalf("demo agent with a key: %s", r.body)
	}
	// Without its key the agent cannot be tried.
	e.expect(e.do("POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "1与2相加是多少"}), http.StatusConflict)

	e.expect(e.do("PATCH", "/v1/agents/"+id, token, map[string]string{"apiKey": theAPIKey}), http.StatusOK)
	r = e.do("POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "1与2相加是多少"})
	e.expect(r, http.StatusOK)
	res := r.json(t)
	if res["outcome"] != "COMPLETED" || !strings.Contains(res["text"].(string), "3") {
		t.Fatalf("test turn = %s", r.body)
	}
	// The key reached the agent (it answers 401 otherwise) and never the logs.
	var keyed bool
	for _, req := range demo.Requests() {
		if req.Header.Get("X-API-KEY") == "set" && !req.Unauthorized {
			keyed = true
		}
	}
	if !keyed {
		t.Fatal("agent never received the API key")
	}
	if strings.Contains(logs.String(), theAPIKey) {
		t.Fatal("logs contain the API key")
	}

	// A wrong key is the agent's refusal: a FAILED outcome with a reason, not an API error.
	e.expect(e.do("PATCH", "/v1/agents/"+id, token, map[string]string{"apiKey": "wrong"}), http.StatusOK)
	r = e.do("POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "hi"})
	e.expect(r, http.StatusOK)
	if res := r.json(t); res["outcome"] != "FAILED" || res["error"].(map[string]any)["code"] != "agent_unauthorized" {
		t.Fatalf("wrong key turn = %s", r.body)
	}
}
