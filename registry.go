package connector

import (
	"encoding/json"
	"time"
)

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
	// ID is the agent's UUID. Empty: the store picks one — not allowed with an APIKey, whose
	// ciphertext is bound to the id and so must be sealed after the id is chosen.
	ID       string
	TenantID string
	// CardURL is what the tenant pasted; unique per tenant.
	CardURL string
	// ResolvedCardURL is where the card was actually found (after discovery and redirects).
	ResolvedCardURL string
	// Card is the card JSON as fetched.
	Card     json.RawMessage
	Profile  CardProfile
	Warnings []Problem
	APIKey   *Sealed
	// CredentialKind is the kind of credential APIKey seals (CredentialKind*); "" means an API
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
	// APIKey replaces the agent's key.
	APIKey *Sealed
	// CredentialKind is the kind APIKey seals ("" means an API key); it is stored with it.
	CredentialKind string
	// ClearAPIKey removes the agent's key. Setting it together with APIKey is ErrInvalid.
	ClearAPIKey bool
	// TLSCAPem replaces the agent's CA bundle; a pointer to "" removes it.
	TLSCAPem *string
	Enabled  *bool
	// CallerIdentity turns the caller's identity token on or off (Agent.CallerIdentity).
	CallerIdentity *bool
}

// SigningKey is one of the platform's caller-identity signing keys as stored: its key id, its
// public key as a JWK (JSON), its private key sealed (internal/secret), and when it stopped
// signing (zero while it signs).
type SigningKey struct {
	KID       string
	PublicJWK json.RawMessage
	Private   Sealed
	CreatedAt time.Time
	RetiredAt time.Time
}
