// Package connector holds the domain of a2a-connector: tenants, registered agents, card
// validation problems, session holds and turn outcomes, plus the sentinel errors every other
// package matches with errors.Is.
//
// It imports nothing of ours and does no I/O. Adapters (store, cardfetch, invoke, console, the
// gRPC server) translate between these types and their own wire or storage formats.
package connector

import (
	"encoding/json"
	"time"
)

// Tenant is a customer of the platform. Every agent, token and session hold belongs to one.
type Tenant struct {
	ID        string
	Name      string
	CreatedAt time.Time
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

// CardProfile is what the platform derives from a valid agent card: everything the connector
// needs to call the agent, without re-reading the raw card.
type CardProfile struct {
	Name            string
	Description     string
	Version         string
	ProtocolVersion string
	// EndpointURL is the JSON-RPC endpoint: the card's url, or the JSONRPC additional interface
	// of an A2A 0.3 card whose preferred transport is something else.
	EndpointURL string
	Streaming   bool
	Skills      []Skill
	// APIKeyRequired is true when every acceptable security alternative needs an apiKey.
	APIKeyRequired bool
	// APIKeyHeaders are the header names the key is sent under. Always contains "X-API-KEY"
	// (the platform contract) when a key is used; a card naming another header adds that name.
	APIKeyHeaders []string
	// Extensions are the extension URIs the card declares and the platform supports; they are
	// activated on every call with the X-A2A-Extensions header.
	Extensions []string
}

// Agent is a tenant's registered A2A agent at its live card revision.
type Agent struct {
	ID       string
	TenantID string
	CardURL  string
	CardProfile
	APIKeySet bool
	Enabled   bool
	Revision  int
	Warnings  []Problem
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Invocable reports why the agent cannot be called, or nil when it can.
func (a Agent) Invocable() error {
	if !a.Enabled {
		return ErrAgentDisabled
	}
	if a.APIKeyRequired && !a.APIKeySet {
		return ErrAPIKeyMissing
	}
	return nil
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
