package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
	"github.com/jackc/pgx/v5"
)

// A hold release the engine was told of (the held task finished: the Final says the session is
// free) but that Postgres could not take at once must neither stay lost nor fail the session's
// next turn. Postgres is stopped while the held task finishes at the agent, so the release
// cannot be saved (the store's one retry fails too), and started again afterwards.

// The replica that could not save the release keeps trying in the background: it lands once
// Postgres is back, with no turn to trigger it, and a next turn on that replica waits for it.
func TestHoldRelease_unsaved_is_retried_until_saved(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	const n = 2 // two held sessions finish while Postgres is down
	gate := newRestartGate(n, pg.Stop)
	// Postgres is away for as long as the machine takes to stop and start it: far from the
	// fence that cuts a replica off after half of A2AC_INFLIGHT_STALE (another test's subject),
	// whatever the load.
	s := startStack(t, map[string]string{"A2AC_INFLIGHT_STALE": "10m"}, withDB(pg.NewDB(t)), withAgentWrapper(gate.wrap))
	ctx := t.Context()

	wantOutcome(t, s.turn(t, "s-next", s.agent, "帮我算加法"), pb.Outcome_OUTCOME_INPUT_REQUIRED)
	wantOutcome(t, s.turn(t, "s-alone", s.agent, "帮我算加法"), pb.Outcome_OUTCOME_INPUT_REQUIRED)
	gate.armed.Store(true)
	finished := make(chan turnResult, n)
	for _, session := range []string{"s-next", "s-alone"} {
		go func() { finished <- s.turn(t, session, "", "3和5") }()
	}
	for range n {
		r := <-finished
		// The agent finished the task: the engine is told the session is free.
		if r.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || r.final.GetHold() != nil {
			t.Fatalf("held turn finishing while Postgres is down: %v, hold %v; want COMPLETED, no hold", r.final.GetOutcome(), r.final.GetHold())
		}
	}
	if err := gate.err(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}

	// The session's next turn, at once: the engine believes the session free and names its
	// agent; the turn runs a new task, not the finished one.
	next := s.turn(t, "s-next", s.agent, "重复我说的话：你好")
	wantOutcome(t, next, pb.Outcome_OUTCOME_COMPLETED)
	if next.started.GetHeld() || !strings.Contains(next.final.GetText(), "你好") {
		t.Fatalf("next turn: started %+v, text %q; want a new task that repeats 你好", next.started, next.final.GetText())
	}

	// The other session gets no turn: its release lands by itself. Only a failing test waits
	// the whole bound.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-alone"})
		if err == nil && !got.GetHeld() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unsaved release was never saved: GetSession = %+v, %v", got, err)
		}
	}
}

// Another replica knows nothing of the unsaved release (here the replica that failed to save it
// is gone before Postgres is back, so it never lands): the next turn there finds the stale hold,
// the agent refuses to continue the finished task, and the turn runs as on a free session.
func TestHoldRelease_a_stale_hold_does_not_fail_the_next_turn_on_another_replica(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := pg.NewDB(t)
	gate := newRestartGate(1, pg.Stop)
	// Far from the fence at half of A2AC_INFLIGHT_STALE, whatever the load (see above).
	s := startStack(t, map[string]string{"A2AC_INFLIGHT_STALE": "10m"}, withDB(db), withAgentWrapper(gate.wrap))
	ctx := t.Context()

	first := s.turn(t, "s-stale", s.agent, "帮我算加法")
	wantOutcome(t, first, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	gate.armed.Store(true)
	done := s.turn(t, "s-stale", "", "3和5")
	if err := gate.err(); err != nil {
		t.Fatal(err)
	}
	if done.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || done.final.GetHold() != nil {
		t.Fatalf("held turn finishing while Postgres is down: %v, hold %v; want COMPLETED, no hold", done.final.GetOutcome(), done.final.GetHold())
	}
	// The replica stops while Postgres is still down: its release is lost with it.
	if err := s.shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if held := holdTask(t, db, s.tenant, "s-stale"); held != first.final.GetTaskId() {
		t.Fatalf("stored hold after the restart: task %q; want the stale hold on the finished task %s (the premise of this test)", held, first.final.GetTaskId())
	}

	other := s.onAnotherReplica(t, db)
	next := other.turn(t, "s-stale", s.agent, "重复我说的话：你好")
	wantOutcome(t, next, pb.Outcome_OUTCOME_COMPLETED)
	if next.final.GetTaskId() == first.final.GetTaskId() || !strings.Contains(next.final.GetText(), "你好") {
		t.Fatalf("next turn: task %s, text %q; want a new task that repeats 你好", next.final.GetTaskId(), next.final.GetText())
	}
	if held := holdTask(t, db, s.tenant, "s-stale"); held != "" {
		t.Errorf("stored hold after the next turn: task %q; want none", held)
	}
	// And the turn after that goes straight to a new task, with no refusal first.
	wantOutcome(t, other.turn(t, "s-stale", s.agent, "重复我说的话：再见"), pb.Outcome_OUTCOME_COMPLETED)
}

// holdTask is the task of the session's stored hold, expired or not ("" when none).
func holdTask(t *testing.T, db *pgtest.DB, tenant, session string) string {
	t.Helper()
	// A connection of its own: the pool's idle ones died with the Postgres restart.
	conn, err := pgx.Connect(t.Context(), db.URL)
	if err != nil {
		t.Fatalf("connect to read the stored hold: %v", err)
	}
	defer conn.Close(context.Background())
	var task *string
	err = conn.QueryRow(t.Context(), `select hold_task_id from sessions where tenant_id = $1 and session_id = $2`,
		tenant, session).Scan(&task)
	if err != nil {
		t.Fatalf("read the stored hold: %v", err)
	}
	if task == nil {
		return ""
	}
	return *task
}

// onAnotherReplica starts a second connector on db for s's tenant and agent, and returns s as
// seen through it.
func (s *stack) onAnotherReplica(t *testing.T, db *pgtest.DB) *stack {
	t.Helper()
	server, shutdown := startConnector(t, map[string]string{
		"DATABASE_URL":             db.URL,
		"A2AC_SECRET_KEY":          base64.StdEncoding.EncodeToString(s.secretKey),
		"A2AC_ALLOW_INSECURE_HTTP": "true",
		"A2AC_ALLOWED_CIDRS":       "127.0.0.0/8",
		"A2AC_LOG_LEVEL":           "error",
		"A2AC_TURN_TIMEOUT":        "10s",
		"A2AC_DRAIN_DELAY":         "0",
	}, nil, telemetry.Options{})
	conn, err := grpc.NewClient(server.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	other := *s
	other.server, other.shutdown, other.conn, other.client = server, shutdown, conn, pb.NewConnectorClient(conn)
	return &other
}
