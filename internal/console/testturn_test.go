package console

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// newDemoEnv is a console (with an invoker) whose fetches and agent calls may reach loopback
// over plain HTTP, and a demo agent that requires theAPIKey.
func newDemoEnv(t *testing.T) (*env, *agent.Agent, string) {
	t.Helper()
	demo := agent.New(agent.Options{APIKey: theAPIKey})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)

	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	inv := invoke.New(invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{}), Secrets: box})
	t.Cleanup(func() { inv.Close(context.Background()) })
	srv := New(Config{
		Store:      store.New(testDB.Pool),
		Cards:      cardfetch.New(cardfetch.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3}), AllowInsecureHTTP: true}),
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Invoker:    inv,
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	return &env{t: t, api: api, logs: logs}, demo, demoSrv.URL
}

// TestTryItRunsARealTurn registers the demo agent (which requires an API key) and uses the
// console's "try it" endpoint against it over real HTTP.
func TestTryItRunsARealTurn(t *testing.T) {
	t.Parallel()
	e, demo, demoURL := newDemoEnv(t)
	_, token := e.newTenant("try it")
	logs := e.logs

	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoURL})
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

// Deleting an agent frees the sessions it held and cancels their tasks at the agent.
func TestDeleteCancelsHeldTasks(t *testing.T) {
	t.Parallel()
	e, demo, demoURL := newDemoEnv(t)
	tenantID, token := e.newTenant("delete")
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	r = e.do("POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "帮我算加法"})
	e.expect(r, http.StatusOK)
	res := r.json(t)
	taskID, _ := res["taskId"].(string)
	if res["outcome"] != "INPUT_REQUIRED" || taskID == "" {
		t.Fatalf("test turn = %s", r.body)
	}
	// A dialog session holds the agent on that task (as the connector would record it).
	st := store.New(testDB.Pool)
	if err := st.SaveTurn(t.Context(), store.TurnRecord{TenantID: tenantID, SessionID: "held", AgentID: id, TurnID: "t1",
		StartedAt: time.Now(), SetHold: &connector.Hold{TaskID: taskID, ContextID: res["contextId"].(string),
			TurnID: "t1", ExpiresAt: time.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}

	e.expect(e.do("DELETE", "/v1/agents/"+id, token, nil), http.StatusNoContent)
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for !demo.Canceled(taskID) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never received tasks/cancel for the held task %s", taskID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l, err := st.LookupTurn(t.Context(), tenantID, "held", "", time.Now()); err != nil || l.Hold != nil {
		t.Fatalf("session still held after delete: %+v, %v", l.Hold, err)
	}
}
