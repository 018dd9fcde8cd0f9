package connector

import (
	"errors"
	"fmt"
)

// Sentinel errors. Adapters wrap them with context (`fmt.Errorf("agent %s: %w", id,
// ErrNotFound)`); each edge (HTTP problem+json, gRPC status) maps them to a wire code in one table.
var (
	// ErrNotFound: the thing does not exist in this tenant. Another tenant's agent is also
	// ErrNotFound, never a permission error, so existence does not leak.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique rule would be broken (same card URL registered twice by a tenant).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request itself is malformed.
	ErrInvalid = errors.New("invalid request")
	// ErrUnauthenticated: no or unknown credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrAgentDisabled: the agent exists but the tenant switched it off.
	ErrAgentDisabled = errors.New("agent disabled")
	// ErrAPIKeyMissing: the card requires credentials (an API key or another kind) and none are set.
	ErrAPIKeyMissing = errors.New("agent requires credentials and none are set")
	// ErrUnavailable: a dependency (Postgres) is down.
	ErrUnavailable = errors.New("unavailable")
	// ErrCutOff: this replica has not reached Postgres for half of A2AC_INFLIGHT_STALE, so it
	// takes no turns (and ended its running ones) before another replica may take it for dead
	// and cancel its agent tasks; another replica serves them. It matches ErrUnavailable.
	ErrCutOff = fmt.Errorf("connector cannot reach its database; retry on another replica: %w", ErrUnavailable)
)

// DuplicateError is a registration, or a refresh, that would give the tenant a second agent for
// a card it has registered already: the same card URL, or the same registration key (store.CardKey) of the URL the card
// was fetched from. It matches ErrConflict.
type DuplicateError struct {
	// AgentID is the tenant's agent that has the card already; "" when it was deleted since.
	AgentID string
	Err     error
}

func (e *DuplicateError) Error() string {
	if e.AgentID == "" {
		return fmt.Sprintf("card already registered: %v", e.Err)
	}
	return fmt.Sprintf("card already registered as agent %s: %v", e.AgentID, e.Err)
}

// Unwrap returns the cause, which matches ErrConflict.
func (e *DuplicateError) Unwrap() error { return e.Err }
