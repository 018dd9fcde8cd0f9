package invoke_test

import (
	"bytes"
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

	for _, kind := range []string{connector.CredentialKindAPIKey, connector.CredentialKindOAuth2, connector.CredentialKindAWSSigV4} {
		b.Run(kind, func(b *testing.B) {
			h := newHarness(b, nil)
			a := agentAt(srv.URL, false)
			var key *connector.Sealed
			switch kind {
			case connector.CredentialKindAPIKey:
				key = h.seal(b, a.ID)
			case connector.CredentialKindAWSSigV4:
				// The fixture agent checks no signature: this is the connector's signing cost.
				a.CredentialSetKind = kind
				key = sealCredential(b, h.box, a.ID, credential.Credential{Kind: kind, AWS: &sigv4Key})
			default:
				a = oauthAgent(srv.URL, tokenSrv.URL+"/token")
				key = sealCredential(b, h.box, a.ID, credential.Credential{Kind: kind,
					OAuth2: &credential.OAuth2Client{ClientID: "c", ClientSecret: "s"}})
			}
			req := connector.TurnRequest{Agent: &a, Credential: key, MessageID: "bench", Text: "hi"}
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

// BenchmarkAuthorizeSigV4 is what SigV4 costs one call of a turn before it goes on the wire:
// the sealed key opened and read (per turn, unless cached), the signature of a JSON-RPC POST
// of ~1 KiB.
func BenchmarkAuthorizeSigV4(b *testing.B) {
	h := newHarness(b, nil)
	a := agentAt("https://agent.example/a2a", false)
	a.CredentialSetKind = connector.CredentialKindAWSSigV4
	sealed := sealCredential(b, h.box, a.ID, credential.Credential{Kind: connector.CredentialKindAWSSigV4, AWS: &sigv4Key})
	body := bytes.Repeat([]byte("x"), 1024)
	req, err := http.NewRequest(http.MethodPost, a.EndpointURL, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	b.ReportAllocs()
	for b.Loop() {
		sign, err := h.inv.Authorizer(b.Context(), &a, sealed)
		if err != nil {
			b.Fatal(err)
		}
		if err := sign(req, body); err != nil {
			b.Fatal(err)
		}
	}
}
