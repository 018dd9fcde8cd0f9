package main

import (
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/health"
)

// The connector counts every turn for its tenant's health view and, when it shuts down, flushes
// what it counted after draining: the flusher's own interval (a minute) never passes here, so
// the rows can only come from the last flush, after the gRPC server stopped and before the pool
// closed.
func TestShutdownFlushesAgentHealth(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	wantOutcome(t, s.turn(t, "s-health-1", s.agent, "1与2相加是多少"), pb.Outcome_OUTCOME_COMPLETED)
	wantOutcome(t, s.turn(t, "s-health-2", s.agent, "tell me a joke"), pb.Outcome_OUTCOME_HANDBACK)
	if err := s.shutdown(); err != nil {
		t.Fatalf("run: %v", err)
	}
	sum, err := health.NewStore(testDB.Pool).Summary(t.Context(), s.tenant, s.agent, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Hour.Turns != 2 || sum.Hour.Outcomes[connector.OutcomeCompleted] != 1 || sum.Hour.Outcomes[connector.OutcomeHandback] != 1 {
		t.Fatalf("health after shutdown: %d turns, outcomes %v; want one COMPLETED and one HANDBACK", sum.Hour.Turns, sum.Hour.Outcomes)
	}
	if sum.Hour.Duration.Count != 2 || sum.Hour.FirstText.Count < 1 {
		t.Errorf("latency samples: duration %d, first text %d", sum.Hour.Duration.Count, sum.Hour.FirstText.Count)
	}
}
