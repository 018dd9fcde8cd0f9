package main

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/health"
	"github.com/a2a-connector/a2a-connector/internal/store"
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
	// Not the agent's turns: no agent chosen (NO_AGENT), and an agent id the tenant does not have.
	wantOutcome(t, s.turn(t, "s-health-3", "", "1与2相加是多少"), pb.Outcome_OUTCOME_NO_AGENT)
	if _, err := s.tryTurn(t, "s-health-4", uuid.NewString(), "1与2相加是多少"); status.Code(err) != codes.NotFound {
		t.Fatalf("turn for an unknown agent: %v, want NOT_FOUND", err)
	}
	// A turn refused because the tenant disabled its agent is the agent's ERROR: its owner sees it.
	off := false
	if _, err := s.store.UpdateAgent(t.Context(), s.tenant, s.agent, connector.AgentPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.tryTurn(t, "s-health-5", s.agent, "1与2相加是多少"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("turn for a disabled agent: %v, want FAILED_PRECONDITION", err)
	}
	if err := s.shutdown(); err != nil {
		t.Fatalf("run: %v", err)
	}
	sum, err := health.NewSummaries(store.New(testDB.Pool)).Summary(t.Context(), s.tenant, s.agent, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Hour.Turns != 3 || sum.Hour.Outcomes[connector.OutcomeCompleted] != 1 || sum.Hour.Outcomes[connector.OutcomeHandback] != 1 ||
		sum.Hour.Outcomes[connector.OutcomeError] != 1 {
		t.Fatalf("health after shutdown: %d turns, outcomes %v; want one COMPLETED, one HANDBACK, one ERROR", sum.Hour.Turns, sum.Hour.Outcomes)
	}
	if len(sum.Failures) != 1 || sum.Failures[0].Code != "agent_disabled" || sum.Failures[0].Message != "the agent is disabled" {
		t.Errorf("failures = %+v, want the disabled agent's turn", sum.Failures)
	}
	if sum.Hour.Duration.Count != 3 || sum.Hour.FirstText.Count < 1 {
		t.Errorf("latency samples: duration %d, first text %d", sum.Hour.Duration.Count, sum.Hour.FirstText.Count)
	}
}
