package console

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// newDemoEnv is a console (with an invoker and the connector's session router) whose fetches and
// agent calls may reach loopback over plain HTTP, and a demo agent that requires theAPIKey.
func newDemoEnv(t *testing.T) (*env, *agent.Agent, string) {
	t.Helper()
	return newDemoEnvWith(t, nil)
}

// newDemoEnvWith is newDemoEnv whose test turns and checks are capped by lim (nil: no caps).
func newDemoEnvWith(t *testing.T, lim *admission.Limiter) (*env, *agent.Agent, string) {
	t.Helper()
	return newDemoEnvOpts(t, demoEnvOptions{lim: lim})
}

// demoEnvOptions change newDemoEnvOpts's env: caps on its turns, the caller's identity issuer,
// a wrapper around the demo agent (to see its requests).
type demoEnvOptions struct {
	lim      *admission.Limiter
	identity func(box *secret.Box) *identity.Issuer
	wrap     func(http.Handler) http.Handler
}

func newDemoEnvOpts(t *testing.T, o demoEnvOptions) (*env, *agent.Agent, string) {
	t.Helper()
	lim := o.lim
	demo := agent.New(agent.Options{APIKey: theAPIKey})
	handler := demo.Handler()
	if o.wrap != nil {
		handler = o.wrap(handler)
	}
	demoSrv := httptest.NewServer(handler)
	t.Cleanup(demoSrv.Close)

	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	invOpts := invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{InlineHTTP1: true}), Secrets: box}
	if o.identity != nil {
		invOpts.Identity = o.identity(box)
	}
	inv := invoke.New(invOpts)
	t.Cleanup(func() { inv.Close(context.Background()) })
	st := store.New(testDB.Pool)
	router := session.New(session.Config{Store: st, Invoker: inv, Admission: lim})
	t.Cleanup(router.Wait) // registered before the API's Close, so it runs after it
	cards := cardfetch.New(cardfetch.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3}), AllowInsecureHTTP: true})
	srv := New(Config{
		Store:      st,
		Cards:      cards,
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Invoker:    inv,
		Router:     router,
		Prober:     probe.New(probe.Config{Cards: cards, Invoke: invOpts}),
		Admission:  lim,
		Identity:   invOpts.Identity,
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
	if err := st.SaveTurn(t.Context(), connector.TurnRecord{TenantID: tenantID, SessionID: "held", AgentID: id, TurnID: "t1",
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

// registerDemo registers the demo agent with its key for a new tenant.
func registerDemo(e *env, demoURL, tenantName string) (tenantID, token, agentID string) {
	e.t.Helper()
	tenantID, token = e.newTenant(tenantName)
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	return tenantID, token, r.json(e.t)["id"].(string)
}

// testTurn is the JSON answer of POST /v1/agents/{id}/test.
type testTurn struct {
	SessionID     string         `json:"sessionId"`
	Outcome       string         `json:"outcome"`
	Text          string         `json:"text"`
	StatusText    string         `json:"statusText"`
	Continued     bool           `json:"continued"`
	TaskID        string         `json:"taskId"`
	ContextID     string         `json:"contextId"`
	Metadata      map[string]any `json:"metadata"`
	HoldExpiresAt *time.Time     `json:"holdExpiresAt"`
	Error         *struct{ Code, Message string }
}

func (e *env) testTurn(token, agentID string, body map[string]string) testTurn {
	e.t.Helper()
	r := e.do("POST", "/v1/agents/"+agentID+"/test", token, body)
	e.expect(r, http.StatusOK)
	var out testTurn
	if err := json.Unmarshal(r.body, &out); err != nil {
		e.t.Fatalf("test turn answer %s: %v", r.body, err)
	}
	return out
}

// A test conversation goes through INPUT_REQUIRED to COMPLETED as a dialog session does: the
// first turn holds the conversation on the agent's task, the answer continues that task, and
// the completed turn frees it.
func TestTryItMultiTurn(t *testing.T) {
	t.Parallel()
	e, demo, demoURL := newDemoEnv(t)
	_, token, id := registerDemo(e, demoURL, "multi-turn")

	before := time.Now()
	first := e.testTurn(token, id, map[string]string{"text": "帮我算加法"})
	if first.Outcome != "INPUT_REQUIRED" || first.SessionID == "" || first.TaskID == "" || first.Continued {
		t.Fatalf("first turn = %+v, want INPUT_REQUIRED with a new session and task", first)
	}
	if !strings.Contains(first.StatusText, "两个数") || !strings.Contains(first.Text, "两个数") {
		t.Errorf("first turn text %q, statusText %q: want the agent's question in both", first.Text, first.StatusText)
	}
	if first.HoldExpiresAt == nil || !first.HoldExpiresAt.After(before) {
		t.Errorf("holdExpiresAt = %v, want a time after the turn started", first.HoldExpiresAt)
	}

	second := e.testTurn(token, id, map[string]string{"text": "3和5", "sessionId": first.SessionID})
	if second.Outcome != "COMPLETED" || !second.Continued || second.TaskID != first.TaskID || second.SessionID != first.SessionID {
		t.Fatalf("second turn = %+v, want COMPLETED continuing task %s", second, first.TaskID)
	}
	if !strings.Contains(second.Text, "8") {
		t.Errorf("second turn text = %q, want the sum 8", second.Text)
	}
	if second.HoldExpiresAt != nil {
		t.Errorf("holdExpiresAt = %v after COMPLETED, want none", second.HoldExpiresAt)
	}
	// The agent saw the answer on its task, as the dialog engine's next turn would be sent.
	var continued bool
	for _, req := range demo.Requests() {
		if req.TaskID == first.TaskID && strings.Contains(req.Text, "3和5") {
			continued = true
		}
	}
	if !continued {
		t.Fatal("the agent never received the answer on the held task")
	}

	// The conversation is free again: a new question starts a new task.
	third := e.testTurn(token, id, map[string]string{"text": "帮我算加法", "sessionId": first.SessionID})
	if third.Outcome != "INPUT_REQUIRED" || third.Continued || third.TaskID == first.TaskID {
		t.Fatalf("third turn = %+v, want a new INPUT_REQUIRED task", third)
	}
}

// A declined turn (HANDBACK) carries the agent's own explanation; device commands come back as
// the final metadata.
func TestTryItHandbackAndDeviceCommands(t *testing.T) {
	t.Parallel()
	e, _, demoURL := newDemoEnv(t)
	_, token, id := registerDemo(e, demoURL, "handback")

	r := e.testTurn(token, id, map[string]string{"text": "tell me a joke"})
	if r.Outcome != "HANDBACK" || r.HoldExpiresAt != nil {
		t.Fatalf("turn = %+v, want HANDBACK and no hold", r)
	}
	if !strings.Contains(r.StatusText, "Sorry, I can't help with that") {
		t.Errorf("statusText = %q, want the agent's explanation", r.StatusText)
	}

	r = e.testTurn(token, id, map[string]string{"text": "进行闪光"})
	cmds, _ := r.Metadata["commands"].([]any)
	if r.Outcome != "COMPLETED" || len(cmds) != 1 {
		t.Fatalf("flash turn = %+v, want COMPLETED with one device command", r)
	}
	if name := cmds[0].(map[string]any)["name"]; name != "flash" {
		t.Errorf("device command = %v, want flash", cmds[0])
	}
}

// Ending a held test conversation releases it and cancels the agent's task; ending a free one
// is no error.
func TestTryItEnd(t *testing.T) {
	t.Parallel()
	e, demo, demoURL := newDemoEnv(t)
	_, token, id := registerDemo(e, demoURL, "end")

	first := e.testTurn(token, id, map[string]string{"text": "帮我算加法", "sessionId": "my conversation"})
	if first.Outcome != "INPUT_REQUIRED" || first.SessionID != "my conversation" {
		t.Fatalf("first turn = %+v", first)
	}
	path := "/v1/agents/" + id + "/test/" + url.PathEscape(first.SessionID)
	r := e.do("DELETE", path, token, nil)
	e.expect(r, http.StatusOK)
	if got := r.json(t); got["released"] != true || got["sessionId"] != first.SessionID {
		t.Fatalf("end = %s, want released", r.body)
	}
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for !demo.Canceled(first.TaskID) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never received tasks/cancel for %s", first.TaskID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Free again: the next turn starts a new task; ending twice is fine.
	if next := e.testTurn(token, id, map[string]string{"text": "1与2相加是多少", "sessionId": first.SessionID}); next.Continued || next.Outcome != "COMPLETED" {
		t.Fatalf("turn after end = %+v, want a new COMPLETED task", next)
	}
	r = e.do("DELETE", path, token, nil)
	e.expect(r, http.StatusOK)
	if got := r.json(t); got["released"] != false {
		t.Fatalf("second end = %s, want released false", r.body)
	}

	// Another tenant cannot end it, nor name a session id with a control character.
	_, other := e.newTenant("other")
	e.expect(e.do("DELETE", path, other, nil), http.StatusNotFound)
	bad := e.do("POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "hi", "sessionId": "a\x1fb"})
	e.expect(bad, http.StatusBadRequest)
	if f := bad.json(t)["field"]; f != "sessionId" {
		t.Errorf("bad sessionId problem field = %v", f)
	}
}

// Test conversations live apart from the dialog engine's sessions: a held test conversation is
// no engine session of the same id, and an engine's hold on that id is neither continued nor
// released by a test turn.
func TestTryItSessionsAreNotEngineSessions(t *testing.T) {
	t.Parallel()
	e, _, demoURL := newDemoEnv(t)
	tenantID, token, id := registerDemo(e, demoURL, "namespaces")
	st := store.New(testDB.Pool)
	router := session.New(session.Config{Store: st})

	held := e.testTurn(token, id, map[string]string{"text": "帮我算加法", "sessionId": "s1"})
	if held.Outcome != "INPUT_REQUIRED" {
		t.Fatalf("test turn = %+v", held)
	}
	if info, err := router.Get(t.Context(), tenantID, "s1"); err != nil || info.Held {
		t.Fatalf("engine session s1 = %+v, %v; a test conversation must not show as one", info, err)
	}

	// An engine session "s2" held by the agent on some task.
	expires := time.Now().Add(time.Hour)
	if err := st.SaveTurn(t.Context(), connector.TurnRecord{TenantID: tenantID, SessionID: "s2", AgentID: id, TurnID: "t1",
		StartedAt: time.Now(), SetHold: &connector.Hold{TaskID: "engine-task", ContextID: "engine-ctx",
			TurnID: "t1", ExpiresAt: expires}}); err != nil {
		t.Fatal(err)
	}
	r := e.testTurn(token, id, map[string]string{"text": "1与2相加是多少", "sessionId": "s2"})
	if r.Continued || r.TaskID == "engine-task" || r.Outcome != "COMPLETED" {
		t.Fatalf("test turn in s2 = %+v; it must not continue the engine's task", r)
	}
	e.expect(e.do("DELETE", "/v1/agents/"+id+"/test/s2", token, nil), http.StatusOK)
	info, err := router.Get(t.Context(), tenantID, "s2")
	if err != nil || !info.Held || info.Hold.TaskID != "engine-task" {
		t.Fatalf("engine session s2 after test turns = %+v, %v; want its hold untouched", info, err)
	}
}

// TestTryItAndCheck_count_against_the_caps: with the tenant's one place taken (as by a turn in
// flight in this process), a test turn and a check are answered 429 at once, naming the cap and
// its value, and never reach the agent; with the place free again both run.
func TestTryItAndCheck_count_against_the_caps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	lim := admission.New(admission.Config{Replica: 10, Tenant: 1, Agent: 1})
	e, demo, demoURL := newDemoEnvWith(t, lim)
	tenantID, token := e.newTenant("capped")
	r := e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": demoURL, "apiKey": theAPIKey})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	busy, err := lim.Acquire(ctx, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	seen := len(demo.Requests())
	for _, req := range []struct {
		path string
		body any
	}{
		{"/v1/agents/" + id + "/test", map[string]string{"text": "hi"}},
		{"/v1/agents/" + id + "/check", nil},
	} {
		path := req.path
		r := e.do("POST", path, token, req.body)
		e.expect(r, http.StatusTooManyRequests)
		p := r.json(t)
		if p["code"] != "too_many_turns" || p["cap"] != "tenant" || p["limit"] != float64(1) ||
			!strings.Contains(p["detail"].(string), "tenant cap reached: at most 1 concurrent turns per deployment") {
			t.Errorf("POST %s: %s", path, r.body)
		}
	}
	if n := len(demo.Requests()) - seen; n != 0 {
		t.Errorf("the agent got %d requests from refused turns", n)
	}
	busy.Release()
	e.expect(e.do("POST", "/v1/agents/"+id+"/test", token, map[string]string{"text": "hi"}), http.StatusOK)
	e.expect(e.do("POST", "/v1/agents/"+id+"/check", token, nil), http.StatusOK)
	if n := lim.InFlight(); n != 0 {
		t.Errorf("%d turns still counted in flight", n)
	}
}
