package console

import (
	"net/http"
	"strings"
	"testing"
)

// TestAWSSigV4Credentials: an AWS key registers on any card (none can ask for SigV4), the agent
// then says credentialKind awsSigV4, nothing of the key comes back, and each bad member is a
// 400 naming it.
func TestAWSSigV4Credentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("SigV4")
	const secretKey, sessionToken = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET" + theAPIKey, "IQoJb3JpZ2luX2VjEXAMPLETOKEN" + theAPIKey
	key := func(m map[string]any) map[string]any {
		k := map[string]any{"accessKeyId": "AKIAIOSFODNN7EXAMPLE", "secretAccessKey": secretKey, "sessionToken": sessionToken, "region": "eu-west-1"}
		for n, v := range m {
			if v == nil {
				delete(k, n)
				continue
			}
			k[n] = v
		}
		return map[string]any{"awsSigV4": k}
	}
	var bodies []string
	for _, c := range []struct{ name, cardURL, asked string }{
		{"api_key_card", e.cards.Set("/sigv4-key.json", card("KeyCard", "text/plain")), "apiKey"},
		{"oauth2_card", e.cards.Set("/sigv4-oauth.json", oauthCard("OAuthCard")), "oauth2"},
		{"bearer_card", e.cards.Set("/sigv4-bearer.json", bearerCard("BearerCard")), "bearerToken"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": c.cardURL, "credentials": key(nil)})
			e.expect(r, http.StatusCreated)
			a := r.json(t)
			if a["credentialKind"] != "awsSigV4" || a["credentialsSet"] != true {
				t.Errorf("registered with an AWS key: credentialKind %v, credentialsSet %v", a["credentialKind"], a["credentialsSet"])
			}
			id := a["id"].(string)
			g := e.do("GET", "/v1/agents/"+id, token, nil)
			e.expect(g, http.StatusOK)
			if got := g.json(t)["credentialKind"]; got != "awsSigV4" {
				t.Errorf("GET credentialKind = %v", got)
			}
			bodies = append(bodies, string(r.body), string(g.body))
			// Back to the kind the card asks for: credentialKind says the card's again.
			if c.asked == "apiKey" {
				p := e.do("PATCH", "/v1/agents/"+id, token, map[string]any{"credentials": map[string]any{"apiKey": "k-123"}})
				e.expect(p, http.StatusOK)
				if got := p.json(t)["credentialKind"]; got != c.asked {
					t.Errorf("after an API key replaced the AWS key: credentialKind %v, want %s", got, c.asked)
				}
			}
		})
	}

	target := e.do("POST", "/v1/agents", token, map[string]any{"cardUrl": e.cards.Set("/sigv4-open.json", card("Open", "text/plain"))})
	e.expect(target, http.StatusCreated)
	id := target.json(t)["id"].(string)
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no_access_key_id", key(map[string]any{"accessKeyId": nil}), "credentials.awsSigV4.accessKeyId"},
		{"access_key_id_lower_case", key(map[string]any{"accessKeyId": "akiaiosfodnn7example"}), "credentials.awsSigV4.accessKeyId"},
		{"no_secret", key(map[string]any{"secretAccessKey": nil}), "credentials.awsSigV4.secretAccessKey"},
		{"secret_with_space", key(map[string]any{"secretAccessKey": "a b"}), "credentials.awsSigV4.secretAccessKey"},
		{"token_with_newline", key(map[string]any{"sessionToken": "a\nb"}), "credentials.awsSigV4.sessionToken"},
		{"no_region", key(map[string]any{"region": nil}), "credentials.awsSigV4.region"},
		{"region_not_a_region", key(map[string]any{"region": "EU West"}), "credentials.awsSigV4.region"},
		{"service_not_a_name", key(map[string]any{"service": "bedrock agentcore"}), "credentials.awsSigV4.service"},
		{"unknown_member", key(map[string]any{"roleArn": "arn:aws:iam::1:role/x"}), "credentials.awsSigV4.roleArn"},
		{"with_another_kind", map[string]any{"awsSigV4": key(nil)["awsSigV4"], "apiKey": "k"}, "credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("PATCH", "/v1/agents/"+id, token, map[string]any{"credentials": c.body})
			e.expect(r, http.StatusBadRequest)
			if got := r.json(t)["field"]; got != c.field {
				t.Errorf("field = %v, want %s; body %s", got, c.field, r.body)
			}
			bodies = append(bodies, string(r.body))
		})
	}
	for _, s := range []string{secretKey, sessionToken} {
		if strings.Contains(e.logs.String(), s) {
			t.Error("an AWS secret is in the logs")
		}
		for _, b := range bodies {
			if strings.Contains(b, s) {
				t.Errorf("an AWS secret is in an answer: %s", b)
			}
		}
	}
}
