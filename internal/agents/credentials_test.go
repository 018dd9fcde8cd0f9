package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// TestRegisterWithBearerTokenBehindAuthenticatedCard: a card served only with the token is
// fetched with it, its extended card's skills become the agent's, and a turn carries the token.
func TestRegisterWithBearerTokenBehindAuthenticatedCard(t *testing.T) {
	t.Parallel()
	const token = "bearer-for-the-card"
	fx := fixtureagent.New(t)
	fx.SetBehavior(fixtureagent.Send)
	bearerCard := func(skills ...map[string]any) map[string]any {
		all := []any{map[string]any{"id": "ask", "name": "Ask", "description": "Answers.", "tags": []any{"demo"}}}
		for _, s := range skills {
			all = append(all, s)
		}
		return map[string]any{"name": "Private", "description": "d", "protocolVersion": "0.3.0", "version": "1",
			"capabilities": map[string]any{"streaming": false}, "supportsAuthenticatedExtendedCard": true,
			"defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"}, "skills": all,
			"securitySchemes": map[string]any{"b": map[string]any{"type": "http", "scheme": "bearer"}},
			"security":        []any{map[string]any{"b": []any{}}}}
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/card.json":
			c := bearerCard()
			c["url"] = srv.URL + "/a2a"
			_ = json.NewEncoder(w).Encode(c)
		case r.Method == http.MethodPost && r.URL.Path == "/a2a":
			var req struct {
				ID     json.RawMessage
				Method string
			}
			body := http.MaxBytesReader(w, r.Body, 1<<20)
			raw := json.RawMessage{}
			_ = json.NewDecoder(body).Decode(&raw)
			_ = json.Unmarshal(raw, &req)
			if req.Method == "agent/getAuthenticatedExtendedCard" {
				c := bearerCard(map[string]any{"id": "private", "name": "Private", "description": "For members.", "tags": []any{"x"}})
				c["url"] = srv.URL + "/a2a"
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": c})
				return
			}
			fx.ServeHTTP(w, requestWithBody(r, raw))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	box := newBox(t)
	inv := invoke.New(invoke.Options{Secrets: box, Client: netguard.NewClient(loopback, netguard.ClientOptions{})})
	t.Cleanup(func() { _ = inv.Close(context.Background()) })
	svc := newService(t, agents.Config{Secrets: box, Authorizer: inv, Canceler: inv})
	tenant := testDB.NewTenant(t)

	if _, _, err := svc.RegisterWith(t.Context(), tenant, srv.URL+"/card.json", nil); err == nil {
		t.Fatal("a card behind authentication registered without credentials")
	}
	a, warnings, err := svc.RegisterWith(t.Context(), tenant, srv.URL+"/card.json",
		&credential.Credential{Kind: connector.CredentialKindBearerToken, Secret: token})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if a.Credential() != connector.CredentialKindBearerToken || !a.CredentialsSet || a.Invocable() != nil {
		t.Errorf("agent: kind %s, set %v, invocable %v", a.Credential(), a.CredentialsSet, a.Invocable())
	}
	if len(a.Skills) != 2 || a.Skills[1].ID != "private" {
		t.Errorf("skills = %+v, want the extended card's; warnings %+v", a.Skills, warnings)
	}

	a, key, err := svc.WithCredential(t.Context(), tenant, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	res := inv.Turn(t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "m1", Text: "hi"}, nil)
	if res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("turn: %s %+v", res.Outcome, res.Err)
	}
}

// requestWithBody is r with its body put back after the test read it.
func requestWithBody(r *http.Request, raw json.RawMessage) *http.Request {
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(raw))
	r2.ContentLength = int64(len(raw))
	return r2
}
