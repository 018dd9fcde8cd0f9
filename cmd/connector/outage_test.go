package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
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

// recoveryBound is how long after Postgres accepts connections again the connector may take to
// serve turns. The target is 5 s (measured: well under one); the bound is generous so a busy
// machine cannot fail it, and the measured time is logged.
const recoveryBound = 30 * time.Second

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

// untilAvailable calls f until it returns anything but UNAVAILABLE (Postgres is back, the pool
// may still hand out a connection the outage killed) and returns that, with the time it took.
// It logs how many UNAVAILABLE answers came first.
func untilAvailable[T any](t *testing.T, what string, f func() (T, error)) (T, time.Duration) {
	t.Helper()
	start := time.Now()
	for tries := 0; ; tries++ {
		v, err := f()
		if status.Code(err) != codes.Unavailable {
			if err != nil {
				t.Fatalf("%s after Postgres returned: %v", what, err)
			}
			took := time.Since(start)
			t.Logf("%s: served after %d UNAVAILABLE answers, %s", what, tries, took)
			return v, took
		}
		if time.Since(start) > recoveryBound {
			t.Fatalf("%s still UNAVAILABLE %s after Postgres returned: %v", what, recoveryBound, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not a verdict
	}
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
			after, recovered := untilAvailable(t, "a turn", func() (turnResult, error) {
				return s.tryTurn(t, "s-after", s.agent, "重复我说的话：回来了")
			})
			wantOutcome(t, after, pb.Outcome_OUTCOME_COMPLETED)
			t.Logf("turns served again %s after Postgres (%s) accepted connections", recovered, tc.name)

			got, _ := untilAvailable(t, "GetSession", func() (*pb.GetSessionResponse, error) {
				return s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-held"})
			})
			if !got.GetHeld() || got.GetAgentId() != s.agent || got.GetTaskId() != taskID || got.GetContextId() != contextID {
				t.Fatalf("GetSession after the outage = %+v; want held by %s with task %s, context %s",
					got, s.agent, taskID, contextID)
			}
			next, _ := untilAvailable(t, "the held session's next turn", func() (turnResult, error) {
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

// Postgres dies after the agent was called and before it answers input-required, so the hold
// cannot be saved: the engine must not be told INPUT_REQUIRED (nor given a hold) for a session
// that is not held. The proto documents the answer: OUTCOME_FAILED, error code "internal".
func TestPostgresDiesBeforeTheHoldIsSaved(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	var armed atomic.Bool
	crashed := make(chan error, 1)
	// The agent's handler crashes Postgres before the demo agent even reads the request, so
	// the crash surely comes between the turn's lookup and the save of its hold.
	crashFirst := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && armed.CompareAndSwap(true, false) {
				crashed <- pg.Crash(context.WithoutCancel(r.Context()))
			}
			next.ServeHTTP(w, r)
		})
	}
	s := startStack(t, nil, withDB(pg.NewDB(t)), withAgentWrapper(crashFirst))
	ctx := t.Context()

	armed.Store(true)
	r, err := s.tryTurn(t, "s-lost", s.agent, "帮我算加法")
	select {
	case err := <-crashed:
		if err != nil {
			t.Fatalf("crash Postgres: %v", err)
		}
	default:
		t.Fatalf("the agent was never called (turn: %+v, %v)", r.final, err)
	}
	if err != nil {
		t.Fatalf("HandleTurn: %v; want a final event (the turn had started)", err)
	}
	if got := r.final.GetOutcome(); got != pb.Outcome_OUTCOME_FAILED || r.final.GetError().GetCode() != "internal" {
		t.Errorf("final = %v %v; want OUTCOME_FAILED with error code internal (the hold was not saved)",
			got, r.final.GetError())
	}
	if r.final.GetHold() != nil {
		t.Errorf("final carries hold %v; no hold was saved", r.final.GetHold())
	}
	// The agent did answer input-required: the text may reach the user, the hold may not.
	if r.final.GetTaskId() == "" {
		t.Errorf("final has no task id; want the agent's task")
	}

	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := untilAvailable(t, "GetSession", func() (*pb.GetSessionResponse, error) {
		return s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-lost"})
	})
	if got.GetHeld() {
		t.Fatalf("GetSession after restart = %+v; want no hold", got)
	}
	// Nothing routes the next turn to the agent: with no agent named there is nowhere to go.
	next, _ := untilAvailable(t, "the next turn", func() (turnResult, error) {
		return s.tryTurn(t, "s-lost", "", "3和5")
	})
	wantOutcome(t, next, pb.Outcome_OUTCOME_NO_AGENT)
}
