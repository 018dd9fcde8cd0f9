package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

var testDB *pgtest.DB

// TestMain runs the package against its own database and then checks that the real server
// left no goroutine behind: every test stops its connector, so nothing may remain.
func TestMain(m *testing.M) {
	code := pgtest.Run(m, &testDB)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// stack is a running connector (the real program's server, on a port the kernel chose) with the
// demo agent registered for a fresh tenant.
type stack struct {
	server *Main
	client pb.ConnectorClient
	conn   *grpc.ClientConn // the client's connection, for calls written byte by byte
	health healthpb.HealthClient
	demo   *agent.Agent
	tenant string
	agent  string
	store  *store.Store
	// demoURL is the demo agent's base URL (for benchmarks that call it directly).
	demoURL string
	// shutdown stops the connector as SIGTERM would and returns what its Close returned.
	shutdown func() error
	// registrar registers more agents for the stack's tenant.
	registrar
}

// registrar registers agents the way the console does: the card URL a tenant would paste is
// fetched (with discovery) and validated for real, and the API key sealed with the key the
// connector runs with.
type registrar struct {
	store     *store.Store
	tenant    string
	secretKey []byte
}

func (r registrar) register(t testing.TB, cardURL, apiKey string) connector.Agent {
	t.Helper()
	box, err := secret.New(r.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	svc := agents.New(agents.Config{Store: r.store, Secrets: box, Cards: cardfetch.New(cardfetch.Options{
		Client: netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true,
			AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, netguard.ClientOptions{MaxRedirects: 3}),
		AllowInsecureHTTP: true,
	})})
	a, _, err := svc.Register(t.Context(), r.tenant, cardURL, apiKey)
	if err != nil {
		t.Fatalf("register %s: %v", cardURL, err)
	}
	return a
}

// startConnector opens the real server as `connector serve` would, with the settings vars, on a
// port the kernel chooses (A2AC_GRPC_ADDR=127.0.0.1:0 unless vars sets it): a port picked here
// and bound later could be taken meanwhile by another test's connection. It returns once the
// server accepts turns. shutdown is what SIGTERM does, and returns Close's error; the test's
// cleanup calls it too.
func startConnector(t testing.TB, vars map[string]string, stderr io.Writer, tel telemetry.Options) (m *Main, shutdown func() error) {
	t.Helper()
	getenv := func(k string) string {
		if k == "A2AC_GRPC_ADDR" && vars[k] == "" {
			return "127.0.0.1:0"
		}
		return vars[k]
	}
	m, err := newMain(nil, getenv, cmp.Or(stderr, io.Writer(io.Discard)), tel)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(context.WithoutCancel(t.Context())); err != nil {
		t.Fatalf("open the connector: %v", errors.Join(err, m.Close()))
	}
	var once sync.Once
	var closeErr error
	shutdown = func() error {
		once.Do(func() { closeErr = m.Close() })
		return closeErr
	}
	t.Cleanup(func() {
		if err := shutdown(); err != nil {
			t.Errorf("connector close: %v", err)
		}
	})
	return m, shutdown
}

// stackConfig is what stackOptions change; by default the agent has no API key and telemetry
// comes from the (empty) OTEL_* environment.
type stackConfig struct {
	// apiKey, when set, is required by the demo agent and registered, sealed, with it.
	apiKey string
	// telemetry carries the test seams (span exporter, metric reader) into runWith.
	telemetry telemetry.Options
	// chunkDelay slows the demo agent's coach skill down.
	chunkDelay time.Duration
	// db, when set, replaces the package's database (a private cluster's, for outage tests).
	db *pgtest.DB
	// wrapAgent, when set, wraps the demo agent's handler (to act when a request arrives).
	wrapAgent func(http.Handler) http.Handler
	// stderr, when set, receives the connector's logs (set A2AC_LOG_LEVEL too).
	stderr io.Writer
	// voice: the demo agent declares the voice extension, as the demo-agent program does.
	voice bool
}

type stackOption func(*stackConfig)

func startStack(t testing.TB, env map[string]string, opts ...stackOption) *stack {
	t.Helper()
	ctx := t.Context()
	var sc stackConfig
	for _, o := range opts {
		o(&sc)
	}
	if sc.db == nil {
		sc.db = testDB
	}
	demo := agent.New(agent.Options{APIKey: sc.apiKey, ChunkDelay: sc.chunkDelay})
	if sc.voice {
		demo = agent.New(agent.Options{APIKey: sc.apiKey, ChunkDelay: sc.chunkDelay, VoiceExtension: agent.VoiceExtensionURI})
	}
	handler := demo.Handler()
	if sc.wrapAgent != nil {
		handler = sc.wrapAgent(handler)
	}
	demoSrv := httptest.NewServer(handler)
	t.Cleanup(demoSrv.Close)

	st := store.New(sc.db.Pool)
	tenant, err := st.CreateTenant(ctx, "e2e "+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	reg := registrar{store: st, tenant: tenant.ID, secretKey: key}
	a := reg.register(t, demoSrv.URL+agent.CardPath, sc.apiKey)

	vars := map[string]string{
		"DATABASE_URL":             sc.db.URL,
		"A2AC_SECRET_KEY":          base64.StdEncoding.EncodeToString(key),
		"A2AC_ALLOW_INSECURE_HTTP": "true",
		"A2AC_ALLOWED_CIDRS":       "127.0.0.0/8",
		"A2AC_LOG_LEVEL":           "error",
		"A2AC_TURN_TIMEOUT":        "10s",
		// No balancer reads these connectors' health: shut down without the drain delay
		// (drain_test.go sets it to test it).
		"A2AC_DRAIN_DELAY": "0",
		// Each test's stack is a deployment of its own, but the package's stacks share one
		// database, where sharing the caps would make them one deployment: caps per process,
		// unless a test on a database of its own (pgtest's Another) turns sharing on.
		"A2AC_CAP_SYNC": "0",
	}
	for k, v := range env {
		vars[k] = v
	}
	server, shutdown := startConnector(t, vars, sc.stderr, sc.telemetry)
	addr := server.GRPCAddr()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &stack{server: server, client: pb.NewConnectorClient(conn), conn: conn, health: healthpb.NewHealthClient(conn),
		demo: demo, tenant: tenant.ID, agent: a.ID, store: st, demoURL: demoSrv.URL, shutdown: shutdown, registrar: reg}
	// Open returned: the server listens and says SERVING.
	if res, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("connector health after Open: %v %v", res.GetStatus(), err)
	}
	return s
}

// turnResult is everything one HandleTurn stream said.
type turnResult struct {
	started *pb.TurnStarted
	deltas  []string
	states  []string
	// speech are the speech policies (voice agents only), in order.
	speech []*pb.SpeechPolicy
	final  *pb.TurnFinal
	// order names each event as it came: "started", "delta", "status", "speech", "final".
	order []string
}

func (s *stack) turn(t testing.TB, sessionID, agentID, text string) turnResult {
	t.Helper()
	res, err := s.tryTurn(t, sessionID, agentID, text)
	if err != nil {
		t.Fatalf("HandleTurn(%q): %v", text, err)
	}
	return res
}

func (s *stack) tryTurn(t testing.TB, sessionID, agentID, text string) (turnResult, error) {
	t.Helper()
	return s.tryRequest(t, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: sessionID,
		TurnId: uuid.NewString(), AgentId: agentID, Text: text})
}

// request is turn with the whole request written by the caller (voice fields, a turn id of its
// own).
func (s *stack) request(t testing.TB, req *pb.HandleTurnRequest) turnResult {
	t.Helper()
	res, err := s.tryRequest(t, req)
	if err != nil {
		t.Fatalf("HandleTurn(turn %s): %v", req.GetTurnId(), err)
	}
	return res
}

// tryRequest sends req and collects what the stream said.
func (s *stack) tryRequest(t testing.TB, req *pb.HandleTurnRequest) (turnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	stream, err := s.client.HandleTurn(ctx, req)
	if err != nil {
		return turnResult{}, err
	}
	var r turnResult
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return r, err
		}
		switch e := ev.GetEvent().(type) {
		case *pb.TurnEvent_Started:
			r.started = e.Started
			r.order = append(r.order, "started")
		case *pb.TurnEvent_TextDelta:
			r.deltas = append(r.deltas, e.TextDelta.GetText())
			r.order = append(r.order, "delta")
		case *pb.TurnEvent_Status:
			r.states = append(r.states, e.Status.GetState())
			r.order = append(r.order, "status")
		case *pb.TurnEvent_Speech:
			r.speech = append(r.speech, e.Speech)
			r.order = append(r.order, "speech")
		case *pb.TurnEvent_Final:
			if r.final != nil {
				t.Fatal("two final events")
			}
			r.final = e.Final
			r.order = append(r.order, "final")
		}
	}
	if r.final == nil {
		t.Fatalf("stream ended without a final event: %v", r.order)
	}
	if r.order[len(r.order)-1] != "final" {
		t.Fatalf("events after final: %v", r.order)
	}
	return r, nil
}

func wantOutcome(t *testing.T, r turnResult, want pb.Outcome) {
	t.Helper()
	if got := r.final.GetOutcome(); got != want {
		t.Fatalf("outcome = %v, want %v (error %v, text %q)", got, want, r.final.GetError(), r.final.GetText())
	}
}

func TestStreamingAnswerArrivesInPieces(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	r := s.turn(t, "s-stream", s.agent, "重复我说的话：今天天气很好，我们去公园散步吧，然后一起吃晚饭")
	wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
	if r.order[0] != "started" || r.started.GetAgentId() != s.agent || r.started.GetHeld() {
		t.Fatalf("first event: %v %+v", r.order, r.started)
	}
	if len(r.deltas) < 2 {
		t.Fatalf("got %d text deltas, want several (streamed): %q", len(r.deltas), r.deltas)
	}
	if got := strings.Join(r.deltas, ""); got != r.final.GetText() {
		t.Fatalf("deltas join to %q, final text is %q", got, r.final.GetText())
	}
	if !strings.Contains(r.final.GetText(), "今天天气很好") {
		t.Fatalf("final text %q does not repeat the user", r.final.GetText())
	}
	// The agent saw the platform's request shape on {url}/stream.
	var sawStream bool
	for _, req := range s.demo.Requests() {
		if req.Path == agent.StreamPath && req.Method == "message/stream" {
			sawStream = true
		}
	}
	if !sawStream {
		t.Fatalf("agent never got message/stream on %s: %+v", agent.StreamPath, s.demo.Requests())
	}
}

func TestAddFlowHoldsTheSessionAcrossTurns(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := t.Context()
	first := s.turn(t, "s-add", s.agent, "帮我算加法")
	wantOutcome(t, first, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	if first.final.GetHold() == nil || first.final.GetTaskId() == "" || first.final.GetText() == "" {
		t.Fatalf("input-required final: %+v", first.final)
	}
	got, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-add"})
	if err != nil || !got.GetHeld() || got.GetAgentId() != s.agent || got.GetTaskId() != first.final.GetTaskId() {
		t.Fatalf("GetSession after input-required = %+v, %v", got, err)
	}

	// The next turn names no agent: the hold routes it, continuing the same task and context.
	second := s.turn(t, "s-add", "", "3和5")
	wantOutcome(t, second, pb.Outcome_OUTCOME_COMPLETED)
	if !second.started.GetHeld() || second.started.GetTaskId() != first.final.GetTaskId() {
		t.Fatalf("second turn started = %+v, want held with task %s", second.started, first.final.GetTaskId())
	}
	if second.final.GetTaskId() != first.final.GetTaskId() || second.final.GetContextId() != first.final.GetContextId() {
		t.Fatalf("task/context changed: %s/%s -> %s/%s", first.final.GetTaskId(), first.final.GetContextId(),
			second.final.GetTaskId(), second.final.GetContextId())
	}
	if !strings.Contains(second.final.GetText(), "8") {
		t.Fatalf("sum text = %q", second.final.GetText())
	}
	if second.final.GetHold() != nil {
		t.Fatal("completed turn still reports a hold")
	}
	got, err = s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-add"})
	if err != nil || got.GetHeld() {
		t.Fatalf("GetSession after completion = %+v, %v", got, err)
	}
	// Free again: a turn without an agent has nowhere to go.
	wantOutcome(t, s.turn(t, "s-add", "", "还有吗"), pb.Outcome_OUTCOME_NO_AGENT)
}

func TestRejectedHandsBack(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	r := s.turn(t, "s-reject", s.agent, "tell me a joke about penguins")
	wantOutcome(t, r, pb.Outcome_OUTCOME_HANDBACK)
	got, err := s.client.GetSession(t.Context(), &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-reject"})
	if err != nil || got.GetHeld() {
		t.Fatalf("GetSession after handback = %+v, %v", got, err)
	}
}

func TestContextContinuesAcrossTasks(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	first := s.turn(t, "s-count", s.agent, "数一下我说了几句话")
	second := s.turn(t, "s-count", s.agent, "数一下我说了几句话")
	wantOutcome(t, second, pb.Outcome_OUTCOME_COMPLETED)
	if first.final.GetContextId() == "" || first.final.GetContextId() != second.final.GetContextId() {
		t.Fatalf("contexts %q then %q, want the same", first.final.GetContextId(), second.final.GetContextId())
	}
	if !strings.Contains(second.final.GetText(), "2") {
		t.Fatalf("second count = %q, want it to count 2 sentences", second.final.GetText())
	}
	// Another session starts its own context.
	other := s.turn(t, "s-count-2", s.agent, "数一下我说了几句话")
	if other.final.GetContextId() == first.final.GetContextId() {
		t.Fatal("a new session reused another session's context")
	}
}

func TestFlashReturnsDeviceCommand(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	r := s.turn(t, "s-flash", s.agent, "进行闪光")
	wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
	cmds, ok := r.final.GetMetadata().AsMap()["commands"].([]any)
	if !ok || len(cmds) == 0 || cmds[0].(map[string]any)["name"] != "flash" {
		t.Fatalf("final metadata = %v, want a flash command", r.final.GetMetadata().AsMap())
	}
}

func TestHoldExpiresAfterTTL(t *testing.T) {
	t.Parallel()
	s := startStack(t, map[string]string{"A2AC_HOLD_TTL": "300ms"})
	wantOutcome(t, s.turn(t, "s-ttl", s.agent, "帮我算加法"), pb.Outcome_OUTCOME_INPUT_REQUIRED)
	time.Sleep(500 * time.Millisecond) // waiting out the TTL is the behaviour under test
	got, err := s.client.GetSession(t.Context(), &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-ttl"})
	if err != nil || got.GetHeld() {
		t.Fatalf("GetSession after TTL = %+v, %v", got, err)
	}
	wantOutcome(t, s.turn(t, "s-ttl", "", "3和5"), pb.Outcome_OUTCOME_NO_AGENT)
}

func TestReleaseSessionCancelsTheHeldTask(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := t.Context()
	r := s.turn(t, "s-release", s.agent, "帮我算加法")
	wantOutcome(t, r, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	rel, err := s.client.ReleaseSession(ctx, &pb.ReleaseSessionRequest{TenantId: s.tenant, SessionId: "s-release"})
	if err != nil || !rel.GetReleased() || rel.GetAgentId() != s.agent {
		t.Fatalf("ReleaseSession = %+v, %v", rel, err)
	}
	// The cancel is sent in the background; it reaches the agent promptly.
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for !s.demo.Canceled(r.final.GetTaskId()) {
		if time.Now().After(deadline) {
			t.Fatalf("agent never received tasks/cancel for %s", r.final.GetTaskId())
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-release"})
	if err != nil || got.GetHeld() {
		t.Fatalf("GetSession after release = %+v, %v", got, err)
	}
	again, err := s.client.ReleaseSession(ctx, &pb.ReleaseSessionRequest{TenantId: s.tenant, SessionId: "s-release"})
	if err != nil || again.GetReleased() {
		t.Fatalf("second ReleaseSession = %+v, %v", again, err)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := t.Context()
	code := func(err error) codes.Code { return status.Code(err) }

	_, err := s.tryTurn(t, "s-err", s.agent, "")
	if code(err) != codes.InvalidArgument {
		t.Errorf("empty text: %v", err)
	}
	_, err = s.tryTurn(t, "s-err", s.agent, strings.Repeat("a", 16<<10+1))
	if code(err) != codes.InvalidArgument {
		t.Errorf("text over 16 KiB: %v", err)
	}
	_, err = s.tryTurn(t, "s-err", uuid.NewString(), "hi")
	if code(err) != codes.NotFound {
		t.Errorf("unknown agent: %v", err)
	}
	_, err = s.tryTurn(t, "s-err", "not-a-uuid", "hi")
	if code(err) != codes.NotFound {
		t.Errorf("malformed agent id: %v", err)
	}
	// Another tenant's agent is NOT_FOUND too.
	other, err := s.store.CreateTenant(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: other.ID, SessionId: "x", TurnId: "1", AgentId: s.agent, Text: "hi"})
	if err == nil {
		_, err = stream.Recv()
	}
	if code(err) != codes.NotFound {
		t.Errorf("other tenant's agent: %v", err)
	}
	disabled := false
	if _, err := s.store.UpdateAgent(ctx, s.tenant, s.agent, connector.AgentPatch{Enabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	_, err = s.tryTurn(t, "s-err", s.agent, "hi")
	if code(err) != codes.FailedPrecondition {
		t.Errorf("disabled agent: %v", err)
	}
	if _, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant}); code(err) != codes.InvalidArgument {
		t.Errorf("GetSession without session: %v", err)
	}
}

func TestListAgents(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	res, err := s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: s.tenant})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetAgents()) != 1 || res.GetAgents()[0].GetAgentId() != s.agent || len(res.GetAgents()[0].GetSkills()) != 5 {
		t.Fatalf("ListAgents = %v", res)
	}
	var ids []string
	for _, sk := range res.GetAgents()[0].GetSkills() {
		ids = append(ids, sk.GetId())
	}
	if got := strings.Join(ids, ","); got != "ai-repeat,ai-calculate,ai-count,ai-flash,ai-coach" {
		t.Fatalf("skills = %s", got)
	}
	res, err = s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: uuid.NewString()})
	if err != nil || len(res.GetAgents()) != 0 {
		t.Fatalf("unknown tenant: %v, %v", res, err)
	}
}
