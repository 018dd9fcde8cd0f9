package credential_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

func loopbackClient(t *testing.T) *http.Client {
	c := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
		netguard.ClientOptions{})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// googleTokenEndpoint is a token endpoint speaking the JWT-bearer grant (RFC 7523) as Google's
// does: it verifies the assertion with the service account's public key and checks its claims.
// (Google's own endpoint cannot be reached from tests; the client side is golang.org/x/oauth2's.)
func googleTokenEndpoint(t *testing.T, pub *rsa.PublicKey, email string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error": "unsupported_grant_type"}`))
			return
		}
		tok, err := jwt.ParseSigned(r.Form.Get("assertion"), []jose.SignatureAlgorithm{jose.RS256})
		var claims struct {
			jwt.Claims
			Scope string `json:"scope"`
		}
		if err != nil || tok.Claims(pub, &claims) != nil || claims.Issuer != email || claims.Scope != credential.GoogleScope {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token": "ya29.test-` + claims.ID + `", "expires_in": 3599, "token_type": "Bearer"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func serviceAccountKey(t *testing.T, key *rsa.PrivateKey, email, tokenURI string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "kid-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1", "token_uri": tokenURI,
	})
	return string(b)
}

// TestGoogleServiceAccount: a service account key gets an access token by the JWT-bearer grant
// from its token_uri, once for concurrent callers, and reuses it.
func TestGoogleServiceAccount(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const email = "agent-caller@p.iam.gserviceaccount.com"
	srv, requests := googleTokenEndpoint(t, &key.PublicKey, email)
	cred := credential.Credential{Kind: connector.CredentialKindGoogleServiceAccount, Secret: serviceAccountKey(t, key, email, srv.URL+"/token")}
	if err := cred.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	tokens := credential.NewTokens(credential.TokensOptions{Client: loopbackClient(t)})
	var wg sync.WaitGroup
	got := make([]string, 5)
	for i := range got {
		wg.Go(func() {
			tok, err := tokens.Token(t.Context(), credential.Target{AgentID: "a1", Cred: cred})
			if err != nil {
				t.Errorf("Token: %v", err)
			}
			got[i] = tok
		})
	}
	wg.Wait()
	for _, tok := range got {
		if !strings.HasPrefix(tok, "ya29.test-") || tok != got[0] {
			t.Fatalf("tokens = %v", got)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("token requests = %d, want 1", n)
	}
}

// TestTokenErrorSaysWhatTheEndpointSaid: a refused client is a *TokenError with the endpoint's
// error code, and neither the secret nor the body is in its text.
func TestTokenErrorSaysWhatTheEndpointSaid(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-never-shown"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error": "invalid_client", "error_description": "echo ` + secret + `"}`))
	}))
	t.Cleanup(srv.Close)
	tokens := credential.NewTokens(credential.TokensOptions{Client: loopbackClient(t)})
	_, err := tokens.Token(t.Context(), credential.Target{AgentID: "a1", TokenURL: srv.URL + "/token?x=1",
		Cred: credential.Credential{Kind: connector.CredentialKindOAuth2, OAuth2: &credential.OAuth2Client{ClientID: "c", ClientSecret: secret}}})
	te, ok := errors.AsType[*credential.TokenError](err)
	if !ok || te.Code != "invalid_client" || te.Status != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a TokenError invalid_client 401", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "x=1") {
		t.Errorf("error text shows the secret or the query: %q", err)
	}
}
