package connector

// Turn error codes: the TurnError.Code of a FAILED turn (or of one the caller canceled). They
// are a contract with the dialog engine (api/proto/connector/v1/connector.proto documents each
// under TurnError.code) and with operators (docs/faults.md says which fault gives which);
// turnerror_test.go checks both against TurnErrorCodes, the one table.
const (
	CodeTimeout          = "timeout"
	CodeAgentUnreachable = "agent_unreachable"
	// CodeAgentUnauthorized: the agent answered 401 or 403 (API key missing, wrong or revoked).
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
	CodeAPIKey       = "api_key"
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
		{CodeAPIKey, "the stored credentials could not be decrypted", true},
		{CodeAgentUnavailable, "the circuit breaker for the agent is open", true},
		{CodeInternal, "the connector failed after the turn started", true},
		{CodeCanceled, "the caller canceled the turn", false},
	}
}
