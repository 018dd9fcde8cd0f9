package connector

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Agent is a tenant's registered A2A agent at its live card revision.
type Agent struct {
	ID       string
	TenantID string
	CardURL  string
	CardProfile
	// CredentialsSet: a sealed credential is stored (of any kind; its columns keep the API
	// key's name, api_key_*); CredentialSetKind says which kind it is.
	CredentialsSet    bool
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
	if a.APIKeyRequired && !a.CredentialsSet {
		return ErrCredentialsMissing
	}
	if a.CredentialRequired && !a.CredentialsUsable() {
		return fmt.Errorf("agent needs credentials of kind %s: %w", a.Credential(), ErrCredentialsMissing)
	}
	return nil
}

// CredentialsUsable reports whether the stored credential is of a kind the card takes.
func (a Agent) CredentialsUsable() bool {
	if !a.CredentialsSet {
		return false
	}
	set := a.CredentialSetKind
	if set == "" {
		set = CredentialKindAPIKey
	}
	return CredentialFits(set, a.Credential()) || slices.ContainsFunc(a.CredentialKinds, func(k string) bool { return CredentialFits(set, k) })
}

// The errors of an agent that cannot be called (Invocable); adapters wrap them like the
// package's other sentinel errors (connector.go).
var (
	// ErrAgentDisabled: the agent exists but the tenant switched it off.
	ErrAgentDisabled = errors.New("agent disabled")
	// ErrCredentialsMissing: the card requires credentials (an API key or another kind) and
	// none are set.
	ErrCredentialsMissing = errors.New("agent requires credentials and none are set")
)

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

// The records of an agent's registration. internal/agents hands them to its store
// (internal/store implements it).

// Sealed is a credential as internal/secret seals it: AES-256-GCM ciphertext, sealed with the
// agent id as associated data, and the id of the key that sealed it. Only internal/secret opens
// it; the store keeps it as given.
type Sealed struct {
	Ciphertext []byte // nonce || AES-GCM ciphertext+tag
	KeyID      string
}

// NewAgent is an agent to register, with its first card revision.
type NewAgent struct {
	// ID is the agent's UUID. Empty: the store picks one — not allowed with a Credential, whose
	// ciphertext is bound to the id and so must be sealed after the id is chosen.
	ID       string
	TenantID string
	// CardURL is what the tenant pasted; unique per tenant.
	CardURL string
	// ResolvedCardURL is where the card was actually found (after discovery and redirects).
	ResolvedCardURL string
	// Card is the card JSON as fetched.
	Card       json.RawMessage
	Profile    CardProfile
	Warnings   []Problem
	Credential *Sealed
	// CredentialKind is the kind of credential Credential seals (CredentialKind*); "" means an API
	// key.
	CredentialKind string
	// TLSCAPem is the agent's CA bundle (Agent.TLSCAPem); "" for none.
	TLSCAPem string
	Enabled  bool
	// CallerIdentity: send the agent the caller's identity token (Agent.CallerIdentity).
	CallerIdentity bool
}

// Revision is a newly fetched and validated card of an existing agent.
type Revision struct {
	ResolvedCardURL string
	Card            json.RawMessage
	Profile         CardProfile
	Warnings        []Problem
}

// AgentPatch changes an agent's settings; nil fields stay as they are.
type AgentPatch struct {
	// Credential replaces the agent's credential.
	Credential *Sealed
	// CredentialKind is the kind Credential seals ("" means an API key); it is stored with it.
	CredentialKind string
	// ClearCredential removes the agent's credential. Setting it together with Credential is
	// ErrInvalid.
	ClearCredential bool
	// TLSCAPem replaces the agent's CA bundle; a pointer to "" removes it.
	TLSCAPem *string
	Enabled  *bool
	// CallerIdentity turns the caller's identity token on or off (Agent.CallerIdentity).
	CallerIdentity *bool
}

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
