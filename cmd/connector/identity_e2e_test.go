package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/console"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/identity/identitytest"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

// The caller's identity end to end: the connector binary's HandleTurn names a user; agents on
// every binding (JSON-RPC 0.x and 1.0, HTTP+JSON, gRPC) registered with callerIdentity receive
// the platform's token and verify it, in Go (go-jose) and in JavaScript (npm jose), from the
// JWKS a running console server publishes over HTTP, before and after a key rotation.
func TestCallerIdentity_end_to_end_on_every_binding_and_across_a_rotation(t *testing.T) {
	t.Parallel()
	const adminToken = "identity-admin-token-0123456789"
	// console-api: the same database and secret key as the connector; its URL is the issuer.
	var consoleHandler http.Handler
	consoleSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { consoleHandler.ServeHTTP(w, r) }))
	t.Cleanup(consoleSrv.Close)
	issuerURL := consoleSrv.URL
	// A database of its own: the identity keys are global to a database and sealed with this
	// stack's secret key.
	s := startStack(t, map[string]string{"A2AC_IDENTITY_ISSUER": issuerURL}, withDB(testDB.NewDatabase(t)))
	box, err := secret.New(s.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	consoleIssuer := identity.New(identity.Options{Keys: s.store, Secrets: box, Issuer: issuerURL})
	consoleHandler = console.New(console.Config{Store: s.store, Secrets: box, AdminToken: adminToken, Identity: consoleIssuer,
		Logger: slog.New(slog.DiscardHandler)}).Handler()
	jwksURL := consoleSrv.URL + "/.well-known/jwks.json"

	otherTenant, err := s.store.CreateTenant(t.Context(), "identity other "+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	type peer struct {
		name string
		fx   *fixtureagent.Server
	}
	peers := []peer{
		{"jsonrpc-0.2.5", fixtureagent.New(t)},
		{"jsonrpc-1.0", fixtureagent.NewV1(t)},
		{"http+json-1.0", fixtureagent.NewREST(t)},
		{"grpc-1.0", fixtureagent.NewGRPC(t)},
	}
	register := func(tenantID string, fx *fixtureagent.Server, callerIdentity bool) connector.Agent {
		t.Helper()
		cardURL := fx.URL + "/card/" + uuid.NewString()[:8]
		a, err := s.store.CreateAgent(t.Context(), connector.NewAgent{
			ID: uuid.NewString(), TenantID: tenantID, CardURL: cardURL, ResolvedCardURL: cardURL,
			Card: json.RawMessage(`{"name":"identity"}`), Enabled: true, CallerIdentity: callerIdentity,
			Profile: connector.CardProfile{Name: "identity", ProtocolVersion: fx.ProtocolVersion(), EndpointURL: fx.URL,
				EndpointBinding: fx.Binding(), Streaming: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// lastToken runs a turn of tenant's agent a for user (none: "") and returns the identity
	// header of the agent's last request.
	lastToken := func(tenantID string, a connector.Agent, fx *fixtureagent.Server, user string) string {
		t.Helper()
		req := &pb.HandleTurnRequest{TenantId: tenantID, SessionId: uuid.NewString(), TurnId: uuid.NewString(), AgentId: a.ID, Text: "hello"}
		if user != "" {
			req.Caller = &pb.Caller{UserId: user}
		}
		r := s.request(t, req)
		if r.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
			t.Fatalf("turn: %v %v", r.final.GetOutcome(), r.final.GetError())
		}
		reqs := fx.Requests()
		if len(reqs) == 0 {
			t.Fatal("the agent saw no request")
		}
		return reqs[len(reqs)-1].Header.Get(identity.Header)
	}
	verify := func(tok, aud string) identitytest.Caller {
		t.Helper()
		c, err := identitytest.VerifyCaller(t.Context(), http.DefaultClient, jwksURL, issuerURL, aud, tok)
		if err != nil {
			t.Fatalf("verify against the console's JWKS: %v", err)
		}
		return c
	}

	const user = "platform-user-8d1f3c"
	var oldToken, oldAud, oldKID, sub string
	for _, p := range peers {
		a := register(s.tenant, p.fx, true)
		tok := lastToken(s.tenant, a, p.fx, user)
		if tok == "" {
			t.Fatalf("%s: no %s header on the agent's call", p.name, identity.Header)
		}
		c := verify(tok, a.CardURL)
		if time.Until(c.Claims.Expiry.Time()) > identity.TokenLifetime || c.Claims.Expiry.Time().Sub(c.Claims.IssuedAt.Time()) > 5*time.Minute {
			t.Errorf("%s: exp %v, iat %v: lives longer than 5 minutes", p.name, c.Claims.Expiry.Time(), c.Claims.IssuedAt.Time())
		}
		if sub == "" {
			sub, oldToken, oldAud, oldKID = c.Claims.Subject, tok, a.CardURL, c.KeyID
		} else if c.Claims.Subject != sub {
			t.Errorf("%s: sub %q, want the tenant's stable %q", p.name, c.Claims.Subject, sub)
		}
		if strings.Contains(tok, user) {
			t.Errorf("%s: the token carries the platform's user id", p.name)
		}
		// A turn that names no user sends no token; an agent that did not ask receives none.
		if got := lastToken(s.tenant, a, p.fx, ""); got != "" {
			t.Errorf("%s: a turn without a user sent a token", p.name)
		}
		plain := register(s.tenant, p.fx, false)
		if got := lastToken(s.tenant, plain, p.fx, user); got != "" {
			t.Errorf("%s: an agent without callerIdentity received a token", p.name)
		}
		// The same person through another tenant's agent is another sub.
		b := register(otherTenant.ID, p.fx, true)
		if c := verify(lastToken(otherTenant.ID, b, p.fx, user), b.CardURL); c.Claims.Subject == sub {
			t.Errorf("%s: two tenants see the same sub", p.name)
		}
	}
	js, err := identitytest.VerifyJS(t, jwksURL, issuerURL, oldAud, oldToken)
	if err != nil {
		t.Fatalf("jose (npm) refused the token: %v", err)
	}
	if js.User != sub || js.KeyID != oldKID {
		t.Errorf("jose read sub %q kid %q, want %q %q", js.User, js.KeyID, sub, oldKID)
	}

	// Rotation through the console API: tokens of the old key still verify, new ones carry the
	// new key once the connector has followed (it reads the keys every 5 s).
	rr, err := http.NewRequestWithContext(t.Context(), http.MethodPost, consoleSrv.URL+"/v1/identity/keys/rotate", nil)
	if err != nil {
		t.Fatal(err)
	}
	rr.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(rr)
	if err != nil {
		t.Fatal(err)
	}
	var rotated struct {
		SigningKeyID string `json:"signingKeyId"`
	}
	err = json.NewDecoder(resp.Body).Decode(&rotated)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || rotated.SigningKeyID == "" || rotated.SigningKeyID == oldKID {
		t.Fatalf("rotate: %s %+v %v", resp.Status, rotated, err)
	}
	verify(oldToken, oldAud)
	if _, err := identitytest.VerifyJS(t, jwksURL, issuerURL, oldAud, oldToken); err != nil {
		t.Errorf("jose refused the old key's token after the rotation: %v", err)
	}
	p := peers[len(peers)-1] // gRPC
	a := register(s.tenant, p.fx, true)
	deadline := time.Now().Add(20 * time.Second)
	var c identitytest.Caller
	var tok string
	for {
		tok = lastToken(s.tenant, a, p.fx, user)
		if c = verify(tok, a.CardURL); c.KeyID == rotated.SigningKeyID || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c.KeyID != rotated.SigningKeyID || c.Claims.Subject != sub {
		t.Fatalf("after the rotation: kid %q sub %q, want %q %q", c.KeyID, c.Claims.Subject, rotated.SigningKeyID, sub)
	}
	if js, err := identitytest.VerifyJS(t, jwksURL, issuerURL, a.CardURL, tok); err != nil || js.KeyID != rotated.SigningKeyID {
		t.Errorf("jose on the new key's token: %+v %v", js, err)
	}
	// The JWKS is public, cacheable for a minute, and names every key by kid.
	resp, err = http.Get(jwksURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
			Alg string `json:"alg"`
			D   string `json:"d"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	published := map[string]bool{}
	for _, k := range set.Keys {
		published[k.KID] = k.Alg == "ES256" && k.D == ""
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=60" || len(set.Keys) < 2 ||
		set.Keys[0].KID != rotated.SigningKeyID || !published[rotated.SigningKeyID] || !published[oldKID] {
		t.Errorf("JWKS: Cache-Control %q, keys %+v; want the new key first and the old one, ES256 public keys", cc, set.Keys)
	}
}
