package connector

import "errors"

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
	// ErrAPIKeyMissing: the card requires an API key and none is set.
	ErrAPIKeyMissing = errors.New("agent requires an API key and none is set")
	// ErrUnavailable: a dependency (Postgres) is down.
	ErrUnavailable = errors.New("unavailable")
)
