package main

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
)

// TestDeadAgentFailsFastWithAgentUnavailable: through the real binary's wiring, an agent that
// goes down costs only the breaker's first turns; later turns end FAILED agent_unavailable
// without reaching it, and the replica publishes the open breaker for the health view.
func TestDeadAgentFailsFastWithAgentUnavailable(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	var calls atomic.Int64
	s := startStack(t, map[string]string{
		"A2AC_BREAKER_FAILURES": "2",
		// Long enough that no probe goes during the test, however slow the machine.
		"A2AC_BREAKER_COOLDOWN": "1h", "A2AC_BREAKER_MAX_COOLDOWN": "2h",
	}, withAgentWrapper(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() && r.URL.Path != agent.CardPath {
				calls.Add(1)
				http.Error(w, "backend down", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	}))
	if r := s.turn(t, "s-breaker", s.agent, "hello"); r.final.GetOutcome() == pb.Outcome_OUTCOME_FAILED {
		t.Fatalf("the agent, still up, failed: %v", r.final.GetError())
	}

	down.Store(true)
	for i := range 2 {
		r := s.turn(t, "s-breaker", s.agent, "hello")
		wantOutcome(t, r, pb.Outcome_OUTCOME_FAILED)
		if code := r.final.GetError().GetCode(); code != connector.CodeAgentHTTPStatus {
			t.Fatalf("turn %d: code %q, want %s", i+1, code, connector.CodeAgentHTTPStatus)
		}
	}
	before := calls.Load()
	var slowest time.Duration
	for i := range 3 {
		start := time.Now()
		r := s.turn(t, "s-breaker", s.agent, "hello")
		took := time.Since(start)
		wantOutcome(t, r, pb.Outcome_OUTCOME_FAILED)
		if code := r.final.GetError().GetCode(); code != connector.CodeAgentUnavailable {
			t.Fatalf("turn %d after opening: code %q (%s), want %s", i+1, code, r.final.GetError().GetMessage(), connector.CodeAgentUnavailable)
		}
		// Generous against a busy machine; a turn that called the agent could take the
		// 10 s turn timeout.
		if took > 2*time.Second {
			t.Errorf("refused turn took %s", took)
		}
		slowest = max(slowest, took)
	}
	t.Logf("refused turns (gRPC round trip, hold lookup and save included): slowest %s", slowest)
	if got := calls.Load() - before; got != 0 {
		t.Errorf("the dead agent got %d requests after the breaker opened, want 0", got)
	}

	// The replica publishes the change off the turn path; it shows up within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var state, cause string
		err := testDB.Pool.QueryRow(t.Context(), `select state, cause from agent_breakers where tenant_id = $1 and agent_id = $2`,
			s.tenant, s.agent).Scan(&state, &cause)
		if err == nil && state == invoke.BreakerOpen {
			if cause == "" {
				t.Error("published breaker has no cause")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent_breakers row: state %q, err %v; want open", state, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
