package session

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	connector "github.com/a2a-connector/a2a-connector"
)

// healthLog keeps what the router reports to the health view (internal/health's Recorder
// writes to Postgres; its own tests cover that).
type healthLog struct {
	mu    sync.Mutex
	turns []connector.TurnStat
}

func (l *healthLog) Record(t connector.TurnStat) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns = append(l.turns, t)
}

// What each kind of turn reports: outcome, error code and message, whether it sent text. Turns
// that reached no agent of the tenant report nothing; durations are the clock's, not compared.
func TestRouter_reports_each_turn_of_an_agent_to_the_health_view(t *testing.T) {
	failed := reply{result: connector.TurnResult{Outcome: connector.OutcomeFailed,
		Err: &connector.TurnError{Code: connector.CodeTimeout, Message: "the agent sent no event within 10s"}}}
	// The last turn's caller leaves before the agent answers: the agent is called, and (the
	// turn's context being the caller's) ends CANCELED.
	h := newHarness(t, completed("你好", "task-1", "ctx-1"), failed, reply{result: connector.TurnResult{Outcome: connector.OutcomeCanceled}})
	var got healthLog
	h.router.health = &got
	h.store.setEnabled(agentB, false)

	h.turn(t, "s1", "t1", agentA)
	h.turn(t, "s2", "t2", agentA)
	// NO_AGENT: no agent to report on.
	h.turn(t, "s3", "t3", "")
	// A disabled agent, and an agent the tenant does not have.
	for _, agent := range []string{agentB, "0c0c0c0c-0000-4000-8000-00000000000c"} {
		if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s4", TurnID: "t4", AgentID: agent, Text: "hi"}, &logSink{log: &h.log}); err == nil {
			t.Fatalf("turn for %s: no error", agent)
		}
	}
	// The caller leaves before Started reaches it: CANCELED, not the agent's failure.
	gone := &failingStart{TurnSink: &logSink{log: &h.log}, err: context.Canceled}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := h.router.HandleTurn(ctx, connector.Turn{TenantID: tenantID, SessionID: "s5", TurnID: "t5", AgentID: agentA, Text: "hi"}, gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("turn with a caller gone at Started: %v", err)
	}

	want := []connector.TurnStat{
		{TenantID: tenantID, AgentID: agentA, Outcome: connector.OutcomeCompleted, HasText: true},
		{TenantID: tenantID, AgentID: agentA, Outcome: connector.OutcomeFailed, ErrorCode: connector.CodeTimeout, ErrorMessage: "the agent sent no event within 10s"},
		{TenantID: tenantID, AgentID: agentB, Outcome: connector.OutcomeError, ErrorCode: "agent_disabled", ErrorMessage: "the agent is disabled"},
		{TenantID: tenantID, AgentID: agentA, Outcome: connector.OutcomeCanceled},
	}
	if diff := cmp.Diff(want, got.turns, cmpopts.IgnoreFields(connector.TurnStat{}, "FirstText", "Duration")); diff != "" {
		t.Fatalf("reported turns (-want +got):\n%s", diff)
	}
}

// failingStart fails Started, as a sink whose caller is gone does.
type failingStart struct {
	connector.TurnSink
	err error
}

func (f *failingStart) Started(*connector.Agent, bool, string) error { return f.err }
