// Package connector holds the domain of a2a-connector: tenants, registered agents, card
// validation problems, session holds and turn outcomes, plus the sentinel errors every other
// package matches with errors.Is.
//
// It also names the records that cross package lines, so that the packages using a service do not
// import its implementation: the turn path's (Turn, TurnSink, TurnFinal and SessionInfo between the
// gRPC edge and the session; TurnRequest and TurnResult between the session and the invoker;
// TurnLookup, TurnRecord and InflightTask between the session and the store), the registry's
// (NewAgent, Revision, AgentPatch, a Sealed credential, DuplicateError), a turn refused over a cap
// (RefusedError), a turn as the health view counts it (TurnStat), and the turn error codes
// (TurnErrorCodes, the one table). An interface stays with the package that consumes it
// (session.Invoker, agents.Store, grpcapi.Router) unless more than one package must name it:
// SessionStore (the session and the store contract) and TurnSink (the session and the gRPC edge).
//
// Its files follow the entities: tenant.go, agent.go (the agent, its card profile, interfaces
// and credential kinds, and its registration records), card.go, session.go, turn.go (the turn's
// request, result, events and errors, with the turn error codes), admission.go, health.go,
// identity.go and voice.go, each with its errors and the interfaces that name its types. The
// sentinel errors every package matches are below.
//
// It imports nothing of ours and does no I/O. Adapters (store, cardcheck, invoke, console, the
// gRPC server) translate between these types and their own wire or storage formats.
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
	// ErrUnavailable: a dependency (Postgres) is down.
	ErrUnavailable = errors.New("unavailable")
	// ErrCutOff: this replica has not reached Postgres for half of A2AC_INFLIGHT_STALE, so it
	// takes no turns (and ended its running ones) before another replica may take it for dead
	// and cancel its agent tasks; another replica serves them. It matches ErrUnavailable.
	ErrCutOff = fmt.Errorf("connector cannot reach its database; retry on another replica: %w", ErrUnavailable)
)
