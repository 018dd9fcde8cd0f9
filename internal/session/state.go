// Package session routes a dialog session's turns: it decides which agent gets a turn (a live
// hold wins over the engine's choice), runs the turn through internal/invoke, and moves the
// session between free and held (hold on input-required, release on anything else, hand back on
// rejected). Holds live in Postgres, so any replica can serve any turn.
//
// It does not speak A2A (internal/invoke does), does not know gRPC (internal/grpcapi converts),
// and never logs user text.
package session

import (
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// ChangeKind is what a finished turn does to the session's hold.
type ChangeKind int

const (
	// Keep leaves the hold as it was before the turn: the turn was interrupted by our side
	// (timeout, barge-in), so nothing the agent said decides the session.
	Keep ChangeKind = iota
	// Set makes (or refreshes) a hold on the turn's agent, task and context.
	Set
	// Release frees the session.
	Release
)

func (k ChangeKind) String() string {
	switch k {
	case Keep:
		return "keep"
	case Set:
		return "set"
	default:
		return "release"
	}
}

// Change is the decision of After.
type Change struct {
	Kind ChangeKind
	Hold connector.Hold // the new hold when Kind is Set
}

// TurnEnd is what After needs to know about a finished turn.
type TurnEnd struct {
	TenantID, SessionID, TurnID, AgentID string
	Outcome                              connector.Outcome
	TaskID, ContextID                    string
	// Interrupted: our side ended the turn (turn timeout, caller cancel).
	Interrupted bool
}

// After is the session state machine: given how a turn ended, what becomes of the hold.
//
//	input-required                    -> Set (hold with TTL from now; refreshed every such turn)
//	completed, failed, canceled,
//	rejected (handback), no agent     -> Release
//	interrupted by us                 -> Keep (the hold as it was before the turn)
func After(end TurnEnd, now time.Time, ttl time.Duration) Change {
	if end.Interrupted {
		return Change{Kind: Keep}
	}
	if end.Outcome == connector.OutcomeInputRequired && end.TaskID != "" {
		return Change{Kind: Set, Hold: connector.Hold{
			TenantID:  end.TenantID,
			SessionID: end.SessionID,
			AgentID:   end.AgentID,
			TaskID:    end.TaskID,
			ContextID: end.ContextID,
			TurnID:    end.TurnID,
			ExpiresAt: now.Add(ttl),
			UpdatedAt: now,
		}}
	}
	return Change{Kind: Release}
}
