package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// Restart tests stop Postgres (pg_ctl -m fast, as an operator does; -m immediate, as a crash
// does) and start it again while turns are in flight at each stage of a turn: before its
// lookup, while the agent is called, at the save of its hold. Once Postgres accepts connections
// again no turn may get UNAVAILABLE (the store retries a statement whose connection the restart
// killed once, on a fresh connection), a hold the engine was told of must still route the next
// turn, and a hold that could not be saved must have its task canceled at the agent.
//
// Each uses a private cluster (pgtest.NewCluster): the shared one serves every test package.

// restarts are the two ways Postgres goes away and comes back.
var restarts = []struct {
	name string
	down func(*pgtest.Cluster) func(context.Context) error
}{
	{name: "fast", down: func(c *pgtest.Cluster) func(context.Context) error { return c.Stop }},
	{name: "immediate", down: func(c *pgtest.Cluster) func(context.Context) error { return c.Crash }},
}

// restartConcurrency is how many turns run at once around a restart: enough to fill several of
// the pool's connections, and to put statements of several turns in one coalesced batch.
const restartConcurrency = 6

// Postgres restarts between turns: the pool holds connections the restart killed, and the very
// next turns (lookup, save, the held session's continuation) are served on the first try.
func TestPostgresRestart_between_turns_loses_no_turn(t *testing.T) {
	t.Parallel()
	for _, rs := range restarts {
		t.Run(rs.name, func(t *testing.T) {
			t.Parallel()
			pg := pgtest.NewCluster(t)
			s := startStack(t, nil, withDB(pg.NewDB(t)))
			ctx := t.Context()

			held := s.turn(t, "s-held", s.agent, "帮我算加法")
			wantOutcome(t, held, pb.Outcome_OUTCOME_INPUT_REQUIRED) // the engine is told: held
			// Concurrent turns leave several pooled connections behind.
			s.concurrentTurns(t, "warm", "重复我说的话：预热", pb.Outcome_OUTCOME_COMPLETED)

			if err := rs.down(pg)(ctx); err != nil {
				t.Fatal(err)
			}
			if err := pg.Start(ctx); err != nil {
				t.Fatal(err)
			}
			// No UNAVAILABLE, no retry by the test: each of these is the first try.
			s.concurrentTurns(t, "after", "重复我说的话：回来了", pb.Outcome_OUTCOME_COMPLETED)
			next := s.turn(t, "s-held", "", "3和5")
			wantHeldContinuation(t, next, held)
		})
	}
}

// Postgres restarts while turns are at the agent: their lookups ran on connections the restart
// then killed, their holds are saved after it; every turn ends as the agent said, and each hold
// routes the session's next turn.
func TestPostgresRestart_during_the_agent_call_keeps_the_holds(t *testing.T) {
	t.Parallel()
	for _, rs := range restarts {
		t.Run(rs.name, func(t *testing.T) {
			t.Parallel()
			pg := pgtest.NewCluster(t)
			gate := newRestartGate(restartConcurrency, func(ctx context.Context) error {
				if err := rs.down(pg)(ctx); err != nil {
					return err
				}
				return pg.Start(ctx)
			})
			s := startStack(t, nil, withDB(pg.NewDB(t)), withAgentWrapper(gate.wrap))

			gate.armed.Store(true)
			firsts := s.concurrentTurns(t, "s", "帮我算加法", pb.Outcome_OUTCOME_INPUT_REQUIRED)
			if err := gate.err(); err != nil {
				t.Fatal(err)
			}
			for i, first := range firsts {
				next := s.turn(t, fmt.Sprintf("s-%d", i), "", "3和5")
				wantHeldContinuation(t, next, first)
			}
		})
	}
}

// Postgres goes down while the turn is at the agent and is still down at the save: the hold
// cannot be saved (the store's one retry fails too), so the engine gets FAILED "internal", no
// hold, and the agent's task, which asked a question nobody will answer, is canceled.
func TestPostgresRestart_a_hold_that_cannot_be_saved_cancels_its_task(t *testing.T) {
	t.Parallel()
	for _, rs := range restarts {
		t.Run(rs.name, func(t *testing.T) {
			t.Parallel()
			pg := pgtest.NewCluster(t)
			var armed atomic.Bool
			downed := make(chan error, 1)
			downFirst := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && armed.CompareAndSwap(true, false) {
						downed <- rs.down(pg)(context.WithoutCancel(r.Context()))
					}
					next.ServeHTTP(w, r)
				})
			}
			s := startStack(t, nil, withDB(pg.NewDB(t)), withAgentWrapper(downFirst))
			ctx := t.Context()

			armed.Store(true)
			r := s.turn(t, "s-lost", s.agent, "帮我算加法")
			if err := <-downed; err != nil {
				t.Fatal(err)
			}
			if r.final.GetOutcome() != pb.Outcome_OUTCOME_FAILED || r.final.GetError().GetCode() != "internal" ||
				!strings.Contains(r.final.GetError().GetMessage(), "hold could not be saved") || r.final.GetHold() != nil {
				t.Fatalf("final = %v %v, hold %v; want FAILED internal, the hold could not be saved, no hold",
					r.final.GetOutcome(), r.final.GetError(), r.final.GetHold())
			}
			taskID := r.final.GetTaskId()
			// The cancel goes out in the background; only a failing test waits this long.
			for deadline := time.Now().Add(30 * time.Second); !s.demo.Canceled(taskID); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the agent never received tasks/cancel for task %q", taskID)
				}
			}

			if err := pg.Start(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-lost"})
			if err != nil || got.GetHeld() {
				t.Fatalf("GetSession after the restart = %+v, %v; want served, and no hold", got, err)
			}
			wantOutcome(t, s.turn(t, "s-lost", "", "3和5"), pb.Outcome_OUTCOME_NO_AGENT)
		})
	}
}

// concurrentTurns runs restartConcurrency turns at once on sessions prefix-0, prefix-1, …, each
// of which must end with want on its first try, and returns them in session order.
func (s *stack) concurrentTurns(t *testing.T, prefix, text string, want pb.Outcome) []turnResult {
	t.Helper()
	results := make([]turnResult, restartConcurrency)
	errs := make([]error, restartConcurrency)
	var wg sync.WaitGroup
	for i := range restartConcurrency {
		wg.Go(func() {
			results[i], errs[i] = s.tryTurn(t, fmt.Sprintf("%s-%d", prefix, i), s.agent, text)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("turn on %s-%d: %v; want it served on its first try", prefix, i, err)
		}
		wantOutcome(t, results[i], want)
	}
	return results
}

// wantHeldContinuation checks that next was routed by the hold first set and went to its task.
func wantHeldContinuation(t *testing.T, next, first turnResult) {
	t.Helper()
	wantOutcome(t, next, pb.Outcome_OUTCOME_COMPLETED)
	if !next.started.GetHeld() || next.final.GetTaskId() != first.final.GetTaskId() ||
		next.final.GetContextId() != first.final.GetContextId() {
		t.Fatalf("next turn: started %+v, task %s context %s; want the held task %s in context %s",
			next.started, next.final.GetTaskId(), next.final.GetContextId(), first.final.GetTaskId(), first.final.GetContextId())
	}
	if !strings.Contains(next.final.GetText(), "8") {
		t.Errorf("the held task answered %q; want the sum 8", next.final.GetText())
	}
}

// restartGate holds the agent's requests, once armed, until n have arrived, restarts Postgres
// then, and lets them all through: n turns are at the agent across the restart.
type restartGate struct {
	armed   atomic.Bool
	n       int
	restart func(context.Context) error

	mu         sync.Mutex
	arrived    int
	released   chan struct{}
	restartErr error
}

func newRestartGate(n int, restart func(context.Context) error) *restartGate {
	return &restartGate{n: n, restart: restart, released: make(chan struct{})}
}

func (g *restartGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && g.armed.Load() {
			g.mu.Lock()
			g.arrived++
			last := g.arrived == g.n
			g.mu.Unlock()
			if last {
				g.armed.Store(false)
				err := g.restart(context.WithoutCancel(r.Context()))
				g.mu.Lock()
				g.restartErr = err
				g.mu.Unlock()
				close(g.released)
			}
			select {
			case <-g.released:
			case <-r.Context().Done(): // the turn gave up: fewer than n arrived
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (g *restartGate) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.restartErr
}
