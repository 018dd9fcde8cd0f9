package invoke_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// BenchmarkTurnCredential compares one send turn carrying an API key with one carrying a
// cached OAuth 2.0 access token: with the token cached, the turn makes no token request and
// should cost the same (the token endpoint here answers once; its count is checked).
func BenchmarkTurnCredential(b *testing.B) {
	var tokenRequests atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token": "bench-token", "token_type": "Bearer", "expires_in": 3600}`))
	}))
	b.Cleanup(tokenSrv.Close)
	srv := fixtureagent.New(b)
	srv.SetBehavior(fixtureagent.Send)

	for _, kind := range []string{connector.CredentialKindAPIKey, connector.CredentialKindOAuth2} {
		b.Run(kind, func(b *testing.B) {
			h := newHarness(b, nil)
			a := agentAt(srv.URL, false)
			var key *connector.Sealed
			if kind == connector.CredentialKindAPIKey {
				key = h.seal(b, a.ID)
			} else {
				a = oauthAgent(srv.URL, tokenSrv.URL+"/token")
				key = sealCredential(b, h.box, a.ID, credential.Credential{Kind: kind,
					OAuth2: &credential.OAuth2Client{ClientID: "c", ClientSecret: "s"}})
			}
			req := connector.TurnRequest{Agent: &a, APIKey: key, MessageID: "bench", Text: "hi"}
			b.ReportAllocs()
			for b.Loop() {
				if res := h.inv.Turn(b.Context(), req, nil); res.Outcome != connector.OutcomeCompleted {
					b.Fatalf("turn = %s %+v", res.Outcome, res.Err)
				}
			}
		})
	}
	if n := tokenRequests.Load(); n > 1 {
		b.Errorf("token requests = %d, want 1: a cached token was fetched again", n)
	}
}
