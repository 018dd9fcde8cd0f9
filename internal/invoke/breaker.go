package invoke

import "github.com/a2a-connector/a2a-connector/internal/breaker"

// The circuit breaker is internal/breaker's; a turn holds its admission (ticket) and tells it
// what the turn's ending says about the agent (verdict).
type (
	ticket  = breaker.Ticket
	verdict = breaker.Verdict
)

const (
	neutral = breaker.Neutral
	up      = breaker.Up
	down    = breaker.Down
)
