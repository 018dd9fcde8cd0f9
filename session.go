package connector

import (
	"context"
	"time"
)

// Hold is a dialog session held by an agent that answered input-required: the user's next
// turns go to that agent, continuing TaskID and ContextID, until ExpiresAt or the task ends.
type Hold struct {
	TenantID  string
	SessionID string
	AgentID   string
	TaskID    string
	ContextID string
	// TurnID is the turn that created or last refreshed the hold; an older turn never
	// overwrites a newer one.
	TurnID    string
	ExpiresAt time.Time
	UpdatedAt time.Time
}

// SessionInfo is a session's live hold as the engine may ask for it.
type SessionInfo struct {
	Held      bool
	Hold      Hold
	AgentName string
}

// The records the session speaks to its store about a turn (turn.go says how the turn path's
// records are shared out).

// TurnLookup is everything a turn needs from the store before it calls the agent, read in one
// round trip.
type TurnLookup struct {
	// Hold is the session's live (unexpired) hold, nil when the session is free.
	Hold *Hold
	// HoldAgentUpdatedAt is the holding agent's updated_at; zero when it no longer exists.
	HoldAgentUpdatedAt time.Time
	// AgentUpdatedAt is the requested agent's updated_at; zero when it is not in the tenant.
	AgentUpdatedAt time.Time
	// ContextID is the contextId the session last had with the requested agent.
	ContextID string
}

// TurnRecord is the result of a turn to write: the context the session now has with the agent
// and, unless both SetHold and ReleaseHold are empty, the session's new hold state.
type TurnRecord struct {
	TenantID, SessionID, AgentID, TurnID string
	// StartedAt orders racing turns of one session: a record never overwrites the hold decided
	// by a turn that started later.
	StartedAt   time.Time
	ContextID   string
	SetHold     *Hold
	ReleaseHold bool
}

// InflightTask is an agent task that a turn on some replica is running.
type InflightTask struct {
	TenantID, AgentID, TaskID, SessionID string
}

// SessionStore is what the session router keeps in Postgres: holds, contexts and the agents
// they name. internal/store implements it, and so does the router tests' in-memory double. It
// is declared here rather than by its consumer, internal/session, because more than one package
// names it: the contract every implementation passes (internal/storetest) names it too.
type SessionStore interface {
	// LookupTurn reads, in one round trip, the session's live hold, its context with agentID
	// and the versions of the holding and the requested agent.
	LookupTurn(ctx context.Context, tenantID, sessionID, agentID string, now time.Time) (TurnLookup, error)
	// SaveTurn writes a turn's context and hold change and returns once it is durable; a
	// record never overwrites the hold of a turn that started later.
	SaveTurn(ctx context.Context, r TurnRecord) error
	// SaveAfterFinal saves a turn's record in the background (after its Final, when nobody
	// waits for it), in order with the session's other such saves, and reports the error to
	// done. How it goes to Postgres (with whom, when) is the store's business.
	SaveAfterFinal(ctx context.Context, r TurnRecord, done func(error))
	// SaveUntilWritten saves a record durably in the background, in order with the session's
	// other background saves, trying again while the store cannot be reached, for at most
	// within: for a hold change the engine was told of but whose SaveTurn failed.
	SaveUntilWritten(ctx context.Context, r TurnRecord, within time.Duration, done func(error))
	// WaitSaves returns once the session's background saves are written, or with ctx's cause,
	// or with the error of a retried save that was asked to try at once and failed.
	WaitSaves(ctx context.Context, tenantID, sessionID string) error
	// Drain returns once every background save is over (retried ones try once more).
	Drain()
	// AgentForTurn reads an agent and its sealed key (nil when none).
	AgentForTurn(ctx context.Context, tenantID, agentID string) (Agent, *Sealed, error)
	ReleaseHold(ctx context.Context, tenantID, sessionID string, now time.Time) (Hold, error)
	GetHold(ctx context.Context, tenantID, sessionID string, now time.Time) (Hold, Agent, error)
	ListAgents(ctx context.Context, tenantID string) ([]Agent, error)
	SweepSessions(ctx context.Context, before time.Time) (int64, error)
}
