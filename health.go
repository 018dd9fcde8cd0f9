package connector

import (
	"time"
)

// TurnStat is what a tenant's health view learns about one turn when it ends
// (internal/session reports it, internal/health counts it).
type TurnStat struct {
	TenantID, AgentID string
	// Outcome is how the turn ended for the engine, or OutcomeError for a turn that ended
	// before the agent answered (agent disabled, credentials missing, caller gone).
	Outcome Outcome
	// ErrorCode and ErrorMessage say why a FAILED or ERROR turn failed. The message is the
	// connector's own sentence (TurnError.Message), which may quote a short part of what the
	// agent sent; it never holds the user's text.
	ErrorCode, ErrorMessage string
	// FirstText is the time from the turn's arrival to its first reply text; HasText is false
	// when the turn sent no text (then FirstText is not measured).
	FirstText time.Duration
	HasText   bool
	Duration  time.Duration
}

// OutcomeError is the outcome, in the health view and the metrics (the a2ac.outcome attribute),
// of a turn that ended before the agent answered. The engine never sees it: such a turn is a
// gRPC error.
const OutcomeError Outcome = "ERROR"
