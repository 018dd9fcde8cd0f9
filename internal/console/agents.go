package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/credential"
)

// maxAPIKeyBytes bounds a tenant's API key; real keys are far shorter.
const maxAPIKeyBytes = 4096

// agentJSON is the agent resource. It has no field that could carry the API key.
type agentJSON struct {
	ID          string `json:"id"`
	CardURL     string `json:"cardUrl"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
	// ProtocolVersion, EndpointURL, EndpointBinding and EndpointTenant are the interface the
	// turns use: the card's preferred one, or its fallback once the preferred one refused the
	// connector's version or binding (OnFallback; Preferred is then the one that refused).
	ProtocolVersion string         `json:"protocolVersion"`
	EndpointURL     string         `json:"endpointUrl"`
	EndpointBinding string         `json:"endpointBinding"`
	EndpointTenant  string         `json:"endpointTenant,omitempty"`
	Fallback        *interfaceJSON `json:"fallback,omitempty"`
	OnFallback      bool           `json:"onFallback"`
	Preferred       *interfaceJSON `json:"preferred,omitempty"`
	Streaming       bool           `json:"streaming"`
	Skills          []skillJSON    `json:"skills"`
	Extensions      []string       `json:"extensions"`
	// VoiceExtension: the card declares the platform's voice extension (under the URI this
	// deployment uses), so voice turns reach the agent in full.
	VoiceExtension bool                `json:"voiceExtension"`
	APIKeyRequired bool                `json:"apiKeyRequired"`
	APIKeySet      bool                `json:"apiKeySet"`
	Enabled        bool                `json:"enabled"`
	Revision       int                 `json:"revision"`
	Warnings       []connector.Problem `json:"warnings"`
	CreatedAt      time.Time           `json:"createdAt"`
	UpdatedAt      time.Time           `json:"updatedAt"`
	// CredentialKind is what the card asks for (apiKey, bearerToken, oauth2,
	// googleServiceAccount or none), or awsSigV4 once an AWS key is set; CredentialsSet whether a credential is stored (never
	// shown); CardSignature what verifying the card's signatures found.
	CredentialKind string `json:"credentialKind"`
	// CredentialKinds is every kind the tenant may set for it (credentialKindsOffered).
	CredentialKinds []string                `json:"credentialKinds"`
	CredentialsSet  bool                    `json:"credentialsSet"`
	CardSignature   connector.CardSignature `json:"cardSignature"`
	// CallerIdentity says whether the agent receives the caller's identity token.
	CallerIdentity callerIdentityJSON `json:"callerIdentity"`
	// TLS is the agent's own CA bundle, as sent (absent when none): public, so shown.
	TLS *tlsJSON `json:"tls,omitempty"`
}

// callerIdentityJSON is the agent's caller-identity setting: an object, so that choices about
// the token can be added beside enabled.
type callerIdentityJSON struct {
	// Enabled: every call of a turn that names the platform's user carries the platform's
	// signed token naming them (pairwise) in the A2A-Caller-Identity header.
	Enabled *bool `json:"enabled"`
}

// callerIdentityOf reads a request's callerIdentity: nil when absent, an error when enabled is
// missing (an empty object says nothing).
func callerIdentityOf(in *callerIdentityJSON) (*bool, error) {
	if in == nil {
		return nil, nil
	}
	if in.Enabled == nil {
		return nil, fieldError("callerIdentity.enabled", "required", "Send callerIdentity as {\"enabled\": true} or {\"enabled\": false}.")
	}
	return in.Enabled, nil
}

// interfaceJSON is an interface of the agent the connector may call: the card's fallback (of
// the other A2A generation or binding), or the preferred interface turns left for it.
type interfaceJSON struct {
	URL             string `json:"url"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
	Binding         string `json:"binding"`
}

// bindingName is the binding a tenant reads: the profile's "" is JSON-RPC.
func bindingName(b string) string {
	if b == "" {
		return "JSONRPC"
	}
	return b
}

func toInterfaceJSON(in *connector.Interface) *interfaceJSON {
	if in == nil {
		return nil
	}
	return &interfaceJSON{URL: in.URL, ProtocolVersion: in.ProtocolVersion, Tenant: in.Tenant, Binding: bindingName(in.Binding)}
}

type skillJSON struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Tags        []string        `json:"tags"`
	Examples    []string        `json:"examples"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// toAgentJSON is the resource of agent a.
func (s *Server) toAgentJSON(a connector.Agent) agentJSON {
	skills := make([]skillJSON, 0, len(a.Skills))
	for _, sk := range a.Skills {
		skills = append(skills, skillJSON{ID: sk.ID, Name: sk.Name, Description: sk.Description,
			Tags: nonNil(sk.Tags), Examples: nonNil(sk.Examples), InputSchema: sk.InputSchema})
	}
	warnings := a.Warnings
	if warnings == nil {
		warnings = []connector.Problem{}
	}
	active := a.ActiveInterface()
	var preferred *interfaceJSON
	if a.OnFallback {
		preferred = toInterfaceJSON(&connector.Interface{URL: a.EndpointURL, ProtocolVersion: a.ProtocolVersion,
			Binding: a.EndpointBinding, Tenant: a.EndpointTenant})
	}
	return agentJSON{
		ID: a.ID, CardURL: a.CardURL, Name: a.Name, Description: a.Description, Version: a.Version,
		ProtocolVersion: active.ProtocolVersion, EndpointURL: active.URL, EndpointTenant: active.Tenant,
		EndpointBinding: bindingName(active.Binding), Fallback: toInterfaceJSON(a.Fallback),
		OnFallback: a.OnFallback, Preferred: preferred, Streaming: a.Streaming,
		Skills: skills, Extensions: nonNil(a.Extensions), VoiceExtension: a.VoiceActive(s.voice), APIKeyRequired: a.APIKeyRequired,
		APIKeySet: a.CredentialsSet && (a.CredentialSetKind == "" || a.CredentialSetKind == connector.CredentialKindAPIKey), Enabled: a.Enabled, Revision: a.Revision, Warnings: warnings,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		CredentialKind: credentialKindShown(a), CredentialKinds: credentialKindsOffered(a.CardProfile), CredentialsSet: a.CredentialsSet,
		CardSignature:  cardSignature(a.CardSignature),
		CallerIdentity: callerIdentityJSON{Enabled: &a.CallerIdentity},
		TLS:            tlsOf(a),
	}
}

func tlsOf(a connector.Agent) *tlsJSON {
	if a.TLSCAPem == "" {
		return nil
	}
	ca := a.TLSCAPem
	return &tlsJSON{CAPem: &ca}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// canonicalCardURL spells one card URL one way (connector.CanonicalCardURL), so that
// "HTTPS://Agent.example.com:443/" and "https://agent.example.com" are the same registration
// (409), not two agents.
func canonicalCardURL(raw string) string { return connector.CanonicalCardURL(raw) }

// validateResponse is the console's preview: the verdict, where the card came from, the card, and
// the interface the connector would call (absent when the card offers none it can).
type validateResponse struct {
	Valid           bool                `json:"valid"`
	ResolvedCardURL string              `json:"resolvedCardUrl"`
	ProtocolVersion string              `json:"protocolVersion,omitempty"`
	EndpointURL     string              `json:"endpointUrl,omitempty"`
	EndpointBinding string              `json:"endpointBinding,omitempty"`
	EndpointTenant  string              `json:"endpointTenant,omitempty"`
	Fallback        *interfaceJSON      `json:"fallback,omitempty"`
	Card            json.RawMessage     `json:"card"`
	Problems        []connector.Problem `json:"problems"`

	// APIKeyRequired: the card demands an API key, so the console asks for one.
	APIKeyRequired bool `json:"apiKeyRequired"`
	// CredentialKind is what the card asks for, CredentialKinds every kind the tenant may
	// register it with (the console's form offers them); CardSignature what its signatures say.
	CredentialKind  string                  `json:"credentialKind"`
	CredentialKinds []string                `json:"credentialKinds"`
	CardSignature   connector.CardSignature `json:"cardSignature"`
	// RegisteredAs is the tenant's agent that has this card already (the same card URL, or a
	// URL that serves the same card): registering it would be 409 already_registered.
	RegisteredAs string `json:"registeredAs,omitempty"`
}

// previewCredentialsJSON is the `credentials` of a preview: only a client certificate, which
// a card behind mutual TLS needs to be fetched at all.
type previewCredentialsJSON struct {
	MTLS *mtlsJSON `json:"mtls"`
}

func (s *Server) validateCard(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		CardURL     string                  `json:"cardUrl"`
		TLS         *tlsJSON                `json:"tls"`
		Credentials *previewCredentialsJSON `json:"credentials"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	cardURL, err := checkCardURL("cardUrl", in.CardURL)
	if err != nil {
		return err
	}
	caPem, err := caPemOf(in.TLS)
	if err != nil {
		return err
	}
	var cred *credential.Credential
	if in.Credentials != nil {
		if in.Credentials.MTLS == nil {
			return fieldError("credentials.mtls", "required", "A preview takes credentials.mtls only: the client certificate a card behind mutual TLS is fetched with.")
		}
		if cred, err = credentialOf(&credentialsJSON{MTLS: in.Credentials.MTLS}); err != nil {
			return err
		}
	}
	ctx := r.Context()
	if caPem != "" || cred != nil {
		if ctx, err = s.agents.PreviewContext(ctx, caPem, cred); err != nil {
			return err
		}
	}
	fetched, report, err := s.cards.FetchAndValidate(ctx, cardURL)
	if err != nil {
		return err
	}
	problems := report.Problems
	if problems == nil {
		problems = []connector.Problem{}
	}
	registeredAs, err := s.agents.RegisteredAs(r.Context(), tenantFrom(r.Context()).ID, cardURL, fetched.ResolvedURL)
	if err != nil {
		return err
	}
	p := report.Profile
	resp := validateResponse{Valid: report.Valid, ResolvedCardURL: fetched.ResolvedURL,
		Card: report.Card, Problems: problems, RegisteredAs: registeredAs}
	resp.APIKeyRequired = p.APIKeyRequired
	resp.CredentialKind, resp.CardSignature = p.Credential(), cardSignature(p.CardSignature)
	resp.CredentialKinds = credentialKindsOffered(p)
	if p.EndpointURL != "" {
		// ProtocolVersion alone (a 0.x card without a usable endpoint) names no interface.
		resp.ProtocolVersion, resp.EndpointURL, resp.EndpointTenant = p.ProtocolVersion, p.EndpointURL, p.EndpointTenant
		resp.EndpointBinding = bindingName(p.EndpointBinding)
		resp.Fallback = toInterfaceJSON(p.Fallback)
	}
	return writeJSON(w, http.StatusOK, resp)
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) error {
	// Flat, not embedding a shared struct: encoding/json names a member of an embedded struct
	// by its Go path in type errors.
	var in struct {
		CardURL        string              `json:"cardUrl"`
		APIKey         *string             `json:"apiKey"`
		Credentials    *credentialsJSON    `json:"credentials"`
		CallerIdentity *callerIdentityJSON `json:"callerIdentity"`
		TLS            *tlsJSON            `json:"tls"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	cardURL, err := checkCardURL("cardUrl", in.CardURL)
	if err != nil {
		return err
	}
	caPem, err := caPemOf(in.TLS)
	if err != nil {
		return err
	}
	var cred *credential.Credential
	if in.APIKey != nil {
		if err := ruleAPIKey.check("apiKey", *in.APIKey); err != nil {
			return err
		}
		if *in.APIKey != "" {
			cred = &credential.Credential{Kind: connector.CredentialKindAPIKey, Secret: *in.APIKey}
		}
	}
	if in.Credentials != nil {
		if in.APIKey != nil {
			return fieldError("credentials", "conflicting_fields", "Send apiKey or credentials, not both.")
		}
		if cred, err = credentialOf(in.Credentials); err != nil {
			return err
		}
	}
	callerIdentity, err := callerIdentityOf(in.CallerIdentity)
	if err != nil {
		return err
	}
	a, warnings, err := s.agents.RegisterAgent(r.Context(), tenantFrom(r.Context()).ID, cardURL,
		agents.Registration{Credential: cred, TLSCAPem: caPem, CallerIdentity: callerIdentity != nil && *callerIdentity})
	if err != nil {
		return err
	}
	out := s.toAgentJSON(a)
	out.Warnings = warnings
	w.Header().Set("Location", "/v1/agents/"+a.ID)
	return writeJSON(w, http.StatusCreated, out)
}

// refreshJSON is the answer to a refresh: the agent, and whether the card was the same.
type refreshJSON struct {
	agentJSON
	// Unchanged: the card, where it came from, and what the platform makes of it are what the
	// live revision has; nothing was stored and the revision number stays.
	Unchanged bool `json:"unchanged"`
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	agents, err := s.agents.List(r.Context(), tenantFrom(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list agents: %w", err)
	}
	out := make([]agentJSON, 0, len(agents))
	for _, a := range agents {
		out = append(out, s.toAgentJSON(a))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	a, err := s.agents.Get(r.Context(), tenantFrom(r.Context()).ID, id)
	if err != nil {
		return fmt.Errorf("get agent: %w", err)
	}
	return writeJSON(w, http.StatusOK, s.toAgentJSON(a))
}

func (s *Server) patchAgent(w http.ResponseWriter, r *http.Request) error {
	// apiKey: absent leaves the key, "" removes it, any other string replaces it.
	// credentials: replaces the credential, of whatever kind.
	var in struct {
		APIKey         *string             `json:"apiKey"`
		Credentials    *credentialsJSON    `json:"credentials"`
		Enabled        *bool               `json:"enabled"`
		CallerIdentity *callerIdentityJSON `json:"callerIdentity"`
		// tls.caPem: absent leaves the CA bundle, "" removes it, PEM replaces it.
		TLS *tlsJSON `json:"tls"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.APIKey == nil && in.Enabled == nil && in.Credentials == nil && in.CallerIdentity == nil && (in.TLS == nil || in.TLS.CAPem == nil) {
		return badRequest("Nothing to change: send apiKey, credentials, enabled, callerIdentity and/or tls.")
	}
	callerIdentity, err := callerIdentityOf(in.CallerIdentity)
	if err != nil {
		return err
	}
	var caPem *string
	if in.TLS != nil && in.TLS.CAPem != nil {
		ca, err := caPemOf(in.TLS)
		if err != nil {
			return err
		}
		caPem = &ca
	}
	var cred *credential.Credential
	if in.Credentials != nil {
		if in.APIKey != nil {
			return fieldError("credentials", "conflicting_fields", "Send apiKey or credentials, not both.")
		}
		var err error
		if cred, err = credentialOf(in.Credentials); err != nil {
			return err
		}
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if in.APIKey != nil {
		if err := ruleAPIKey.check("apiKey", *in.APIKey); err != nil {
			return err
		}
	}
	a, err := s.agents.Update(r.Context(), tenantFrom(r.Context()).ID, id, agents.Patch{APIKey: in.APIKey, Credential: cred, Enabled: in.Enabled, CallerIdentity: callerIdentity,
		TLSCAPem: caPem})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.toAgentJSON(a))
}

func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.agents.Delete(r.Context(), tenantFrom(r.Context()).ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) refreshAgent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	a, unchanged, warnings, err := s.agents.Refresh(r.Context(), tenantFrom(r.Context()).ID, id)
	if err != nil {
		return err
	}
	out := refreshJSON{agentJSON: s.toAgentJSON(a), Unchanged: unchanged}
	out.Warnings = warnings
	return writeJSON(w, http.StatusOK, out)
}
