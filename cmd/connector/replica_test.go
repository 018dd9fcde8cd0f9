package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/clitest"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// The tests of this file run the connector as the operator does: the built binary, as processes
// of their own, sent SIGTERM and SIGKILL, on the package's Postgres, against a real streaming
// agent (the fixture agent, pacing its chunks like a model generating text).

// pacedAgent is a tenant with one streaming fixture agent whose replies are chunks chunks,
// delay apart.
type pacedAgent struct {
	fx            *fixtureagent.Server
	tenant, agent string
	secretKey     string // base64, as A2AC_SECRET_KEY
	chunks        int
	st            *store.Store
	db            *pgtest.DB // where the tenant lives, and the replicas connect
}

func newPacedAgent(t *testing.T, chunks int, delay time.Duration) *pacedAgent {
	t.Helper()
	return newPacedAgentOn(t, fixtureagent.New(t), connector.CardProfile{Name: "paced", ProtocolVersion: "0.3.0", Streaming: true}, chunks, delay)
}

// newPacedAgentOn is newPacedAgent with the fixture agent fx (of any binding) registered with
// profile, its endpoint URL filled in unless profile has one (a server in front of fx).
func newPacedAgentOn(t *testing.T, fx *fixtureagent.Server, profile connector.CardProfile, chunks int, delay time.Duration) *pacedAgent {
	t.Helper()
	return newPacedAgentIn(t, testDB, fx, profile, chunks, delay)
}

// newPacedAgentIn is newPacedAgentOn in db (a database of the test's own: every replica
// sweeps the heartbeats of the others in its database).
func newPacedAgentIn(t *testing.T, db *pgtest.DB, fx *fixtureagent.Server, profile connector.CardProfile, chunks int, delay time.Duration) *pacedAgent {
	t.Helper()
	if profile.EndpointURL == "" {
		profile.EndpointURL = fx.URL
	}
	fx.SetBehavior(fixtureagent.PacedStream)
	fx.SetChunks(chunks)
	fx.SetChunkDelay(delay)
	st := store.New(db.Pool)
	tenant, err := st.CreateTenant(t.Context(), "replica "+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateAgent(t.Context(), connector.NewAgent{
		ID: uuid.NewString(), TenantID: tenant.ID, CardURL: fx.URL + "/card", ResolvedCardURL: fx.URL + "/card",
		Card:    json.RawMessage(`{"name":"paced"}`),
		Profile: profile,
		Enabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	return &pacedAgent{fx: fx, tenant: tenant.ID, agent: a.ID, secretKey: base64.StdEncoding.EncodeToString(key),
		chunks: chunks, st: st, db: db}
}

// replica is one connector process.
type replica struct {
	cmd    *exec.Cmd
	conn   *grpc.ClientConn
	client pb.ConnectorClient
	health healthpb.HealthClient
	stderr *lockedBuffer
	exited chan struct{} // closed when the process is gone; then err is its exit
	err    error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// listening waits for the replica's "connector listening" log line and returns its address.
func (r *replica) listening(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // hundreds of times what starting takes
	for {
		if addr := loggedAddr(r.stderr.String(), "connector listening"); addr != "" {
			return addr
		}
		select {
		case <-r.exited:
			t.Fatalf("replica exited before listening (%v):\n%s", r.err, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never said it listened:\n%s", r.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loggedAddr is the addr of the first JSON log line of log whose msg is msg, or "".
func loggedAddr(log, msg string) string {
	for _, line := range strings.Split(log, "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			return rec.Addr
		}
	}
	return ""
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startReplica starts bin serving for p's tenant with env added, and waits until its health
// says SERVING. The test's cleanup kills it if it still runs.
func startReplica(t *testing.T, bin string, p *pacedAgent, env ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + p.db.URL,
		"A2AC_SECRET_KEY=" + p.secretKey,
		// The kernel chooses the port and the replica logs it: a port picked here and bound
		// by the replica later could be taken meanwhile by another test's connection.
		"A2AC_GRPC_ADDR=127.0.0.1:0",
		"A2AC_ALLOW_INSECURE_HTTP=true",
		"A2AC_ALLOWED_CIDRS=127.0.0.0/8",
		"A2AC_LOG_LEVEL=info",
		"A2AC_TURN_TIMEOUT=20s",
		// Caps per process: the package's tests share a database (see startStack).
		"A2AC_CAP_SYNC=0",
	}, env...)
	r := &replica{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.exited
		if t.Failed() {
			t.Logf("replica %d log:\n%s", cmd.Process.Pid, r.stderr)
		}
	})
	addr := r.listening(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r.conn, r.client, r.health = conn, pb.NewConnectorClient(conn), healthpb.NewHealthClient(conn)
	for i := 0; ; i++ {
		res, err := r.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return r
		}
		if i > 500 {
			t.Fatalf("replica did not become healthy: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitCode waits (bounded) for the process to end and returns its exit status.
func (r *replica) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(within):
		t.Fatalf("the connector did not exit within %s", within)
	}
	if ee := (*exec.ExitError)(nil); errors.As(r.err, &ee) {
		return ee.ExitCode()
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return 0
}

// engineTurn is a turn as the engine's client reads it.
type engineTurn struct {
	stream pb.Connector_HandleTurnClient
	deltas []string
	final  *pb.TurnFinal
}

func (p *pacedAgent) startTurn(t *testing.T, ctx context.Context, r *replica, session, turnID string, received int) *engineTurn {
	t.Helper()
	stream, err := r.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: p.tenant, SessionId: session,
		TurnId: turnID, AgentId: p.agent, Text: "tell me", ReceivedTextBytes: uint64(received)})
	if err != nil {
		t.Fatal(err)
	}
	return &engineTurn{stream: stream}
}

// next reads one event: false at the end of the stream. A broken stream is returned as err.
func (e *engineTurn) next() (bool, error) {
	ev, err := e.stream.Recv()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch x := ev.GetEvent().(type) {
	case *pb.TurnEvent_TextDelta:
		e.deltas = append(e.deltas, x.TextDelta.GetText())
	case *pb.TurnEvent_Final:
		e.final = x.Final
	}
	return true, nil
}

func (e *engineTurn) finish(t *testing.T) {
	t.Helper()
	for {
		more, err := e.next()
		if err != nil {
			t.Fatalf("stream broke after %d deltas: %v", len(e.deltas), err)
		}
		if !more {
			break
		}
	}
	if e.final == nil {
		t.Fatalf("no final after %d deltas", len(e.deltas))
	}
}

func (e *engineTurn) text() string { return strings.Join(e.deltas, "") }

// TestReplicaLifecycle builds the binary once (a link takes seconds on a shared machine) for
// its subtests.
func TestReplicaLifecycle(t *testing.T) {
	t.Parallel()
	bin := clitest.Build(t, "connector")
	t.Run("SIGTERM_says_NOT_SERVING_and_serves_through_the_drain_delay", func(t *testing.T) {
		t.Parallel()
		testSIGTERMDrain(t, bin)
	})
	t.Run("a_replica_killed_mid_turn", func(t *testing.T) {
		t.Parallel()
		testReplicaKilledMidTurn(t, bin)
	})
}

// SIGTERM: health says NOT_SERVING at once, yet the replica keeps taking new turns for
// A2AC_DRAIN_DELAY (balancers are still moving away), finishes them all, and exits 0.
func testSIGTERMDrain(t *testing.T, bin string) {
	p := newPacedAgent(t, 20, 50*time.Millisecond) // a reply of ~1 s
	// 10 s: a new turn needs milliseconds to be taken, so its start inside the delay never
	// depends on this machine's speed.
	// The shutdown timeout is far longer than the test waits for the exit: a drain that waited
	// for it (a health Watch left open) fails the test.
	r := startReplica(t, bin, p, "A2AC_DRAIN_DELAY=10s", "A2AC_SHUTDOWN_TIMEOUT=300s")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	running := p.startTurn(t, ctx, r, "s-running", uuid.NewString(), 0)
	for len(running.deltas) == 0 {
		if more, err := running.next(); err != nil || !more {
			t.Fatalf("running turn ended before its first delta: %v", err)
		}
	}
	watch, err := r.health.Watch(ctx, &healthpb.HealthCheckRequest{Service: pb.Connector_ServiceDesc.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health before SIGTERM: %v, %v", res, err)
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health after SIGTERM: %v, %v; want NOT_SERVING", res, err)
	}
	if res, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf(`health "" after SIGTERM: %v, %v; want NOT_SERVING`, res, err)
	}

	// A balancer that has not moved away yet sends a new turn: it is served to its end.
	late := p.startTurn(t, ctx, r, "s-late", uuid.NewString(), 0)
	late.finish(t)
	running.finish(t)
	want := fixtureagent.StreamText(p.chunks)
	for name, turn := range map[string]*engineTurn{"running turn": running, "turn started after SIGTERM": late} {
		if turn.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || turn.text() != want {
			t.Errorf("%s: outcome %v, deltas %q; want COMPLETED, %q", name, turn.final.GetOutcome(), turn.text(), want)
		}
	}
	// The watch (a client with client-side health checking) is still open: it must not hold
	// the process up.
	if code := r.exitCode(t, 120*time.Second); code != 0 {
		t.Fatalf("exit status %d after the drain, want 0\n%s", code, r.stderr)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("the health watch ended with %v, want UNAVAILABLE", err)
	}
	if n := countReplicaRows(t, p.db); slices.Contains(n, r.cmd.Process.Pid) {
		t.Errorf("the stopped replica left rows behind: %v", n)
	}
}

// countReplicaRows returns the pids of the replicas that have a heartbeat row in db.
func countReplicaRows(t *testing.T, db *pgtest.DB) []int {
	t.Helper()
	rows, err := db.Pool.Query(t.Context(), `select split_part(replica_id, '/', 2)::int from connector_replicas`)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pids
}

// A replica killed mid-reply: the engine retries the turn_id on another replica saying how much
// text it received; the user hears the reply exactly once across both attempts, and the first
// attempt's task, left working at the agent, is canceled once the other replica's sweep sees
// the dead one's heartbeat go stale.
func testReplicaKilledMidTurn(t *testing.T, bin string) {
	p := newPacedAgent(t, 30, 100*time.Millisecond) // a reply of ~3 s
	// Short sync and stale bounds so the sweep comes within seconds; every wait below polls
	// with a deadline many times longer.
	// 4 s: a replica stops serving at half of it without a heartbeat, and r2 must not, should
	// this machine's Postgres stall for a second.
	env := []string{"A2AC_INFLIGHT_SYNC=200ms", "A2AC_INFLIGHT_STALE=4s", "A2AC_DRAIN_DELAY=0"}
	r1 := startReplica(t, bin, p, env...)
	r2 := startReplica(t, bin, p, env...)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	turnID, session := uuid.NewString(), "s-killed"
	first := p.startTurn(t, ctx, r1, session, turnID, 0)
	for len(first.deltas) < 3 {
		if more, err := first.next(); err != nil || !more {
			t.Fatalf("first attempt ended after %d deltas: %v", len(first.deltas), err)
		}
	}
	// The kill must come after replica 1 synced the task (the documented window): wait for
	// its row, then kill. Deltas that arrive meanwhile stay unread, so unreceived.
	task1 := waitInflightTask(t, ctx, p.db, p.tenant)
	if err := r1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-r1.exited
	received := first.text()

	second := p.startTurn(t, ctx, r2, session, turnID, len(received))
	second.finish(t)
	want := fixtureagent.StreamText(p.chunks)
	if got := received + second.text(); got != want {
		t.Fatalf("the user heard %q + %q\nwant the reply once: %q", received, second.text(), want)
	}
	if f := second.final; f.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || f.GetText() != want ||
		f.GetWithheldTextBytes() != uint64(len(received)) {
		t.Fatalf("final: outcome %v, withheld %d, text %q; want COMPLETED, %d, the whole reply",
			f.GetOutcome(), f.GetWithheldTextBytes(), f.GetText(), len(received))
	}
	if f := second.final; f.GetTaskId() == task1 {
		t.Fatalf("the retry continued the dead attempt's task %s", task1)
	}

	// The orphan: canceled at the agent by replica 2's sweep, and only it.
	deadline := time.Now().Add(60 * time.Second)
	for !slices.Contains(p.fx.Cancels(), task1) {
		if time.Now().After(deadline) {
			t.Fatalf("task %s of the killed replica was never canceled; cancels: %v", task1, p.fx.Cancels())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Expected 13–17 s with the defaults; here stale 4 s + a sync of 0.2 s.
	t.Logf("orphaned task canceled %s after the kill (A2AC_INFLIGHT_STALE=4s, SYNC=200ms)", time.Since(killed).Round(10*time.Millisecond))
	if c := p.fx.Cancels(); len(c) != 1 {
		t.Errorf("cancels at the agent: %v, want only the orphan %s", c, task1)
	}
	if code := r2.stop(t); code != 0 {
		t.Errorf("replica 2 exit status %d", code)
	}
}

// stop sends SIGTERM and returns the exit status.
func (r *replica) stop(t *testing.T) int {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return r.exitCode(t, 60*time.Second)
}

// waitInflightTask polls until a replica has synced an in-flight task of tenant, and returns its
// task id.
func waitInflightTask(t *testing.T, ctx context.Context, db *pgtest.DB, tenant string) string {
	t.Helper()
	for {
		var id string
		err := db.Pool.QueryRow(ctx, `select task_id from inflight_tasks where tenant_id = $1`, tenant).Scan(&id)
		if err == nil {
			return id
		}
		if ctx.Err() != nil {
			t.Fatalf("no in-flight task of the tenant was ever synced: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
