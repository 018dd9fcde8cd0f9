package console

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// newTenantWithID creates a tenant and returns its id, token and token id.
func (e *env) newTenantWithID(name string) (id, token, tokenID string) {
	e.t.Helper()
	r := e.do("POST", "/v1/tenants", adminToken, map[string]string{"name": name})
	e.expect(r, http.StatusCreated)
	m := r.json(e.t)
	if _, err := uuid.Parse(fmt.Sprint(m["tokenId"])); err != nil {
		e.t.Fatalf("POST /v1/tenants: tokenId %v is not a UUID: %s", m["tokenId"], r.body)
	}
	return m["id"].(string), m["token"].(string), m["tokenId"].(string)
}

// tokenList is GET path's tokens by id.
func (e *env) tokenList(path, token string) map[string]map[string]any {
	e.t.Helper()
	r := e.do("GET", path, token, nil)
	e.expect(r, http.StatusOK)
	out := map[string]map[string]any{}
	for _, item := range r.json(e.t)["tokens"].([]any) {
		m := item.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

func TestTenantTokens_list_and_revoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tenantID, token1, token1ID := e.newTenantWithID("Tokens")
	_, tokenB, tokenBID := e.newTenantWithID("Tokens B")

	r := e.do("POST", "/v1/tenants/"+tenantID+"/tokens", adminToken, nil)
	e.expect(r, http.StatusCreated)
	m := r.json(t)
	token2, token2ID := m["token"].(string), m["tokenId"].(string)

	// token1 authenticates a request; token2 has not yet.
	e.expect(e.do("GET", "/v1/agents", token1, nil), http.StatusOK)
	adminPath := "/v1/tenants/" + tenantID + "/tokens"
	r = e.do("GET", adminPath, adminToken, nil)
	e.expect(r, http.StatusOK)
	for _, secret := range []string{token1, token2, fmt.Sprintf("%x", sha256.Sum256([]byte(token1)))} {
		if strings.Contains(string(r.body), secret) {
			t.Fatalf("token list shows a token or its hash: %s", r.body)
		}
	}
	list := e.tokenList(adminPath, adminToken)
	if len(list) != 2 || list[token1ID] == nil || list[token2ID] == nil {
		t.Fatalf("admin token list = %v; want %s and %s", list, token1ID, token2ID)
	}
	if list[token1ID]["lastUsedAt"] == nil || list[token2ID]["lastUsedAt"] != nil {
		t.Errorf("lastUsedAt = %v and %v; want token1 used, token2 null", list[token1ID]["lastUsedAt"], list[token2ID]["lastUsedAt"])
	}
	if _, err := time.Parse(time.RFC3339, fmt.Sprint(list[token2ID]["createdAt"])); err != nil {
		t.Errorf("createdAt %v: %v", list[token2ID]["createdAt"], err)
	}

	// The tenant's own list is the same, with the asking token marked.
	own := e.tokenList("/v1/tokens", token2)
	if len(own) != 2 || own[token2ID]["current"] != true || own[token1ID]["current"] != false {
		t.Errorf("own token list = %v; want both, token2 current", own)
	}
	if _, ok := e.tokenList("/v1/tokens", tokenB)[token1ID]; ok {
		t.Error("tenant B sees tenant A's tokens")
	}

	// The operator revokes token2: its next request is refused, token1 still works.
	e.expect(e.do("DELETE", adminPath+"/"+token2ID, adminToken, nil), http.StatusNoContent)
	e.expect(e.do("GET", "/v1/agents", token2, nil), http.StatusUnauthorized)
	e.expect(e.do("GET", "/v1/agents", token1, nil), http.StatusOK)
	e.expect(e.do("DELETE", adminPath+"/"+token2ID, adminToken, nil), http.StatusNotFound)
	// A token id under another tenant, or ids that are no UUIDs, name nothing.
	e.expect(e.do("DELETE", "/v1/tenants/"+tenantID+"/tokens/"+tokenBID, adminToken, nil), http.StatusNotFound)
	e.expect(e.do("DELETE", adminPath+"/not-a-uuid", adminToken, nil), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/tenants/not-a-uuid/tokens", adminToken, nil), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/tenants/"+uuid.NewString()+"/tokens", adminToken, nil), http.StatusNotFound)

	// A tenant revokes its own tokens, not another tenant's.
	e.expect(e.do("DELETE", "/v1/tokens/"+token1ID, tokenB, nil), http.StatusNotFound)
	r = e.do("POST", "/v1/tenants/"+tenantID+"/tokens", adminToken, nil)
	e.expect(r, http.StatusCreated)
	token3, token3ID := r.json(t)["token"].(string), r.json(t)["tokenId"].(string)
	e.expect(e.do("DELETE", "/v1/tokens/"+token3ID, token1, nil), http.StatusNoContent)
	e.expect(e.do("GET", "/v1/tokens", token3, nil), http.StatusUnauthorized)
	// Even the one it asks with: a leaked token goes at once.
	e.expect(e.do("DELETE", "/v1/tokens/"+token1ID, token1, nil), http.StatusNoContent)
	e.expect(e.do("GET", "/v1/agents", token1, nil), http.StatusUnauthorized)
	if list := e.tokenList(adminPath, adminToken); len(list) != 0 {
		t.Errorf("tokens left = %v; want none", list)
	}

	// Token routes are the operator's, the own-token routes a tenant's.
	e.expect(e.do("GET", adminPath, tokenB, nil), http.StatusUnauthorized)
	e.expect(e.do("DELETE", adminPath+"/"+tokenBID, tokenB, nil), http.StatusUnauthorized)
	e.expect(e.do("GET", "/v1/tokens", adminToken, nil), http.StatusUnauthorized)
	if strings.Contains(e.logs.String(), token2) || strings.Contains(e.logs.String(), token3) {
		t.Error("the logs contain a token")
	}
}

func TestTenants_list_and_delete_with_everything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doomedID, doomedToken, _ := e.newTenantWithID("Doomed")
	keptID, keptToken, _ := e.newTenantWithID("Kept")

	cardURL := e.cards.Set("/tenant-delete.json", card("Doomed agent", "text/plain"))
	var agentIDs []string
	for _, token := range []string{doomedToken, keptToken} {
		r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": cardURL, "apiKey": theAPIKey})
		e.expect(r, http.StatusCreated)
		agentIDs = append(agentIDs, r.json(t)["id"].(string))
	}
	// A session of the doomed tenant held by its agent.
	st := store.New(testDB.Pool)
	if err := st.SaveTurn(t.Context(), connector.TurnRecord{TenantID: doomedID, SessionID: "held", AgentID: agentIDs[0],
		TurnID: "turn", StartedAt: time.Now(), SetHold: &connector.Hold{TaskID: "task", ContextID: "ctx",
			TurnID: "turn", ExpiresAt: time.Now().Add(10 * time.Minute)}}); err != nil {
		t.Fatalf("save hold: %v", err)
	}

	tenants := func() map[string]map[string]any {
		r := e.do("GET", "/v1/tenants", adminToken, nil)
		e.expect(r, http.StatusOK)
		out := map[string]map[string]any{}
		for _, item := range r.json(t)["tenants"].([]any) {
			m := item.(map[string]any)
			out[m["id"].(string)] = m
		}
		return out
	}
	list := tenants()
	if d := list[doomedID]; d == nil || d["name"] != "Doomed" || d["tokenCount"] != float64(1) || d["agentCount"] != float64(1) || d["createdAt"] == nil {
		t.Fatalf("tenant list entry = %v; want name, 1 token, 1 agent, createdAt", d)
	}
	e.expect(e.do("GET", "/v1/tenants", doomedToken, nil), http.StatusUnauthorized)
	e.expect(e.do("DELETE", "/v1/tenants/"+doomedID, doomedToken, nil), http.StatusUnauthorized)

	e.expect(e.do("DELETE", "/v1/tenants/"+doomedID, adminToken, nil), http.StatusNoContent)
	e.expect(e.do("GET", "/v1/agents", doomedToken, nil), http.StatusUnauthorized)
	if _, ok := tenants()[doomedID]; ok {
		t.Error("the deleted tenant is still listed")
	}
	for _, table := range []string{"tenant_tokens", "agents", "agent_revisions", "sessions"} {
		var n int
		if err := testDB.Pool.QueryRow(t.Context(), `select count(*) from `+table+` where tenant_id = $1`, doomedID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s rows of the deleted tenant = %d; want 0", table, n)
		}
	}
	// The other tenant and its agent are untouched.
	e.expect(e.do("GET", "/v1/agents/"+agentIDs[1], keptToken, nil), http.StatusOK)
	if _, ok := tenants()[keptID]; !ok {
		t.Error("the other tenant is gone")
	}
	e.expect(e.do("DELETE", "/v1/tenants/"+doomedID, adminToken, nil), http.StatusNotFound)
	e.expect(e.do("DELETE", "/v1/tenants/doomed", adminToken, nil), http.StatusNotFound)
}

// TestTenantLimits_are_set_shown_and_reset_by_the_operator: PATCH sets both overrides, GET and
// the list show them, null puts one back on the default, and bad values name their member.
func TestTenantLimits_are_set_shown_and_reset_by_the_operator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, token := e.newTenant("Limits")
	path := "/v1/tenants/" + id
	limitsOf := func(m map[string]any) map[string]any { return m["limits"].(map[string]any) }

	r := e.do("GET", path, adminToken, nil)
	e.expect(r, http.StatusOK)
	if l := limitsOf(r.json(t)); l["maxConcurrentTurns"] != nil || l["maxConcurrentTurnsPerAgent"] != nil {
		t.Fatalf("a new tenant has overrides: %s", r.body)
	}
	r = e.do("PATCH", path, adminToken, map[string]any{"limits": map[string]any{"maxConcurrentTurns": 40, "maxConcurrentTurnsPerAgent": 10}})
	e.expect(r, http.StatusOK)
	if l := limitsOf(r.json(t)); l["maxConcurrentTurns"] != float64(40) || l["maxConcurrentTurnsPerAgent"] != float64(10) {
		t.Fatalf("PATCH answered %s", r.body)
	}
	r = e.do("GET", "/v1/tenants", adminToken, nil)
	e.expect(r, http.StatusOK)
	var listed bool
	for _, item := range r.json(t)["tenants"].([]any) {
		if m := item.(map[string]any); m["id"] == id {
			listed = limitsOf(m)["maxConcurrentTurns"] == float64(40)
		}
	}
	if !listed {
		t.Errorf("the list does not show the override: %s", r.body)
	}
	r = e.do("PATCH", path, adminToken, map[string]any{"limits": map[string]any{"maxConcurrentTurns": nil, "maxConcurrentTurnsPerAgent": 5}})
	e.expect(r, http.StatusOK)
	if l := limitsOf(r.json(t)); l["maxConcurrentTurns"] != nil || l["maxConcurrentTurnsPerAgent"] != float64(5) {
		t.Fatalf("null did not reset: %s", r.body)
	}

	for _, c := range []struct {
		name  string
		body  any
		field string
	}{
		{"zero", map[string]any{"limits": map[string]any{"maxConcurrentTurns": 0}}, "limits.maxConcurrentTurns"},
		{"too_large", map[string]any{"limits": map[string]any{"maxConcurrentTurnsPerAgent": 1_000_001}}, "limits.maxConcurrentTurnsPerAgent"},
		{"not_an_integer", map[string]any{"limits": map[string]any{"maxConcurrentTurns": 2.5}}, "limits.maxConcurrentTurns"},
		{"no_limits", map[string]any{}, "limits"},
	} {
		r := e.do("PATCH", path, adminToken, c.body)
		e.expect(r, http.StatusBadRequest)
		if f := r.json(t)["field"]; f != c.field {
			t.Errorf("%s: field %v, want %s: %s", c.name, f, c.field, r.body)
		}
	}
	e.expect(e.do("PATCH", path, token, map[string]any{"limits": map[string]any{}}), http.StatusUnauthorized)
	e.expect(e.do("PATCH", "/v1/tenants/"+uuid.NewString(), adminToken, map[string]any{"limits": map[string]any{}}), http.StatusNotFound)
	e.expect(e.do("GET", "/v1/tenants/"+uuid.NewString(), adminToken, nil), http.StatusNotFound)
}
