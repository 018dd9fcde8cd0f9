package console

import (
	"net/http"
	"strings"
	"testing"
)

// bearerCard and oauthCard are cards that need a bearer token and an OAuth 2.0 client.
func bearerCard(name string) string {
	return `{"name": "` + name + `", "description": "d", "version": "1.0.0",
  "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": false},
  "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
  "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]}`
}

func oauthCard(name string) string {
	return `{"name": "` + name + `", "description": "d", "protocolVersion": "0.3.0", "version": "1.0.0",
  "url": "https://agent.example.com/a2a", "capabilities": {"streaming": true},
  "securitySchemes": {"oauth": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://auth.example.com/token", "scopes": {"a2a": "call"}}}}},
  "security": [{"oauth": ["a2a"]}],
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]}`
}

// TestCredentialsContract: registering and patching with credentials, the agent JSON's
// credential members, the 400s that name the field, and no secret in any answer or log line.
func TestCredentialsContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("Creds")
	const bearer, clientSecret = "bearer-" + theAPIKey, "client-secret-" + theAPIKey

	bearerURL := e.cards.Set("/bearer.json", bearerCard("Bearer"))
	oauthURL := e.cards.Set("/oauth.json", oauthCard("OAuth"))

	// A card needing credentials registers without them, and says what it needs.
	r := e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": oauthURL})
	e.expect(r, http.StatusCreated)
	a := r.json(t)
	want := map[string]any{"credentialKind": "oauth2", "credentialsSet": false, "apiKeyRequired": false}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("agent.%s = %v, want %v", k, a[k], v)
		}
	}
	if sig, _ := a["cardSignature"].(map[string]any); sig["status"] != "unsigned" {
		t.Errorf("cardSignature = %v, want unsigned", a["cardSignature"])
	}
	oauthID := a["id"].(string)

	// PATCH sets an OAuth 2.0 client.
	r = e.do("PATCH", "/v1/agents/"+oauthID, token, map[string]any{"credentials": map[string]any{
		"oauth2": map[string]any{"clientId": "connector", "clientSecret": clientSecret, "scopes": []string{"a2a"}}}})
	e.expect(r, http.StatusOK)
	if m := r.json(t); m["credentialsSet"] != true || m["credentialKind"] != "oauth2" {
		t.Errorf("after PATCH: %s", r.body)
	}

	// Registering with a bearer token.
	r = e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": bearerURL, "credentials": map[string]any{"bearerToken": bearer}})
	e.expect(r, http.StatusCreated)
	if m := r.json(t); m["credentialsSet"] != true || m["credentialKind"] != "bearerToken" {
		t.Errorf("bearer agent: %s", r.body)
	}

	// A bearer kind stands in for another: a Google host may declare plain HTTP bearer.
	r = e.do("PATCH", "/v1/agents/"+oauthID, token, map[string]any{"credentials": map[string]any{"bearerToken": bearer}})
	e.expect(r, http.StatusOK)
	if m := r.json(t); m["credentialsSet"] != true {
		t.Errorf("bearer token for an oauth2 card: %s", r.body)
	}
	r = e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": e.cards.Set("/key.json", card("Keyed", "text/plain"))})
	e.expect(r, http.StatusCreated)
	keyID := r.json(t)["id"].(string)

	// 400s naming the field.
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"two_members", map[string]any{"bearerToken": bearer, "apiKey": "k"}, "credentials"},
		{"unknown_member", map[string]any{"password": "p"}, "credentials.password"},
		{"none", map[string]any{}, "credentials"},
		{"oauth2_without_secret", map[string]any{"oauth2": map[string]any{"clientId": "c"}}, "credentials.oauth2.clientSecret"},
		{"oauth2_unknown_member", map[string]any{"oauth2": map[string]any{"clientId": "c", "clientSecret": "s", "audience": "x"}}, "credentials.oauth2.audience"},
		{"service_account_not_a_key", map[string]any{"googleServiceAccount": `{"type": "authorized_user"}`}, "credentials.googleServiceAccount"},
		{"bearer_kind_for_an_api_key_card", map[string]any{"bearerToken": bearer}, "credentials.bearerToken"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := oauthID
			if strings.HasPrefix(c.name, "bearer_kind") {
				target = keyID
			}
			r := e.do("PATCH", "/v1/agents/"+target, token, map[string]any{"credentials": c.body})
			e.expect(r, http.StatusBadRequest)
			if got := r.json(t)["field"]; got != c.field {
				t.Errorf("field = %v, want %s; body %s", got, c.field, r.body)
			}
			if strings.Contains(string(r.body), bearer) {
				t.Error("the problem quotes the token")
			}
		})
	}

	for _, s := range []string{bearer, clientSecret} {
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("a secret is in the logs")
		}
	}
}
