package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// clientCredentialsServer is an OAuth 2.0 authorization server of the client-credentials grant
// (RFC 6749 §4.4), written by hand: any client id whose secret is secretOf(id) gets a fresh
// access token per request, valid until revoke. It counts the tokens issued per client.
type clientCredentialsServer struct {
	*httptest.Server
	mu      sync.Mutex
	valid   map[string]bool
	issued  map[string]int
	refused map[string]bool // clients whose every token the agent refuses
}

func secretOf(clientID string) string { return "secret-of-" + clientID }

func startClientCredentialsServer(t *testing.T) *clientCredentialsServer {
	t.Helper()
	s := &clientCredentialsServer{valid: map[string]bool{}, issued: map[string]int{}, refused: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		if id == "" {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if id == "" || secret != secretOf(id) {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		s.issued[id]++
		tok := fmt.Sprintf("at-%s/%d-%s", id, s.issued[id], uuid.NewString())
		s.valid[tok] = true
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"`+tok+`","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *clientCredentialsServer) accepts(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	client, _, _ := strings.Cut(strings.TrimPrefix(tok, "at-"), "/")
	return s.valid[tok] && !s.refused[client]
}

func (s *clientCredentialsServer) refuseClient(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[clientID] = true
}

// revoke makes every token issued to clientID so far invalid, as an authorization server does
// when its tokens are revoked or its signing key rotated.
func (s *clientCredentialsServer) revoke(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok := range s.valid {
		if strings.HasPrefix(tok, "at-"+clientID+"/") {
			delete(s.valid, tok)
		}
	}
}

func (s *clientCredentialsServer) issuedTo(clientID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued[clientID]
}

// An agent that wants an OAuth 2.0 access token, on every binding and both protocol
// generations (a2a-go v2's JSON-RPC, HTTP+JSON and gRPC in 1.0, and its 0.3 handlers),
// registered with a client id and secret the way console-api does and called through the
// connector binary's HandleTurn: the connector fetches a token once, reuses it across turns,
// fetches a new one once after the agent refuses a revoked one (and the turn completes), and
// ends a turn FAILED · agent_unauthorized when the client itself is refused. Neither the client
// secret nor any access token reaches the connector's logs.
func TestOAuth2AgentThroughHandleTurnOnEveryBinding(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := startStack(t, map[string]string{"A2AC_LOG_LEVEL": "debug"}, func(c *stackConfig) { c.stderr = logs })
	tokens := startClientCredentialsServer(t)
	oauth := &sdkagent.OAuth2{TokenURL: tokens.URL + "/token", Valid: tokens.accepts}
	v2 := sdkagent.New(t, sdkagent.Options{Streaming: true, Compat: true, REST: true, GRPC: true, GRPCV0: true, OAuth2: oauth})
	rest03 := sdkagent.New(t, sdkagent.Options{Streaming: true, RESTV0Only: true, OAuth2: oauth})
	host := fixtureagent.NewCardHost(t, false)

	for _, p := range []struct {
		name, cardURL, binding, version string
	}{
		{"jsonrpc-1.0", forceInterface(t, host, v2.CardURL, v2.V1URL, "1.0"), "JSONRPC", "1.0"},
		{"jsonrpc-0.3", forceInterface(t, host, v2.CardURL, v2.V0URL, "0.3"), "JSONRPC", "0.3"},
		{"http+json-1.0", forceInterface(t, host, v2.CardURL, v2.RESTURL, "1.0"), "HTTP+JSON", "1.0"},
		{"http+json-0.3", rest03.CardURL, "HTTP+JSON", "0.3"},
		{"grpc-1.0", forceInterface(t, host, v2.CardURL, v2.GRPCURL, "1.0"), "GRPC", "1.0"},
		{"grpc-0.3", forceInterface(t, host, v2.CardURL, v2.GRPCV0URL, "0.3"), "GRPC", "0.3"},
	} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			client := "client-" + strings.ReplaceAll(p.name, "+", "-") // no character Basic auth would escape
			a, _ := s.registerWithCredential(t, p.cardURL, &credential.Credential{Kind: connector.CredentialKindOAuth2,
				OAuth2: &credential.OAuth2Client{ClientID: client, ClientSecret: secretOf(client)}}, nil)
			if cmp.Or(a.EndpointBinding, "JSONRPC") != p.binding || !strings.HasPrefix(a.ProtocolVersion, p.version) || a.CredentialKind != connector.CredentialKindOAuth2 {
				t.Fatalf("registered A2A %s %q (credential %q), want %s over %s with an OAuth 2.0 client", a.ProtocolVersion, a.EndpointBinding, a.CredentialKind, p.version, p.binding)
			}
			completes := func(session string) {
				t.Helper()
				r := s.turn(t, session, a.ID, "weather please")
				wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
				if diff := gocmp.Diff(sdkagent.Chunks(), r.deltas); diff != "" {
					t.Errorf("%s: deltas (-want +got):\n%s", session, diff)
				}
			}
			completes("oauth-" + p.name + "-1")
			completes("oauth-" + p.name + "-2")
			if n := tokens.issuedTo(client); n != 1 {
				t.Errorf("tokens issued for two turns: %d, want 1 (the first one reused)", n)
			}

			// The agent stops accepting the token: one new token, the turn completes.
			tokens.revoke(client)
			completes("oauth-" + p.name + "-after-revoke")
			if n := tokens.issuedTo(client); n != 2 {
				t.Errorf("tokens issued after a revocation: %d, want 2", n)
			}

			// Every token refused, new ones included: one refetch, then agent_unauthorized.
			oauthRefuseAll(t, s, tokens, client, a.ID, p.name)
		})
	}
	t.Cleanup(func() {
		out := logs.String()
		tokens.mu.Lock()
		defer tokens.mu.Unlock()
		for tok := range tokens.valid {
			if strings.Contains(out, tok) {
				t.Error("an access token is in the connector's logs")
			}
		}
		if strings.Contains(out, "secret-of-") {
			t.Error("a client secret is in the connector's logs")
		}
	})
}

// oauthRefuseAll makes the agent refuse every token of the client, new ones included: the turn
// ends FAILED · agent_unauthorized after one refetch, with a message telling the tenant where to
// look.
func oauthRefuseAll(t *testing.T, s *stack, tokens *clientCredentialsServer, client, agentID, name string) {
	t.Helper()
	before := tokens.issuedTo(client)
	tokens.refuseClient(client)
	r := s.turn(t, "oauth-"+name+"-refused", agentID, "weather please")
	e := r.final.GetError()
	if r.final.GetOutcome() != pb.Outcome_OUTCOME_FAILED || e.GetCode() != connector.CodeAgentUnauthorized ||
		!strings.Contains(e.GetMessage(), "credentials") {
		t.Errorf("turn with every token refused: %v %s %q, want FAILED agent_unauthorized naming the credentials", r.final.GetOutcome(), e.GetCode(), e.GetMessage())
	}
	if n := tokens.issuedTo(client) - before; n != 1 {
		t.Errorf("tokens issued for a refused turn: %d, want 1 (one refetch, then the turn ends)", n)
	}
}
