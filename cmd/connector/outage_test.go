package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// Outage tests take Postgres away under a running connector and bring it back, never
// restarting the connector. Each uses a private cluster (pgtest.NewCluster): the shared one
// serves every test package at once and must stay up.

// outageCallTimeout is each RPC's own deadline during an outage. The target is UNAVAILABLE
// within a second (measured: a few milliseconds); the verdict is only that UNAVAILABLE comes
// before this deadline, so a slow machine cannot fail it.
const outageCallTimeout = 10 * time.Second

func withDB(db *pgtest.DB) stackOption { return func(c *stackConfig) { c.db = db } }

func withAgentWrapper(w func(http.Handler) http.Handler) stackOption {
	return func(c *stackConfig) { c.wrapAgent = w }
}

// unavailableTurn sends a turn while Postgres is down: it must end with gRPC UNAVAILABLE,
// before any event and before its own deadline. It returns how long the answer took.
func (s *stack) unavailableTurn(t *testing.T, sessionID, agentID string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), outageCallTimeout)
	defer cancel()
	start := time.Now()
	stream, err := s.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: sessionID,
		TurnId: uuid.NewString(), AgentId: agentID, Text: "3和5"})
	if err == nil {
		var ev *pb.TurnEvent
		if ev, err = stream.Recv(); err == nil {
			t.Fatalf("turn on %s with Postgres down sent %v; want UNAVAILABLE before any event", sessionID, ev)
		}
	}
	took := time.Since(start)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("turn on %s with Postgres down: %v after %s; want UNAVAILABLE", sessionID, err, took)
	}
	return took
}

// served calls f once, after Postgres came back: it must not answer UNAVAILABLE (the store
// retries a statement whose pooled connection the outage killed on a fresh connection).
func served[T any](t *testing.T, what string, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatalf("%s right after Postgres returned: %v", what, err)
	}
	return v
}

// While Postgres is down every turn fails fast with UNAVAILABLE and reaches no agent; once it is
// back, turns succeed again without restarting the connector, and a session held before the
// outage is still held by the same task and context, which the next turn continues.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// down takes Postgres away: an operator's stop, or a crash.
		down func(*pgtest.Cluster) func(context.Context) error
		// durable: make the hold durable first (a crash may lose async commits).
		durable bool
	}{
		{name: "stopped", down: func(c *pgtest.Cluster) func(context.Context) error { return c.Stop }},
		{name: "crashed", down: func(c *pgtest.Cluster) func(context.Context) error { return c.Crash }, durable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := pgtest.NewCluster(t)
			s := startStack(t, nil, withDB(pg.NewDB(t)))
			ctx := t.Context()

			held := s.turn(t, "s-held", s.agent, "帮我算加法")
			wantOutcome(t, held, pb.Outcome_OUTCOME_INPUT_REQUIRED)
			taskID, contextID := held.final.GetTaskId(), held.final.GetContextId()
			wantOutcome(t, s.turn(t, "s-other", s.agent, "数一下我说了几句话"), pb.Outcome_OUTCOME_COMPLETED)
			if tc.durable {
				// The connector commits with synchronous_commit=off (see serve): a crash may
				// lose its last few hundred milliseconds of session state, by design. To show
				// that a hold survives a crash, make it durable first, or this would test
				// that trade-off instead.
				if err := pg.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
			}
			agentCalls := len(s.demo.Requests())

			if err := tc.down(pg)(ctx); err != nil {
				t.Fatal(err)
			}
			var slowest time.Duration
			for i := range 3 {
				for _, call := range []struct{ session, agent string }{
					{session: "s-held"},                                    // routed by the hold
					{session: "s-other", agent: s.agent},                   // a session with a context
					{session: "s-new-" + uuid.NewString(), agent: s.agent}, // a fresh one
				} {
					took := s.unavailableTurn(t, call.session, call.agent)
					slowest = max(slowest, took)
					if i == 0 && call.session == "s-held" {
						t.Logf("first turn with Postgres %s: UNAVAILABLE after %s", tc.name, took)
					}
				}
			}
			t.Logf("slowest of 9 turns with Postgres %s: UNAVAILABLE after %s", tc.name, slowest)
			getCtx, cancel := context.WithTimeout(ctx, outageCallTimeout)
			_, err := s.client.GetSession(getCtx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-held"})
			cancel()
			if status.Code(err) != codes.Unavailable {
				t.Errorf("GetSession with Postgres down: %v; want UNAVAILABLE", err)
			}
			if n := len(s.demo.Requests()); n != agentCalls {
				t.Errorf("the agent got %d requests while Postgres was down; want none", n-agentCalls)
			}

			if err := pg.Start(ctx); err != nil {
				t.Fatal(err)
			}
			after := served(t, "a turn", func() (turnResult, error) {
				return s.tryTurn(t, "s-after", s.agent, "重复我说的话：回来了")
			})
			wantOutcome(t, after, pb.Outcome_OUTCOME_COMPLETED)

			got := served(t, "GetSession", func() (*pb.GetSessionResponse, error) {
				return s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-held"})
			})
			if !got.GetHeld() || got.GetAgentId() != s.agent || got.GetTaskId() != taskID || got.GetContextId() != contextID {
				t.Fatalf("GetSession after the outage = %+v; want held by %s with task %s, context %s",
					got, s.agent, taskID, contextID)
			}
			next := served(t, "the held session's next turn", func() (turnResult, error) {
				return s.tryTurn(t, "s-held", "", "3和5")
			})
			wantOutcome(t, next, pb.Outcome_OUTCOME_COMPLETED)
			if !next.started.GetHeld() || next.final.GetTaskId() != taskID || next.final.GetContextId() != contextID {
				t.Fatalf("next turn: started %+v, task %s context %s; want the held task %s in context %s",
					next.started, next.final.GetTaskId(), next.final.GetContextId(), taskID, contextID)
			}
			if !strings.Contains(next.final.GetText(), "8") {
				t.Errorf("the continued task answered %q; want the sum 8", next.final.GetText())
			}
		})
	}
}
