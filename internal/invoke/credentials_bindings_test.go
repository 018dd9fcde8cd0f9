package invoke_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
)

// The credential kinds beyond the API key on the HTTP+JSON and gRPC bindings: a bearer token and an OAuth2
// access token reach the agent in the Authorization header (HTTP+JSON) and the authorization
// metadata (gRPC), the API key under its header name on both; a refusal (REST 401, gRPC
// UNAUTHENTICATED) of an OAuth2 token costs one refetch and one retry, and a second refusal
// ends the turn agent_unauthorized; no secret reaches the logs.

// guard is what an agent in front of which it stands accepts, and what it saw.
type guard struct {
	name, want string // the header (metadata key, lowercased) and the value it needs; want "" with check
	check      func(v string) bool
	refuseAll  atomic.Bool
	refused    atomic.Int32
	mu         sync.Mutex
	seen       []string
}

func (g *guard) allow(v string) bool {
	g.mu.Lock()
	g.seen = append(g.seen, v)
	g.mu.Unlock()
	ok := !g.refuseAll.Load() && v != "" && (g.check != nil && g.check(v) || g.check == nil && v == g.want)
	if !ok {
		g.refused.Add(1)
	}
	return ok
}

// guardedREST is an HTTP+JSON fixture agent behind g, answering 401 as API gateways do.
func guardedREST(t *testing.T, g *guard) string {
	t.Helper()
	fx := fixtureagent.NewREST(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.allow(r.Header.Get(g.name)) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/a2a"
}

// guardedGRPC is a real gRPC A2AService on loopback behind g, answering UNAUTHENTICATED; a
// stream it lets through is a task, one text chunk and a completed status.
func guardedGRPC(t *testing.T, g *guard) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		if !g.allow(strings.Join(md.Get(g.name), ",")) {
			return status.Error(codes.Unauthenticated, "invalid credentials")
		}
		return h(srv, ss)
	}))
	a2apb.RegisterA2AServiceServer(gs, oneChunkAgent{})
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(ln) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return "http://" + ln.Addr().String()
}

type oneChunkAgent struct {
	a2apb.UnimplementedA2AServiceServer
}

func (oneChunkAgent) SendStreamingMessage(req *a2apb.SendMessageRequest, s grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	ctxID := req.GetMessage().GetContextId()
	if ctxID == "" {
		ctxID = "ctx-1"
	}
	for _, ev := range []*a2apb.StreamResponse{
		{Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{Id: "task-1", ContextId: ctxID, Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_SUBMITTED}}}},
		{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{TaskId: "task-1", ContextId: ctxID,
			Artifact: &a2apb.Artifact{ArtifactId: "a", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: fixtureagent.StreamText(1)}}}}}}},
		{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{TaskId: "task-1", ContextId: ctxID,
			Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED}}}},
	} {
		if err := s.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

// guardedBindings are the two bindings under test, each started behind a guard.
var guardedBindings = []struct {
	binding string
	header  string // what carries the credential: header name or metadata key
	start   func(*testing.T, *guard) string
}{
	{binding: "HTTP+JSON", header: "Authorization", start: guardedREST},
	{binding: "GRPC", header: "authorization", start: guardedGRPC},
}

func boundAgent(url, binding string) connector.Agent {
	a := agentAt(url, true)
	a.ProtocolVersion, a.EndpointBinding = "1.0", binding
	return a
}

func TestBearerTokenOnEveryBinding(t *testing.T) {
	t.Parallel()
	for _, b := range guardedBindings {
		t.Run(b.binding, func(t *testing.T) {
			t.Parallel()
			g := &guard{name: b.header, want: "Bearer " + bearerTestSecret}
			h := newHarness(t, nil)
			a := boundAgent(b.start(t, g), b.binding)
			a.CredentialSetKind, a.CredentialKind, a.CredentialRequired = connector.CredentialKindBearerToken, connector.CredentialKindBearerToken, true
			key := sealCredential(t, h.box, a.ID, credential.Credential{Kind: connector.CredentialKindBearerToken, Secret: bearerTestSecret})
			res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "m1", Text: "hi"})
			if res.Outcome != connector.OutcomeCompleted {
				t.Fatalf("turn: %s %+v (agent saw %q)", res.Outcome, res.Err, g.seen)
			}
			// A refused bearer token has nothing to refetch: agent_unauthorized at once.
			g.refuseAll.Store(true)
			res, _ = h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "m2", Text: "hi"})
			if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnauthorized {
				t.Errorf("refused turn: %s %+v, want FAILED agent_unauthorized", res.Outcome, res.Err)
			}
			if strings.Contains(h.logs.String(), bearerTestSecret) {
				t.Error("the bearer token is in the logs")
			}
		})
	}
}

func TestOAuth2OnEveryBinding(t *testing.T) {
	t.Parallel()
	srv := startOAuthServer(t, "3600")
	verifier := startTokenAgent(t, srv.URL) // only its JWKS check is used here
	issued := 0
	for _, b := range guardedBindings {
		t.Run(b.binding, func(t *testing.T) {
			// Not parallel: the token server counts the tokens of both subtests.
			g := &guard{name: b.header, check: verifier.verify}
			h := newHarness(t, func(o *invoke.Options) {
				o.Tokens = credential.NewTokens(credential.TokensOptions{Client: loopbackClient(t)})
			})
			a := boundAgent(b.start(t, g), b.binding)
			o := oauthAgent(a.EndpointURL, srv.URL+"/token")
			o.ProtocolVersion, o.EndpointBinding, o.Streaming = a.ProtocolVersion, a.EndpointBinding, true
			key := sealCredential(t, h.box, o.ID, credential.Credential{Kind: connector.CredentialKindOAuth2,
				OAuth2: &credential.OAuth2Client{ClientID: oauthClientID, ClientSecret: oauthSecret}})
			turn := func(id string) connector.TurnResult {
				res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &o, Credential: key, MessageID: id, Text: "hi"})
				return res
			}
			wantIssued := func(n int) {
				t.Helper()
				if got := srv.issuedAtLeast(issued + n); got != issued+n {
					t.Errorf("tokens issued = %d, want %d", got-issued, n)
				}
			}
			for i := range 2 {
				if res := turn("m" + string(rune('a'+i))); res.Outcome != connector.OutcomeCompleted {
					t.Fatalf("turn %d: %s %+v", i, res.Outcome, res.Err)
				}
			}
			wantIssued(1) // the token is reused

			verifier.revokeSeen()
			before := g.refused.Load()
			if res := turn("m-after-revoke"); res.Outcome != connector.OutcomeCompleted {
				t.Fatalf("turn after the agent refused the token: %s %+v", res.Outcome, res.Err)
			}
			if n := g.refused.Load() - before; n != 1 {
				t.Errorf("agent refused %d calls, want 1 (then the retry with a new token)", n)
			}
			wantIssued(2)

			g.refuseAll.Store(true)
			before = g.refused.Load()
			res := turn("m-refused")
			if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnauthorized {
				t.Errorf("refused turn: %s %+v, want FAILED agent_unauthorized", res.Outcome, res.Err)
			}
			if n := g.refused.Load() - before; n != 2 {
				t.Errorf("agent refused %d calls, want 2 (the call and its one retry)", n)
			}
			wantIssued(3)
			issued = srv.issued()

			logs := h.logs.String()
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, v := range g.seen {
				if tok, ok := strings.CutPrefix(v, "Bearer "); ok && strings.Contains(logs, tok) {
					t.Error("an access token is in the logs")
				}
			}
			if strings.Contains(logs, oauthSecret) {
				t.Error("the client secret is in the logs")
			}
		})
	}
}

func TestAPIKeyOnEveryBindingNeverLogged(t *testing.T) {
	t.Parallel()
	for _, b := range guardedBindings {
		t.Run(b.binding, func(t *testing.T) {
			t.Parallel()
			name := connector.APIKeyHeader
			if b.binding == "GRPC" {
				name = strings.ToLower(name)
			}
			g := &guard{name: name, want: testAPIKey}
			h := newHarness(t, nil)
			a := boundAgent(b.start(t, g), b.binding)
			res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: "m1", Text: "hi"})
			if res.Outcome != connector.OutcomeCompleted {
				t.Fatalf("turn: %s %+v (agent saw %d values)", res.Outcome, res.Err, len(g.seen))
			}
			g.refuseAll.Store(true)
			res, _ = h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: "m2", Text: "hi"})
			if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnauthorized {
				t.Errorf("refused turn: %s %+v, want FAILED agent_unauthorized", res.Outcome, res.Err)
			}
			// h.turn checks the logs for testAPIKey after every turn; say so once more here,
			// after a refusal, which is when an error with the request in it would be logged.
			if strings.Contains(h.logs.String(), testAPIKey) {
				t.Error("the API key is in the logs")
			}
		})
	}
}
