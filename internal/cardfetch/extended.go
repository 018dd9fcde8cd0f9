package cardfetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// Agents asks an agent for its authenticated extended card (a2aclient.Client.GetExtendedAgentCard):
// in the binaries, the wire client turns use (*invoke.Invoker), so the card is asked for on the
// same guarded clients, gRPC connections and retry budget, in the interface's own binding.
type Agents interface {
	GetExtendedAgentCard(ctx context.Context, ep a2aclient.Endpoint, maxBytes int64) (json.RawMessage, error)
}

// ExtendedError is an authenticated extended card that could not be had. Error says what
// failed, for the tenant: the status, the A2A error code or the kind of failure, never the
// transport's words (addresses, resolvers); Err keeps them for logs.
type ExtendedError struct {
	URL string // the interface asked
	Why string
	Err error
}

func (e *ExtendedError) Error() string { return fmt.Sprintf("extended card from %s: %s", e.URL, e.Why) }

func (e *ExtendedError) Unwrap() error { return e.Err }

// FetchExtended asks the agent for its authenticated extended card, authorized by authz (the
// credential's headers or signature; nil: none), on the interface the profile chose, in its binding and generation (A2A 1.0
// GetExtendedAgentCard on JSON-RPC, HTTP+JSON and gRPC; 0.3 agent/getAuthenticatedExtendedCard,
// GET /v1/card and gRPC GetAgentCard). It returns the extended card's skills, judged like a
// card's (a card that is not valid gives none: the public card's skills stay). Bounded by the
// fetch timeout and size cap, through Options.Agents; never following a redirect.
func (f *Fetcher) FetchExtended(ctx context.Context, p connector.CardProfile, authz reqauth.Func) ([]connector.Skill, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	// cardcheck chose a binding the connector speaks; an unknown name (a profile stored by a
	// newer replica) is tried as JSON-RPC, as turns do.
	binding, _ := a2aclient.BindingFor(p.EndpointBinding)
	ep := a2aclient.Endpoint{URL: p.EndpointURL, Wire: a2aclient.WireFor(p.ProtocolVersion), Binding: binding,
		Tenant: p.EndpointTenant, Authorize: authz, BudgetKey: p.EndpointURL}
	raw, err := f.agents.GetExtendedAgentCard(ctx, ep, f.maxBytes)
	if err != nil {
		return nil, &ExtendedError{URL: p.EndpointURL, Why: explainExtended(ctx, err), Err: err}
	}
	// The card came from the interface: a gRPC address without a scheme in it is called in
	// the interface's scheme.
	rep := f.checker.CheckAt(raw, p.EndpointURL)
	if !rep.Valid || len(rep.Profile.Skills) == 0 {
		return nil, &ExtendedError{URL: p.EndpointURL, Why: "not a valid card"}
	}
	return rep.Profile.Skills, nil
}

// explainExtended says why the extended card could not be had, in the tenant's terms.
func explainExtended(ctx context.Context, err error) string {
	if hse, ok := errors.AsType[*a2aclient.HTTPStatusError](err); ok {
		if hse.RPC != nil {
			return fmt.Sprintf("HTTP %d, agent error %d", hse.StatusCode, hse.RPC.Code)
		}
		return fmt.Sprintf("HTTP %d", hse.StatusCode)
	}
	if rpc, ok := errors.AsType[*a2a.RPCError](err); ok {
		return fmt.Sprintf("agent error %d", rpc.Code)
	}
	if pe, ok := errors.AsType[*a2a.ProtocolError](err); ok {
		return "not an A2A answer (" + string(pe.Kind) + ")"
	}
	return string(classify(ctx, err))
}
