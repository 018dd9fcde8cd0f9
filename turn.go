package connector

import (
	"context"
	"time"
)

// The records of the turn path. internal/session speaks them to its store (internal/store
// implements it) and to its invoker (internal/invoke implements it); neither implementation
// imports the other or the session. The session's store is SessionStore, below; its invoker is
// an interface it declares itself (session.Invoker).

// TurnRequest is one turn to run against one agent.
type TurnRequest struct {
	// Agent is the agent to call, never nil: EndpointURL, Streaming, APIKeyHeaders, Extensions
	// and ID are used. It is only read, so callers may share one (the router's agent cache does).
	Agent *Agent
	// APIKey is the agent's sealed key, opened only by the invoker; nil means no key.
	APIKey *Sealed
	// MessageID is the A2A messageId, derived from the turn id by the caller so that a retried
	// turn is idempotent at the agent.
	MessageID string
	// Text is the user's utterance, the message's one text part.
	Text string
	// Metadata becomes message.metadata.
	Metadata map[string]any
	// TaskID is set only when continuing a held task.
	TaskID string
	// ContextID is the context the session last had with this agent ("" = none).
	ContextID string
	// UserID is the platform's user behind the turn ("" for none); an agent with CallerIdentity
	// receives the platform's token naming them (pairwise) on each call.
	UserID string
	// OnMetadata, when set, is called on the turn's goroutine with the metadata of each status
	// update's message and of each artifact update's artifact (and of the event itself), before
	// any text the event carries is emitted, so that an extension's signal can reach the engine
	// before or with the text. Like OnTask it must be quick.
	OnMetadata func(md map[string]any)
	// OnTask, when set, is called on the turn's goroutine each time the agent names a task id
	// other than the one the turn knew (at first the held task's, else none), so the caller can
	// track in-flight tasks without reading every event. It must be quick: it runs between
	// events.
	OnTask func(taskID string)
}

// TurnResult is how a turn against an agent ended.
type TurnResult struct {
	Outcome Outcome
	// Text is the whole resolved reply: the text of every artifact in order of appearance (or
	// of the Message result). When no artifact text came, the status message of a completed or
	// input-required task is the reply (where agents put their question); status messages of
	// working tasks are progress, reported only as StatusEvents. After too_large it is only what
	// was sent.
	Text string
	// TaskID and ContextID are the last ones the agent named (or the request's when it named
	// none).
	TaskID, ContextID string
	// State is the last A2A task state seen ("" for a Message result or when none came).
	State string
	// Err says why, when Outcome is FAILED, or CANCELED because the caller canceled. Its Code
	// is one of TurnErrorCodes.
	Err *TurnError
	// Metadata is the metadata of the latest artifact that carried some (agents put device
	// commands there); a Message result's metadata counts as an artifact's.
	Metadata map[string]any
	// EndMetadata is the metadata of the message that ended the turn: the last status's message
	// (the status update event's own metadata when that message has none), or the Message
	// result's. Extensions put how the agent ends its part there.
	EndMetadata map[string]any
	// Interrupted is true when OUR side ended the turn (turn, first-event or idle timeout,
	// caller cancel): the caller keeps the hold as it was before the turn.
	Interrupted bool
	// NonTextParts is how many non-text parts were skipped (for the trace).
	NonTextParts int
}

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
