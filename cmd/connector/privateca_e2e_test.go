package main

import (
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// Agents behind a private CA, with certificates of a CA made by the test: an A2A 0.3 JSON-RPC
// agent over HTTPS (the demo agent), an a2a-go v0.3.15 agent over gRPC with TLS, and a plain-http
// agent whose OAuth 2.0 token endpoint is on that CA. A connector without A2AC_AGENT_CA_FILE
// cannot verify them: each turn fails, saying the certificate was not accepted; with the CA's
// file each one converses.
func TestAgentsBehindAPrivateCA(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	demo := httptest.NewUnstartedServer(agent.New(agent.Options{}).Handler())
	demo.TLS = ca.ServerTLS(t)
	demo.StartTLS()
	t.Cleanup(demo.Close)
	const key = "sk-private-ca"
	grpcPeer := sdkagent.NewV03(t, sdkagent.OptionsV03{TLS: ca.ServerTLS(t), APIKey: key})
	oauthCard, oauthClient := oauthAgentWithPrivateTokenURL(t, ca)
	// Registration (the console's part) trusts the CA either way; the connectors under test
	// differ only in the setting.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	caFile := ca.File(t)

	for _, tc := range []struct {
		name    string
		env     map[string]string
		trusted bool
	}{
		{name: "without_the_setting", env: map[string]string{}},
		{name: "with_A2AC_AGENT_CA_FILE", env: map[string]string{"A2AC_AGENT_CA_FILE": caFile}, trusted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startStack(t, tc.env)
			// Each agent with a request it completes: the demo agent repeats what it is told.
			for _, peer := range []struct {
				name, cardURL string
				cred          *credential.Credential
				say           string
			}{
				{"json-rpc over https", demo.URL + agent.CardPath, nil, "重复我说的话：你好"},
				{"grpc over tls", grpcPeer.CardURL, &credential.Credential{Kind: connector.CredentialKindAPIKey, Secret: key}, "weather please"},
				{"oauth2 token url over https", oauthCard, oauthClient, "hello"},
			} {
				a, _ := s.registerWithCredential(t, peer.cardURL, peer.cred, roots)
				r := s.turn(t, "private-ca-"+strings.ReplaceAll(peer.name, " ", "-"), a.ID, peer.say)
				if tc.trusted {
					if r.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
						t.Errorf("%s with the CA: %v %v", peer.name, r.final.GetOutcome(), r.final.GetError())
					}
					continue
				}
				e := r.final.GetError()
				if r.final.GetOutcome() != pb.Outcome_OUTCOME_FAILED || e.GetCode() != connector.CodeAgentUnreachable ||
					!strings.Contains(e.GetMessage(), "certificate was not accepted") {
					t.Errorf("%s without the CA: %v %s %q, want a failed turn saying the certificate was not accepted",
						peer.name, r.final.GetOutcome(), e.GetCode(), e.GetMessage())
				}
			}
		})
	}
}

// oauthAgentWithPrivateTokenURL starts a fixture agent over plain http that wants an OAuth 2.0
// access token, and a token endpoint (client credentials, written by hand) over HTTPS with a
// certificate of ca. It returns the agent's card URL and the credential to register.
func oauthAgentWithPrivateTokenURL(t *testing.T, ca *testca.CA) (string, *credential.Credential) {
	t.Helper()
	const clientID, clientSecret, token = "connector", "client-secret-ca", "token-private-ca"
	tokens := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		if id == "" {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if id != clientID || secret != clientSecret {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"`+token+`","token_type":"Bearer","expires_in":3600}`)
	}))
	tokens.TLS = ca.ServerTLS(t)
	tokens.StartTLS()
	t.Cleanup(tokens.Close)

	fx := fixtureagent.New(t)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/card.json" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"name": "OAuth agent", "description": "Wants a token.", "protocolVersion": "0.3.0", "version": "1",
				"url": srv.URL + "/a2a", "capabilities": map[string]any{"streaming": true},
				"defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
				"skills": []any{map[string]any{"id": "s", "name": "S", "description": "d", "tags": []any{"t"}}},
				"securitySchemes": map[string]any{"oauth": map[string]any{"type": "oauth2", "flows": map[string]any{
					"clientCredentials": map[string]any{"tokenUrl": tokens.URL + "/token", "scopes": map[string]any{}}}}},
				"security": []any{map[string]any{"oauth": []any{}}},
			})
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/card.json", &credential.Credential{Kind: connector.CredentialKindOAuth2,
		OAuth2: &credential.OAuth2Client{ClientID: clientID, ClientSecret: clientSecret}}
}
