package store

import (
	"encoding/json"
	"fmt"

	connector "github.com/a2a-connector/a2a-connector"
)

// profileJSON is how a connector.CardProfile is kept in agent_revisions.profile. It has its own
// field names so that renaming a Go field never makes stored revisions unreadable; a test fails
// when connector.CardProfile or connector.Skill gains a field this mapping does not carry.
type profileJSON struct {
	Name            string `json:"name"`
	Description     string `json:"description"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocolVersion"`
	EndpointURL     string `json:"endpointUrl"`
	// EndpointTenant and Fallback came with A2A 1.0; revisions stored before them read as ""
	// and nil, which is what a 0.x card means.
	EndpointTenant string `json:"endpointTenant,omitempty"`
	// EndpointBinding came with HTTP+JSON and gRPC; "" (revisions before it) is JSON-RPC.
	EndpointBinding string         `json:"endpointBinding,omitempty"`
	Fallback        *interfaceJSON `json:"fallback,omitempty"`
	Streaming       bool           `json:"streaming"`
	Skills          []skillJSON    `json:"skills"`
	APIKeyRequired  bool           `json:"apiKeyRequired"`
	APIKeyHeaders   []string       `json:"apiKeyHeaders"`
	Extensions      []string       `json:"extensions"`
	// The credential fields came after the API key fields; a revision stored before them reads as "",
	// which connector.CardProfile.Credential derives from the API key fields.
	CredentialKind     string         `json:"credentialKind,omitempty"`
	CredentialKinds    []string       `json:"credentialKinds,omitempty"`
	CredentialRequired bool           `json:"credentialRequired,omitempty"`
	OAuth2TokenURL     string         `json:"oauth2TokenUrl,omitempty"`
	OAuth2Scopes       []string       `json:"oauth2Scopes,omitempty"`
	CardSignature      *signatureJSON `json:"cardSignature,omitempty"`
	ExtendedCard       bool           `json:"extendedCard,omitempty"`
}

// signatureJSON is a connector.CardSignature.
type signatureJSON struct {
	Status string `json:"status"`
	KeyID  string `json:"keyId,omitempty"`
}

// interfaceJSON is a connector.Interface.
type interfaceJSON struct {
	URL             string `json:"url"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
	Binding         string `json:"binding,omitempty"`
}

type skillJSON struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples"`
	// InputSchema is the schema's JSON text as a JSON string: jsonb would reorder its keys and
	// respace it, and the dialog engine should get the schema exactly as the card had it.
	InputSchema *string `json:"inputSchema,omitempty"`
}

func encodeProfile(p connector.CardProfile) ([]byte, error) {
	pj := profileJSON{
		Name:            p.Name,
		Description:     p.Description,
		Version:         p.Version,
		ProtocolVersion: p.ProtocolVersion,
		EndpointURL:     p.EndpointURL,
		EndpointTenant:  p.EndpointTenant,
		EndpointBinding: p.EndpointBinding,
		Streaming:       p.Streaming,
		APIKeyRequired:  p.APIKeyRequired,
		APIKeyHeaders:   p.APIKeyHeaders,
		Extensions:      p.Extensions,

		CredentialKind: p.CredentialKind, CredentialKinds: p.CredentialKinds, CredentialRequired: p.CredentialRequired,
		OAuth2TokenURL: p.OAuth2TokenURL, OAuth2Scopes: p.OAuth2Scopes, ExtendedCard: p.ExtendedCard,
	}
	if p.CardSignature.Status != "" {
		pj.CardSignature = &signatureJSON{Status: p.CardSignature.Status, KeyID: p.CardSignature.KeyID}
	}
	if f := p.Fallback; f != nil {
		pj.Fallback = &interfaceJSON{URL: f.URL, ProtocolVersion: f.ProtocolVersion, Tenant: f.Tenant, Binding: f.Binding}
	}
	if p.Skills != nil {
		pj.Skills = make([]skillJSON, len(p.Skills))
	}
	for i, s := range p.Skills {
		pj.Skills[i] = skillJSON{
			ID:          s.ID,
			Name:        s.Name,
			Description: s.Description,
			Tags:        s.Tags,
			Examples:    s.Examples,
		}
		if s.InputSchema != nil {
			if !json.Valid(s.InputSchema) {
				return nil, fmt.Errorf("skill %q: input schema is not JSON", s.ID)
			}
			schema := string(s.InputSchema)
			pj.Skills[i].InputSchema = &schema
		}
	}
	return json.Marshal(pj)
}

func decodeProfile(b []byte) (connector.CardProfile, error) {
	var pj profileJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		return connector.CardProfile{}, fmt.Errorf("decode profile: %w", err)
	}
	p := connector.CardProfile{
		Name:            pj.Name,
		Description:     pj.Description,
		Version:         pj.Version,
		ProtocolVersion: pj.ProtocolVersion,
		EndpointURL:     pj.EndpointURL,
		EndpointTenant:  pj.EndpointTenant,
		EndpointBinding: pj.EndpointBinding,
		Streaming:       pj.Streaming,
		APIKeyRequired:  pj.APIKeyRequired,
		APIKeyHeaders:   pj.APIKeyHeaders,
		Extensions:      pj.Extensions,

		CredentialKind: pj.CredentialKind, CredentialKinds: pj.CredentialKinds, CredentialRequired: pj.CredentialRequired,
		OAuth2TokenURL: pj.OAuth2TokenURL, OAuth2Scopes: pj.OAuth2Scopes, ExtendedCard: pj.ExtendedCard,
	}
	if pj.CardSignature != nil {
		p.CardSignature = connector.CardSignature{Status: pj.CardSignature.Status, KeyID: pj.CardSignature.KeyID}
	}
	if f := pj.Fallback; f != nil {
		p.Fallback = &connector.Interface{URL: f.URL, ProtocolVersion: f.ProtocolVersion, Tenant: f.Tenant, Binding: f.Binding}
	}
	if pj.Skills != nil {
		p.Skills = make([]connector.Skill, len(pj.Skills))
	}
	for i, s := range pj.Skills {
		p.Skills[i] = connector.Skill{
			ID:          s.ID,
			Name:        s.Name,
			Description: s.Description,
			Tags:        s.Tags,
			Examples:    s.Examples,
		}
		if s.InputSchema != nil {
			p.Skills[i].InputSchema = json.RawMessage(*s.InputSchema)
		}
	}
	return p, nil
}

// encodeWarnings stores no warnings as [] rather than null, so SQL over the column needs no
// null case.
func encodeWarnings(w []connector.Problem) ([]byte, error) {
	if len(w) == 0 {
		return []byte("[]"), nil
	}
	return json.Marshal(w)
}

// decodeWarnings returns nil for no warnings.
func decodeWarnings(b []byte) ([]connector.Problem, error) {
	var w []connector.Problem
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode warnings: %w", err)
	}
	if len(w) == 0 {
		return nil, nil
	}
	return w, nil
}
