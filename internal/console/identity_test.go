package console

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/identity/identitytest"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// The per-agent setting through the API, and a test turn naming a user: the agent receives the
// token only while the setting is on, it verifies from the console's own JWKS, and neither the
// user id nor the token reaches the logs.
func TestCallerIdentity_setting_and_test_turn(t *testing.T) {
	t.Parallel()
	const iss = "https://platform.example"
	var mu sync.Mutex
	var seen []string
	e, _, demoURL := newDemoEnvOpts(t, demoEnvOptions{
		identity: func(box *secret.Box) *identity.Issuer {
			return identity.New(identity.Options{Keys: store.New(testDB.Pool), Secrets: box, Issuer: iss})
		},
		wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					mu.Lock()
					seen = append(seen, r.Header.Get(identity.Header))
					mu.Unlock()
				}
				next.ServeHTTP(w, r)
			})
		},
	})
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			t.Fatal("the agent saw no call")
		}
		return seen[len(seen)-1]
	}
	_, token := e.newTenant("identity")
	r := e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": demoURL, "apiKey": theAPIKey, "callerIdentity": map[string]any{"enabled": true}})
	e.expect(r, http.StatusCreated)
	created := r.json(t)
	id := created["id"].(string)
	if ci, _ := created["callerIdentity"].(map[string]any); ci["enabled"] != true {
		t.Fatalf("created callerIdentity = %v, want enabled", created["callerIdentity"])
	}
	r = e.do("GET", "/v1/agents", token, nil)
	e.expect(r, http.StatusOK)
	if !strings.Contains(string(r.body), `"callerIdentity":{"enabled":true}`) {
		t.Errorf("list does not show the setting: %s", r.body)
	}
	r = e.do("PATCH", "/v1/agents/"+id, token, map[string]any{"callerIdentity": map[string]any{}})
	e.expect(r, http.StatusBadRequest)
	if p := r.json(t); p["field"] != "callerIdentity.enabled" {
		t.Errorf("an empty callerIdentity: problem %v, want one at callerIdentity.enabled", p)
	}
	r = e.do("POST", "/v1/agents/"+id+"/test", token, map[string]any{"text": "hi", "userId": ""})
	e.expect(r, http.StatusBadRequest)

	const user = "console-user-5f0e2a"
	const say = "重复我说的话：你好" // the demo agent repeats it
	if got := e.testTurn(token, id, map[string]string{"text": say, "userId": user}); got.Outcome != "COMPLETED" {
		t.Fatalf("test turn: %+v", got)
	}
	tok := last()
	c, err := identitytest.VerifyCaller(t.Context(), http.DefaultClient, e.api.URL+"/.well-known/jwks.json", iss, demoURL, tok)
	if err != nil {
		t.Fatalf("the token does not verify from the console's JWKS: %v", err)
	}
	if c.Claims.Subject == "" || c.Claims.Subject == user {
		t.Errorf("sub = %q", c.Claims.Subject)
	}
	e.testTurn(token, id, map[string]string{"text": say})
	if got := last(); got != "" {
		t.Error("a test turn without a user sent a token")
	}
	r = e.do("PATCH", "/v1/agents/"+id, token, map[string]any{"callerIdentity": map[string]any{"enabled": false}})
	e.expect(r, http.StatusOK)
	e.testTurn(token, id, map[string]string{"text": say, "userId": user})
	if got := last(); got != "" {
		t.Error("the agent received a token after the setting was turned off")
	}
	for _, secretValue := range []string{user, tok} {
		if strings.Contains(e.logs.String(), secretValue) {
			t.Errorf("the logs carry the user id or the token")
		}
	}
}
