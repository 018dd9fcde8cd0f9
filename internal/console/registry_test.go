package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// warningCodes are the codes of an agent resource's warnings.
func warningCodes(t *testing.T, r response) []string {
	t.Helper()
	var doc struct {
		Warnings []struct{ Code, Message string }
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range doc.Warnings {
		out = append(out, w.Code)
	}
	return out
}

// TestOneAgentRegistersOnce: the demo agent's bare origin and both its well-known card URLs
// are one agent; the second registration is 409 naming the first, and the preview of each
// spelling names it too (registeredAs) before the tenant tries.
func TestOneAgentRegistersOnce(t *testing.T) {
	t.Parallel()
	e, _, demoURL := newDemoEnv(t)
	_, token := e.newTenant("once")
	_, other := e.newTenant("once, other tenant")
	registeredAs := func(token, cardURL string) any {
		t.Helper()
		r := e.do("POST", "/v1/agents/validate", token, map[string]string{"cardUrl": cardURL})
		e.expect(r, http.StatusOK)
		m := r.json(t)
		if m["valid"] != true {
			t.Fatalf("preview of %s: %s; want valid", cardURL, r.body)
		}
		return m["registeredAs"]
	}
	if got := registeredAs(token, demoURL); got != nil {
		t.Errorf("preview before registering: registeredAs = %v; want none", got)
	}

	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": demoURL})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	for _, spelling := range []string{
		demoURL + "/.well-known/agent.json",
		demoURL + "/.well-known/agent-card.json",
		strings.Replace(demoURL, "http://", "HTTP://", 1) + "/",
		demoURL,
	} {
		if got := registeredAs(token, spelling); got != id {
			t.Errorf("preview of %s: registeredAs = %v; want %s", spelling, got, id)
		}
		r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": spelling})
		e.expect(r, http.StatusConflict)
		m := r.json(t)
		if m["code"] != "already_registered" || m["agentId"] != id || !strings.Contains(m["detail"].(string), id) {
			t.Errorf("%s: %s; want already_registered naming %s", spelling, r.body, id)
		}
	}
	// Another tenant's agent is not this tenant's: its preview names none.
	if got := registeredAs(other, demoURL); got != nil {
		t.Errorf("another tenant's preview: registeredAs = %v; want none", got)
	}
	r = e.do("GET", "/v1/agents", token, nil)
	if agents := r.json(t)["agents"].([]any); len(agents) != 1 {
		t.Errorf("agents = %d; want 1", len(agents))
	}
	// Another tenant registers the same agent as its own.
	e.expect(e.do("POST", "/v1/agents", other, map[string]string{"cardUrl": demoURL + "/.well-known/agent.json"}), http.StatusCreated)
}

// TestSameEndpointIsAWarning: two cards (two card URLs) naming one endpoint register, the
// second with a duplicate_endpoint warning naming the first; the warning is not stored.
func TestSameEndpointIsAWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("endpoint")
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": e.cards.Set("/one.json", card("One", "text/plain"))})
	e.expect(r, http.StatusCreated)
	first := r.json(t)["id"].(string)
	if codes := warningCodes(t, r); len(codes) != 0 {
		t.Errorf("first registration warnings = %v; want none", codes)
	}
	r = e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": e.cards.Set("/two.json", card("Two", "text/plain"))})
	e.expect(r, http.StatusCreated)
	second := r.json(t)["id"].(string)
	if codes := warningCodes(t, r); len(codes) != 1 || codes[0] != "duplicate_endpoint" || !strings.Contains(string(r.body), first) {
		t.Errorf("second registration: %s; want one duplicate_endpoint warning naming %s", r.body, first)
	}
	r = e.do("GET", "/v1/agents/"+second, token, nil)
	if codes := warningCodes(t, r); len(codes) != 0 {
		t.Errorf("stored warnings = %v; want none", codes)
	}
}

// TestMemberNamesAreCaseSensitive: encoding/json would take "cardurl" for cardUrl.
func TestMemberNamesAreCaseSensitive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("case")
	goodURL := e.cards.Set("/case.json", card("Case", "text/plain"))
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": goodURL})
	e.expect(r, http.StatusCreated)
	agentID := r.json(t)["id"].(string)
	hits := e.cards.Hits()

	for _, c := range []struct {
		name, method, path, token, body, field string
	}{
		{"cardurl", "POST", "/v1/agents", token, `{"cardurl":"` + goodURL + `"}`, "cardurl"},
		{"CardUrl_validate", "POST", "/v1/agents/validate", token, `{"CardUrl":"` + goodURL + `"}`, "CardUrl"},
		{"APIKEY_beside_cardUrl", "POST", "/v1/agents", token, `{"cardUrl":"` + goodURL + `","APIKEY":"k"}`, "APIKEY"},
		{"Enabled", "PATCH", "/v1/agents/" + agentID, token, `{"Enabled":false}`, "Enabled"},
		{"NAME", "POST", "/v1/tenants", adminToken, `{"NAME":"x"}`, "NAME"},
		{"Text", "POST", "/v1/agents/" + agentID + "/test", token, `{"Text":"hi"}`, "Text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.path, c.token, c.body)
			e.expect(r, http.StatusBadRequest)
			if m := r.json(t); m["code"] != "unknown_field" || m["field"] != c.field {
				t.Errorf("%s", r.body)
			}
		})
	}
	if got := e.cards.Hits(); got != hits {
		t.Errorf("refused requests fetched the card %d times", got-hits)
	}
	r = e.do("GET", "/v1/agents/"+agentID, token, nil)
	if r.json(t)["enabled"] != true {
		t.Error(`{"Enabled": false} disabled the agent`)
	}
}

// TestRefreshOfTheSameCardIsUnchanged: the same card keeps its revision; a changed one makes the
// next; the demo agent's real card refreshes unchanged too.
func TestRefreshOfTheSameCardIsUnchanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("refresh")
	cardURL := e.cards.Set("/refresh.json", card("Refresh", "text/plain"))
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": cardURL})
	e.expect(r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	updatedAt := r.json(t)["updatedAt"]

	refresh := func(wantRevision float64, wantUnchanged bool) map[string]any {
		t.Helper()
		r := e.do("POST", "/v1/agents/"+id+"/refresh", token, nil)
		e.expect(r, http.StatusOK)
		m := r.json(t)
		if m["revision"] != wantRevision || m["unchanged"] != wantUnchanged {
			t.Fatalf("refresh = revision %v, unchanged %v; want %v, %v: %s", m["revision"], m["unchanged"], wantRevision, wantUnchanged, r.body)
		}
		return m
	}
	if m := refresh(1, true); m["updatedAt"] != updatedAt {
		t.Errorf("updatedAt moved on an unchanged refresh: %v -> %v", updatedAt, m["updatedAt"])
	}
	// The same card respaced, keys reordered: the same JSON value.
	var v map[string]any
	if err := json.Unmarshal([]byte(card("Refresh", "text/plain")), &v); err != nil {
		t.Fatal(err)
	}
	respaced, _ := json.Marshal(v)
	e.cards.Set("/refresh.json", string(respaced))
	refresh(1, true)
	e.cards.Set("/refresh.json", card("Refresh v2", "text/plain"))
	if m := refresh(2, false); m["name"] != "Refresh v2" {
		t.Errorf("name after a changed refresh = %v", m["name"])
	}
	refresh(2, true)

	demoEnv, _, demoURL := newDemoEnv(t)
	_, demoToken := demoEnv.newTenant("refresh demo")
	r = demoEnv.do("POST", "/v1/agents", demoToken, map[string]string{"cardUrl": demoURL})
	demoEnv.expect(r, http.StatusCreated)
	r = demoEnv.do("POST", "/v1/agents/"+r.json(t)["id"].(string)+"/refresh", demoToken, nil)
	demoEnv.expect(r, http.StatusOK)
	if m := r.json(t); m["unchanged"] != true || m["revision"] != float64(1) {
		t.Errorf("demo agent refresh: %s", r.body)
	}
}
