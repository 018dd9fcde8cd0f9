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

// Outcome is how a turn ended, as the dialog engine sees it.
type Outcome string

const (
	OutcomeCompleted     Outcome = "COMPLETED"
	OutcomeInputRequired Outcome = "INPUT_REQUIRED"
	OutcomeHandback      Outcome = "HANDBACK"
	OutcomeFailed        Outcome = "FAILED"
	OutcomeCanceled      Outcome = "CANCELED"
	OutcomeNoAgent       Outcome = "NO_AGENT"
)

// TurnEventKind tells TurnEvent kinds apart.
type TurnEventKind int

// Turn event kinds.
const (
	// TextEvent carries new speakable text.
	TextEvent TurnEventKind = iota + 1
	// StatusEvent carries a task state and its status message text.
	StatusEvent
	// SpeechEvent says whether the reply may be interrupted (the voice extension's speech).
	SpeechEvent
)

// String returns the kind's name.
func (k TurnEventKind) String() string {
	switch k {
	case TextEvent:
		return "text"
	case StatusEvent:
		return "status"
	case SpeechEvent:
		return "speech"
	}
	return fmt.Sprintf("TurnEventKind(%d)", int(k))
}

// TurnEvent is what a running turn streams to the dialog engine, whatever A2A version the agent
// spoke: new speakable text, or a task state the agent reported.
type TurnEvent struct {
	Kind TurnEventKind
	// Text is, for TextEvent, the new text (a delta: the events' texts concatenated are what
	// was spoken); for StatusEvent, the status message's text ("" when none).
	//
	// Deltas never take text back. When an agent replaces artifact text already sent with text
	// that does not extend it (a correction), no delta is emitted until the reply again starts
	// with everything sent and grows past it; the turn's final text is then the agent's final
	// version, which may differ from what was spoken.
	Text string
	// State is the task state of a StatusEvent, in the A2A 0.x spelling whatever version the
	// agent spoke ("working", "input-required", …).
	State string
	// BargeIn is, for SpeechEvent, whether the caller may interrupt the reply.
	BargeIn bool
}

// The records of the turn path. internal/session speaks them to its store (internal/store
// implements it) and to its invoker (internal/invoke implements it); neither implementation
// imports the other or the session. The session's store is SessionStore (session.go, with the
// records only the store takes); its invoker is an interface it declares itself (session.Invoker).

// TurnRequest is one turn to run against one agent.
type TurnRequest struct {
	// Agent is the agent to call, never nil: EndpointURL, Streaming, APIKeyHeaders, Extensions
	// and ID are used. It is only read, so callers may share one (the router's agent cache does).
	Agent *Agent
	// Credential is the agent's sealed credential, of any kind, opened only by the invoker; nil
	// means none.
	Credential *Sealed
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

// TurnError is the reason of a FAILED (or caller-CANCELED) turn. Message never contains the
// credentials or the user's text; it may quote a short part of what the agent sent.
type TurnError struct {
	Code    string
	Message string
}

// Error implements error, so that callers can wrap and log it.
func (e *TurnError) Error() string { return e.Code + ": " + e.Message }

// Turn error codes: the TurnError.Code of a FAILED turn (or of one the caller canceled). They
// are a contract with the dialog engine (api/proto/connector/v1/connector.proto documents each
// under TurnError.code) and with operators (docs/faults.md says which fault gives which);
// turn_test.go checks both against TurnErrorCodes, the one table.
const (
	CodeTimeout          = "timeout"
	CodeAgentUnreachable = "agent_unreachable"
	// CodeAgentUnauthorized: the agent answered 401 or 403 (credentials missing, wrong or revoked).
	CodeAgentUnauthorized = "agent_unauthorized"
	CodeAgentHTTPStatus   = "agent_http_status"
	CodeRedirect          = "redirect"
	CodeBlockedAddress    = "blocked_address"
	CodeAgentRPCError     = "agent_rpc_error"
	CodeProtocolError     = "protocol_error"
	CodeTooLarge          = "too_large"
	CodeStreamEnded       = "stream_ended"
	// CodeTaskFailed: the agent reported the task failed; Message is its status message.
	CodeTaskFailed   = "task_failed"
	CodeAuthRequired = "auth_required"
	CodeUnknownState = "unknown_state"
	CodeCredentials  = "api_key"
	// CodeAgentUnavailable: the deployment's circuit breaker for the agent is open (it failed in
	// ways that say it is down, several times in a row); the turn ended without calling it.
	CodeAgentUnavailable = "agent_unavailable"
	// CodeInternal: the connector itself failed after the turn started (the hold could not be
	// saved).
	CodeInternal = "internal"
	// CodeCanceled: the caller canceled the turn (barge-in). The engine never reads it (it
	// canceled, and gets no Final); the turn's trace, metrics and health view do.
	CodeCanceled = "canceled"
)

// TurnErrorCode is one code a turn's error may carry.
type TurnErrorCode struct {
	Code string
	// Meaning is what happened, in a line (connector.proto says more).
	Meaning string
	// InFinal: the code can reach the dialog engine in a Final (connector.proto documents
	// exactly these).
	InFinal bool
}

// TurnErrorCodes returns every turn error code, in the order connector.proto documents them.
func TurnErrorCodes() []TurnErrorCode {
	return []TurnErrorCode{
		{CodeTimeout, "the turn deadline, or the first-event or idle limit, passed first", true},
		{CodeAgentUnreachable, "no HTTP response, after retries; or a broken stream nothing recovered", true},
		{CodeAgentUnauthorized, "the agent answered 401 or 403", true},
		{CodeAgentHTTPStatus, "the agent answered with another HTTP error status", true},
		{CodeRedirect, "the agent answered with a redirect, never followed", true},
		{CodeBlockedAddress, "the agent's host resolves to an address the connector may not call", true},
		{CodeAgentRPCError, "the agent returned an A2A (JSON-RPC, HTTP+JSON or gRPC) error", true},
		{CodeProtocolError, "the answer was not valid A2A", true},
		{CodeTooLarge, "an event over 1 MiB or a reply over 256 KiB", true},
		{CodeStreamEnded, "the stream ended without a final state and nothing recovered one", true},
		{CodeTaskFailed, "the agent reported the task failed", true},
		{CodeAuthRequired, "the agent reported auth-required", true},
		{CodeUnknownState, "the agent reported unknown or an undefined state", true},
		{CodeCredentials, "the stored credentials could not be decrypted", true},
		{CodeAgentUnavailable, "the circuit breaker for the agent is open", true},
		{CodeInternal, "the connector failed after the turn started", true},
		{CodeCanceled, "the caller canceled the turn", false},
	}
}
