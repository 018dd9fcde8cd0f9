package connector

import (
	"fmt"
	"time"
)

// The dialog engine's side of a turn: what internal/grpcapi converts from and to protobuf, and
// internal/session serves (grpcapi declares the service it needs; *session.Router is it).

// Turn is one user turn as the dialog engine sends it.
type Turn struct {
	TenantID, SessionID, TurnID string
	AgentID                     string // the engine's choice; "" for none
	Text                        string
	Metadata                    map[string]any
	// ReceivedTextBytes is, on a retry of a turn whose earlier attempt streamed text, how many
	// bytes of that text the engine received: they are withheld from this attempt's deltas.
	ReceivedTextBytes int
	// DTMF or NoInput, at most one, replaces Text as the turn's input (voice.go); both nil is a
	// text turn.
	DTMF    *DTMF
	NoInput *NoInput
	// Interruption, when set, says the caller cut off an earlier turn's reply.
	Interruption *Interruption
	// Channel, when set, says where the conversation happens.
	Channel *Channel
	// UserID is the platform's user behind the turn ("" for none). Personal data: it is never
	// logged or traced, and agents see only a pairwise id derived from it (internal/identity).
	UserID string
}

// TurnFinal is how a turn ended, as the engine sees it.
type TurnFinal struct {
	Outcome           Outcome
	Text              string
	TaskID, ContextID string
	Err               *TurnError
	Metadata          map[string]any
	// HoldExpiresAt is set when the session is held after the turn.
	HoldExpiresAt time.Time
	// WithheldTextBytes is how many bytes of Text were kept out of the deltas
	// (Turn.ReceivedTextBytes, rounded up to a character, at most len(Text) as streamed).
	WithheldTextBytes int
	// Finish is how a voice-extension agent ended its part (COMPLETED or HANDBACK); Expect is how
	// it wants its question answered (INPUT_REQUIRED). Nil when it did not say.
	Finish *Finish
	Expect *Expect
}

// TurnSink receives a turn's events in order (an interface here, not with its caller, the
// session, because it is in the signature of the service grpcapi declares and session serves): Started (with the agent's first event, or at the
// latest a moment after the agent is called), then Events, then Final. NO_AGENT is a lone
// Final. Errors from Started and Final end the turn (the caller is gone); Event errors are
// ignored because the caller's cancellation reaches the agent call through ctx anyway.
type TurnSink interface {
	Started(agent *Agent, held bool, taskID string) error
	Event(e TurnEvent) error
	Final(f TurnFinal) error
}

// SessionInfo is a session's live hold as the engine may ask for it.
type SessionInfo struct {
	Held      bool
	Hold      Hold
	AgentName string
}

// Cap names a concurrent-turn cap (internal/admission keeps them).
type Cap string

// The three caps, checked in this order: the tenant's own cap first, so a tenant over it is told
// about its own limit even when the replica is full too.
const (
	CapTenant  Cap = "tenant"
	CapAgent   Cap = "agent"
	CapReplica Cap = "replica"
)

// RefusedError is a turn refused by a cap, at once, never queued. Its message names the cap, its
// value and its scope (a tenant's and an agent's caps are the deployment's, the replica's its
// own), and holds nothing else: edges may show it as is.
type RefusedError struct {
	Cap   Cap
	Limit int
}

func (e *RefusedError) Error() string {
	scope := "deployment"
	if e.Cap == CapReplica {
		scope = "replica"
	}
	return fmt.Sprintf("%s cap reached: at most %d concurrent turns per %s", e.Cap, e.Limit, scope)
}

// TurnStat is what a tenant's health view learns about one turn when it ends
// (internal/session reports it, internal/health counts it).
type TurnStat struct {
	TenantID, AgentID string
	// Outcome is how the turn ended for the engine, or OutcomeError for a turn that ended
	// before the agent answered (agent disabled, API key missing, caller gone).
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
