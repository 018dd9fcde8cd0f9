// Package connector holds the domain of a2a-connector: tenants, registered agents, card
// validation problems, session holds and turn outcomes, plus the sentinel errors every other
// package matches with errors.Is.
//
// It also names the records that cross package lines, so that the packages using a service do not
// import its implementation: the turn path's (Turn, TurnSink, TurnFinal and SessionInfo between the
// gRPC edge and the session; TurnRequest and TurnResult between the session and the invoker;
// TurnLookup, TurnRecord and InflightTask between the session and the store), the registry's
// (NewAgent, Revision, AgentPatch, a Sealed key, DuplicateError), a turn refused over a cap
// (RefusedError), a turn as the health view counts it (TurnStat), and the turn error codes
// (TurnErrorCodes, the one table). An interface stays with the package that consumes it
// (session.Invoker, agents.Store, grpcapi.Router) unless more than one package must name it:
// SessionStore (the session and the store contract) and TurnSink (the session and the gRPC edge).
//
// It imports nothing of ours and does no I/O. Adapters (store, cardcheck, invoke, console, the
// gRPC server) translate between these types and their own wire or storage formats.
package connector

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Tenant is a customer of the platform. Every agent, token and session hold belongs to one.
type Tenant struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// TenantLimits are the operator's overrides of a tenant's concurrent-turn caps in each
// connector process (internal/admission); 0 is the process's default.
type TenantLimits struct {
	MaxTurns         int // the tenant's turns in flight
	MaxTurnsPerAgent int // each of its agents' turns in flight
}

// Skill is one capability an agent declares in its card.
type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
	// InputSchema is the skill's parameter schema (MCP-tool shaped) when the card declares the
	// platform's intent extension; nil otherwise.
	InputSchema json.RawMessage
}

// APIKeyHeader is the header the platform always sends a tenant's agent API key in (the
// platform contract); a card may name more headers (CardProfile.APIKeyHeaders).
const APIKeyHeader = "X-API-KEY"

// CardProfile is what the platform derives from a valid agent card: everything the connector
// needs to call the agent, without re-reading the raw card.
type CardProfile struct {
	Name        string
	Description string
	Version     string
	// ProtocolVersion is the A2A version spoken at EndpointURL, as the card states it ("1.0",
	// "0.3.0", "0.2.5"). It decides the wire generation of every call: 1.x is A2A 1.0 (its
	// method names and JSON shapes), anything else the 0.2.5/0.3 JSON-RPC wire.
	ProtocolVersion string
	// EndpointURL is the URL of the chosen interface: the first supportedInterfaces entry of a
	// 1.0 card that the connector speaks, in the card's order, or a 0.x card's url, or its first
	// additional interface the connector speaks when it does not speak preferredTransport.
	EndpointURL string
	// EndpointBinding is the protocol binding of the chosen interface as the card names it
	// ("JSONRPC", "HTTP+JSON"); "" is JSON-RPC (profiles stored before bindings were a choice).
	EndpointBinding string
	// EndpointTenant is the A2A 1.0 `tenant` of the chosen interface, sent in every request's
	// params; "" when the card set none.
	EndpointTenant string
	// Fallback is the next interface the same card offers that the connector speaks, in
	// another generation or binding (dual-version servers list a 1.0 and a 0.3 interface). A
	// turn refused for its version or binding is retried there once. Nil when there is none.
	Fallback  *Interface
	Streaming bool
	Skills    []Skill
	// APIKeyRequired is true when every acceptable security alternative needs an apiKey.
	APIKeyRequired bool
	// APIKeyHeaders are the header names the key is sent under. Always contains APIKeyHeader
	// (the platform contract) when a key is used; a card naming another header adds that name.
	APIKeyHeaders []string
	// CredentialKind is what the card asks the tenant for (one of the CredentialKind*
	// constants): the kind of the first alternative the platform can meet, an API key first.
	// CredentialKinds lists every kind some acceptable alternative takes (a card offering
	// OAuth2 or an API key takes either). CredentialRequired: no alternative needs nothing.
	CredentialKind     string
	CredentialKinds    []string
	CredentialRequired bool
	// OAuth2TokenURL is the token URL of the card's OAuth 2.0 client-credentials flow (or of
	// the Google scheme) and OAuth2Scopes the scopes its requirement names; a registration's
	// own tokenUrl and scopes override them.
	OAuth2TokenURL string
	OAuth2Scopes   []string
	// CardSignature is what verifying the card's signatures found.
	CardSignature CardSignature
	// ExtendedCard: the card offers an authenticated extended card (A2A 1.0
	// capabilities.extendedAgentCard, 0.3 supportsAuthenticatedExtendedCard); its skills are
	// then the ones Skills holds, when it could be fetched.
	ExtendedCard bool
	// Extensions are the extension URIs the card declares and the platform supports; they are
	// activated on every call with the X-A2A-Extensions header.
	Extensions []string
}

// Interface is one endpoint of an agent, the A2A version and the binding spoken there.
type Interface struct {
	URL             string
	ProtocolVersion string
	// Binding is the protocol binding as the card names it; "" is JSON-RPC.
	Binding string
	// Tenant is the A2A 1.0 `tenant` the interface asks for ("" when none).
	Tenant string
}

// Agent is a tenant's registered A2A agent at its live card revision.
type Agent struct {
	ID       string
	TenantID string
	CardURL  string
	CardProfile
	// APIKeySet: a sealed credential is stored (for historical reasons the column and the
	// name are the API key's); CredentialSetKind says which kind it is.
	APIKeySet         bool
	CredentialSetKind string
	// TLSCAPem is the agent's own CA bundle (PEM): its calls, card fetches and token URLs trust
	// it in addition to the process-wide roots. "" for none.
	TLSCAPem string
	Enabled  bool
	Revision int
	// OnFallback: the preferred interface refused the connector's version or binding and the
	// card's Fallback answered, at this revision; turns go to the fallback (ActiveInterface).
	OnFallback bool
	// CallerIdentity: the tenant asked that the agent receive the platform's signed token naming
	// the turn's user (internal/identity) on every call of a turn that names one.
	CallerIdentity bool
	Warnings       []Problem
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ActiveInterface is the interface the agent's turns use: the card's preferred one
// (EndpointURL, ProtocolVersion, EndpointBinding, EndpointTenant), or its Fallback once turns
// moved there (OnFallback).
func (a Agent) ActiveInterface() Interface {
	if a.OnFallback && a.Fallback != nil && a.Fallback.URL != "" {
		return *a.Fallback
	}
	return Interface{URL: a.EndpointURL, ProtocolVersion: a.ProtocolVersion, Binding: a.EndpointBinding, Tenant: a.EndpointTenant}
}

// Invocable reports why the agent cannot be called, or nil when it can.
func (a Agent) Invocable() error {
	if !a.Enabled {
		return ErrAgentDisabled
	}
	if a.APIKeyRequired && !a.APIKeySet {
		return ErrAPIKeyMissing
	}
	if a.CredentialRequired && !a.CredentialsUsable() {
		return fmt.Errorf("agent needs credentials of kind %s: %w", a.Credential(), ErrAPIKeyMissing)
	}
	return nil
}

// Credential is CredentialKind, or for a profile stored before credential kinds existed ("")
// what its API key fields mean: apiKey or none.
func (p CardProfile) Credential() string {
	switch {
	case p.CredentialKind != "":
		return p.CredentialKind
	case p.APIKeyRequired || len(p.APIKeyHeaders) > 0:
		return CredentialKindAPIKey
	}
	return CredentialKindNone
}

// Credential kinds: what a card asks for and what a registration stores.
const (
	CredentialKindAPIKey               = "apiKey"
	CredentialKindBearerToken          = "bearerToken"
	CredentialKindOAuth2               = "oauth2"
	CredentialKindGoogleServiceAccount = "googleServiceAccount"
	// CredentialKindAWSSigV4 is an AWS access key whose calls are signed with Signature
	// Version 4 (Bedrock AgentCore Runtime). No card can ask for it (A2A has no such scheme):
	// only a registration stores it, and it meets any card (CredentialFits).
	CredentialKindAWSSigV4 = "awsSigV4"
	// CredentialKindMTLS is a client certificate and its key, for agents whose scheme is
	// mutual TLS: it goes in the TLS handshake, not in a header.
	CredentialKindMTLS = "mtls"
	CredentialKindNone = "none"
)

// CredentialKindsStored is every kind a registration can store, in the order the console offers
// them.
func CredentialKindsStored() []string {
	return []string{CredentialKindAPIKey, CredentialKindBearerToken, CredentialKindOAuth2,
		CredentialKindGoogleServiceAccount, CredentialKindAWSSigV4, CredentialKindMTLS}
}

// CredentialsUsable reports whether the stored credential is of a kind the card takes.
func (a Agent) CredentialsUsable() bool {
	if !a.APIKeySet {
		return false
	}
	set := a.CredentialSetKind
	if set == "" {
		set = CredentialKindAPIKey
	}
	return CredentialFits(set, a.Credential()) || slices.ContainsFunc(a.CredentialKinds, func(k string) bool { return CredentialFits(set, k) })
}

// CredentialFits reports whether a stored credential of kind have meets a card asking for
// want. Bearer tokens, OAuth 2.0 clients and Google service accounts all end up as
// Authorization: Bearer, so each meets a card asking for any of them (Google's agent hosts, for
// one, declare plain HTTP bearer); an API key meets only an API key.
//
// An AWS SigV4 key meets every card: a card cannot declare SigV4, so the tenant who stores one
// says the agent wants it, whatever scheme the card names (AgentCore serves the card of the
// agent inside, which may name OAuth or nothing).
func CredentialFits(have, want string) bool {
	if have == want || have == CredentialKindAWSSigV4 {
		return true
	}
	return bearerKind(have) && bearerKind(want)
}

func bearerKind(k string) bool {
	return k == CredentialKindBearerToken || k == CredentialKindOAuth2 || k == CredentialKindGoogleServiceAccount
}

// Card signature statuses (CardSignature.Status).
const (
	SignatureVerified     = "verified"
	SignatureUnsigned     = "unsigned"
	SignatureUnverifiable = "unverifiable"
	SignatureInvalid      = "invalid"
)

// CardSignature is the outcome of verifying a card's JWS signatures: the status and the key id
// ("kid") of the key that verified it, or of the one that was sought.
type CardSignature struct {
	Status string `json:"status"`
	KeyID  string `json:"keyId,omitempty"`
}

// Severity says whether a Problem blocks registration.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one finding of card validation, addressed by a JSON path into the card
// ("skills[2].id", "defaultInputModes") and a stable machine code ("required", "min_items",
// "unsupported_mode", ...). Message is a sentence a tenant can act on.
type Problem struct {
	Path     string   `json:"path"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Severity Severity `json:"severity"`
}

// HasErrors reports whether any problem has error severity.
func HasErrors(problems []Problem) bool {
	for _, p := range problems {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

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

// TurnError is the reason of a FAILED (or caller-CANCELED) turn. Message never contains the API
// key or the user's text; it may quote a short part of what the agent sent.
type TurnError struct {
	Code    string
	Message string
}

// Error implements error, so that callers can wrap and log it.
func (e *TurnError) Error() string { return e.Code + ": " + e.Message }
