package invoke_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

const (
	oauthServerDir   = "testdata/oauth-server"
	oauthClientID    = "connector-test"
	oauthSecret      = "client-SECRET-0815"
	bearerTestSecret = "bearer-SECRET-1234"
)

// oauthServer is testdata/oauth-server: oauth2-mock-server from npm, checking the client and
// signing client-credentials JWTs with a key it serves at /jwks.
type oauthServer struct {
	URL  string
	proc *nodeProcess
	out  *readyWriter
}

// readyWriter collects a program's stdout and hands over its first JSON line.
type readyWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan string
	sent  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok {
			var v struct{ URL string }
			if json.Unmarshal([]byte(line), &v) == nil && v.URL != "" {
				w.ready <- v.URL
				w.sent = true
			}
		}
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func startOAuthServer(t *testing.T, ttlSeconds string) *oauthServer {
	t.Helper()
	out := &readyWriter{ready: make(chan string, 1)}
	p := startNode(t, oauthServerDir, out, "server.mjs", oauthClientID, oauthSecret, ttlSeconds)
	url := awaitReady(t, p, out.ready)
	return &oauthServer{URL: url, proc: p, out: out}
}

// issued is how many tokens the server gave out, as far as its output was read.
func (s *oauthServer) issued() int { return strings.Count(s.out.String(), "issued ") }

// issuedAtLeast is issued once it reaches n, or after 10 s: the server prints "issued" before it
// answers, but its output is read on another goroutine, which may not have got to that line
// when the token has already been used.
func (s *oauthServer) issuedAtLeast(n int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.issued()
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// command sends a line to the server ("revoke", "ttl 5") and waits for its acknowledgement.
func (s *oauthServer) command(t *testing.T, cmd string) {
	t.Helper()
	name, _, _ := strings.Cut(cmd, " ")
	before := strings.Count(s.out.String(), "ok "+name)
	if _, err := s.proc.stdin.Write([]byte(cmd + "\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(s.out.String(), "ok "+name) == before {
		if time.Now().After(deadline) {
			t.Fatalf("oauth server did not acknowledge %q", cmd)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tokenAgent is a fixture agent behind a resource server that verifies each call's bearer JWT
// with go-jose against the authorization server's JWKS (signature, issuer, expiry), and that
// can revoke the tokens it has seen.
type tokenAgent struct {
	URL      string
	jwks     jose.JSONWebKeySet
	issuer   string
	mu       sync.Mutex
	seen     map[string]bool // raw token -> revoked
	accepted atomic.Int32
	refused  atomic.Int32
}

func startTokenAgent(t *testing.T, issuer string) *tokenAgent {
	t.Helper()
	resp, err := http.Get(issuer + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := &tokenAgent{issuer: issuer, seen: map[string]bool{}}
	if err := json.NewDecoder(resp.Body).Decode(&a.jwks); err != nil {
		t.Fatalf("jwks: %v", err)
	}
	fx := fixtureagent.New(t)
	fx.SetBehavior(fixtureagent.Send)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.verify(r.Header.Get("Authorization")) {
			a.refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		a.accepted.Add(1)
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL + "/a2a"
	return a
}

func (a *tokenAgent) verify(authz string) bool {
	raw, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		return false
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return false
	}
	keys := a.jwks.Key(tok.Headers[0].KeyID)
	if len(keys) == 0 {
		return false
	}
	var claims jwt.Claims
	if err := tok.Claims(keys[0].Key, &claims); err != nil {
		return false
	}
	if claims.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, Time: time.Now()}, 0) != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	revoked := a.seen[raw]
	a.seen[raw] = revoked
	return !revoked
}

// revokeSeen refuses every token seen so far from now on.
func (a *tokenAgent) revokeSeen() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.seen {
		a.seen[k] = true
	}
}

func sealCredential(t testing.TB, box *secret.Box, agentID string, c credential.Credential) *connector.Sealed {
	t.Helper()
	plain, err := c.Plaintext()
	if err != nil {
		t.Fatal(err)
	}
	s, err := box.Seal(agentID, plain)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func oauthAgent(url, tokenURL string) connector.Agent {
	a := agentAt(url, false)
	a.CredentialSetKind = connector.CredentialKindOAuth2
	a.CredentialKind, a.CredentialKinds, a.CredentialRequired = connector.CredentialKindOAuth2, []string{connector.CredentialKindOAuth2}, true
	a.OAuth2TokenURL, a.OAuth2Scopes = tokenURL, []string{"a2a"}
	return a
}

// TestOAuth2ClientCredentials runs turns against an agent that verifies tokens from a real
// OAuth 2.0 server: one token for many turns (a 10-second one too), one request for
// concurrent turns, a new token after expiry, one refetch and retry after a 401, and
// agent_unauthorized once the client is revoked. No secret reaches the logs or the errors.
func TestOAuth2ClientCredentials(t *testing.T) {
	t.Parallel()
	srv := startOAuthServer(t, "10")
	agent := startTokenAgent(t, srv.URL)
	clock := &fakeClock{now: time.Now()} // breaker_test.go
	h := newHarness(t, func(o *invoke.Options) {
		o.Tokens = credential.NewTokens(credential.TokensOptions{Client: loopbackClient(t), Now: clock.Now})
	})
	a := oauthAgent(agent.URL, srv.URL+"/token")
	key := sealCredential(t, h.box, a.ID, credential.Credential{Kind: connector.CredentialKindOAuth2,
		OAuth2: &credential.OAuth2Client{ClientID: oauthClientID, ClientSecret: oauthSecret}})
	turn := func(t *testing.T) connector.TurnResult {
		t.Helper()
		res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "m-" + time.Now().Format(time.RFC3339Nano), Text: "hi"})
		return res
	}
	wantIssued := func(t *testing.T, n int) {
		t.Helper()
		if got := srv.issuedAtLeast(n); got != n {
			t.Errorf("tokens issued = %d, want %d", got, n)
		}
	}

	t.Run("concurrent_turns_share_one_token_request", func(t *testing.T) {
		var wg sync.WaitGroup
		results := make([]*connector.TurnResult, 6)
		for i := range results {
			wg.Go(func() {
				results[i] = h.inv.Turn(t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "c" + string(rune('a'+i)), Text: "hi"}, nil)
			})
		}
		wg.Wait()
		for i, r := range results {
			if r.Outcome != connector.OutcomeCompleted {
				t.Errorf("turn %d: %s %+v", i, r.Outcome, r.Err)
			}
		}
		wantIssued(t, 1)
	})
	t.Run("the_10_second_token_is_reused_across_turns", func(t *testing.T) {
		clock.Add(5 * time.Second)
		if res := turn(t); res.Outcome != connector.OutcomeCompleted {
			t.Fatalf("turn: %s %+v", res.Outcome, res.Err)
		}
		wantIssued(t, 1)
	})
	t.Run("a_new_token_after_expiry", func(t *testing.T) {
		clock.Add(5 * time.Second) // 10 s after the fetch: past its end
		if res := turn(t); res.Outcome != connector.OutcomeCompleted {
			t.Fatalf("turn: %s %+v", res.Outcome, res.Err)
		}
		wantIssued(t, 2)
	})
	t.Run("a_401_costs_one_refetch_and_one_retry", func(t *testing.T) {
		agent.revokeSeen()
		refusedBefore := agent.refused.Load()
		if res := turn(t); res.Outcome != connector.OutcomeCompleted {
			t.Fatalf("turn: %s %+v", res.Outcome, res.Err)
		}
		wantIssued(t, 3)
		if got := agent.refused.Load() - refusedBefore; got != 1 {
			t.Errorf("agent refused %d calls, want 1", got)
		}
	})
	t.Run("revoked_client_is_agent_unauthorized", func(t *testing.T) {
		srv.command(t, "revoke")
		agent.revokeSeen()
		res := turn(t)
		if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnauthorized {
			t.Fatalf("turn: %s %+v, want FAILED agent_unauthorized", res.Outcome, res.Err)
		}
		if !strings.Contains(res.Err.Message, "invalid_client") {
			t.Errorf("message does not say what the token endpoint said: %q", res.Err.Message)
		}
	})

	logs := h.logs.String()
	agent.mu.Lock()
	defer agent.mu.Unlock()
	for raw := range agent.seen {
		if strings.Contains(logs, raw) {
			t.Error("an access token is in the logs")
		}
	}
	if strings.Contains(logs, oauthSecret) {
		t.Error("the client secret is in the logs")
	}
}

// TestOAuth2TokenURLOnBlockedAddressIsNeverContacted: the token request goes through the SSRF
// guard, which refuses a loopback token URL before dialing.
func TestOAuth2TokenURLOnBlockedAddressIsNeverContacted(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })

	fx := fixtureagent.New(t)
	// The agent is reachable (loopback allowed for agent calls); token requests use the
	// production policy, where loopback is blocked.
	guarded := netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true}, netguard.ClientOptions{})
	h := newHarness(t, func(o *invoke.Options) {
		o.Tokens = credential.NewTokens(credential.TokensOptions{Client: guarded})
	})
	a := oauthAgent(fx.URL, "http://"+ln.Addr().String()+"/token")
	key := sealCredential(t, h.box, a.ID, credential.Credential{Kind: connector.CredentialKindOAuth2,
		OAuth2: &credential.OAuth2Client{ClientID: oauthClientID, ClientSecret: oauthSecret}})
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "m1", Text: "hi"})
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeBlockedAddress {
		t.Fatalf("turn: %s %+v, want FAILED blocked_address", res.Outcome, res.Err)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the blocked token URL was contacted %d times", n)
	}
	if len(fx.Requests()) != 0 {
		t.Error("the agent was called without a token")
	}
}

// TestBearerToken: every call carries Authorization: Bearer with the stored token.
func TestBearerToken(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	fx := fixtureagent.New(t)
	fx.SetBehavior(fixtureagent.Send)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t, nil)
	a := agentAt(srv.URL+"/a2a", false)
	a.CredentialSetKind, a.CredentialKind, a.CredentialRequired = connector.CredentialKindBearerToken, connector.CredentialKindBearerToken, true
	key := sealCredential(t, h.box, a.ID, credential.Credential{Kind: connector.CredentialKindBearerToken, Secret: bearerTestSecret})
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "m1", Text: "hi"})
	if res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("turn: %s %+v", res.Outcome, res.Err)
	}
	if v, _ := got.Load().(string); v != "Bearer "+bearerTestSecret {
		t.Errorf("Authorization = %q", v)
	}
	if strings.Contains(h.logs.String(), bearerTestSecret) {
		t.Error("the bearer token is in the logs")
	}
}
