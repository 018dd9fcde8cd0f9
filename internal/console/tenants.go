package console

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

type tenantCreated struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Token string `json:"token"`
	// TokenID names the token in the token list and in revocation; it is not a secret.
	TokenID string `json:"tokenId"`
}

type tokenCreated struct {
	Token   string `json:"token"`
	TokenID string `json:"tokenId"`
}

// tenantJSON is one tenant in the operator's list.
type tenantJSON struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"createdAt"`
	TokenCount int       `json:"tokenCount"`
	AgentCount int       `json:"agentCount"`
	// Limits are the operator's overrides of the tenant's concurrent-turn caps.
	Limits tenantLimitsJSON `json:"limits"`
}

// tenantLimitsJSON is a tenant's cap overrides, per connector (and console-api) process; null
// is the process's default (A2AC_TENANT_MAX_TURNS, A2AC_AGENT_MAX_TURNS).
type tenantLimitsJSON struct {
	MaxConcurrentTurns         *int `json:"maxConcurrentTurns"`
	MaxConcurrentTurnsPerAgent *int `json:"maxConcurrentTurnsPerAgent"`
}

// maxCap bounds an override: far above any replica's capacity, so a typo is refused rather
// than taken as "no cap".
const maxCap = 1_000_000

func toTenantJSON(t store.TenantInfo) tenantJSON {
	orNull := func(n int) *int {
		if n <= 0 {
			return nil
		}
		return &n
	}
	return tenantJSON{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, TokenCount: t.Tokens, AgentCount: t.Agents,
		Limits: tenantLimitsJSON{MaxConcurrentTurns: orNull(t.Limits.MaxTurns),
			MaxConcurrentTurnsPerAgent: orNull(t.Limits.MaxTurnsPerAgent)}}
}

// tokenJSON is a token as listed: its id and use, never the token or its hash.
type tokenJSON struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// LastUsedAt is accurate to store.TouchInterval; null when never used.
	LastUsedAt *time.Time `json:"lastUsedAt"`
}

// ownTokenJSON is a token in a tenant's own list, which marks the one it was asked with.
type ownTokenJSON struct {
	tokenJSON
	Current bool `json:"current"`
}

func toTokenJSON(t store.Token) tokenJSON {
	return tokenJSON{ID: t.ID, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt}
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	in.Name = strings.TrimSpace(in.Name)
	if err := ruleTenantName.check("name", in.Name); err != nil {
		return err
	}
	// One transaction: a tenant never exists without its first token.
	t, token, tok, err := s.tenants.Create(r.Context(), in.Name)
	if err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	return writeJSON(w, http.StatusCreated, tenantCreated{ID: t.ID, Name: t.Name, Token: token, TokenID: tok.ID})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	token, tok, err := s.tenants.AddToken(r.Context(), id)
	if err != nil {
		return fmt.Errorf("tenant %s: add token: %w", id, err)
	}
	return writeJSON(w, http.StatusCreated, tokenCreated{Token: token, TokenID: tok.ID})
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	tenants, err := s.tenants.List(r.Context())
	if err != nil {
		return fmt.Errorf("list tenants: %w", err)
	}
	out := make([]tenantJSON, 0, len(tenants))
	for _, t := range tenants {
		out = append(out, toTenantJSON(t))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tenants": out})
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	t, err := s.tenants.Get(r.Context(), id)
	if err != nil {
		return fmt.Errorf("get tenant: %w", err)
	}
	return writeJSON(w, http.StatusOK, toTenantJSON(t))
}

// patchTenant sets the operator's overrides of a tenant's concurrent-turn caps. limits replaces
// both: a member that is null or absent goes back to the default. Every connector process reads
// them within A2AC_LIMITS_REFRESH (10 s by default); nothing is read per turn.
func (s *Server) patchTenant(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	var in struct {
		Limits *tenantLimitsJSON `json:"limits"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Limits == nil {
		return fieldError("limits", "required", "limits is required: an object with maxConcurrentTurns and maxConcurrentTurnsPerAgent (null: the default).")
	}
	var l connector.TenantLimits
	for _, f := range []struct {
		name string
		v    *int
		to   *int
	}{
		{"limits.maxConcurrentTurns", in.Limits.MaxConcurrentTurns, &l.MaxTurns},
		{"limits.maxConcurrentTurnsPerAgent", in.Limits.MaxConcurrentTurnsPerAgent, &l.MaxTurnsPerAgent},
	} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > maxCap {
			return fieldError(f.name, "out_of_range", "%s must be between 1 and %d, or null for the default.", f.name, maxCap)
		}
		*f.to = *f.v
	}
	t, err := s.tenants.SetLimits(r.Context(), id, l)
	if err != nil {
		return fmt.Errorf("set tenant limits: %w", err)
	}
	return writeJSON(w, http.StatusOK, toTenantJSON(t))
}

// deleteTenant removes the tenant with everything it has (store.DeleteTenant). Tasks its
// sessions held at agents are not canceled: the keys to call those agents go with the tenant,
// and the agents end such tasks on their own terms.
func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	if err := s.tenants.Delete(r.Context(), id); err != nil {
		return fmt.Errorf("delete tenant: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listTenantTokens(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	tokens, err := s.tenants.Tokens(r.Context(), id)
	if err != nil {
		return fmt.Errorf("list tokens: %w", err)
	}
	out := make([]tokenJSON, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, toTokenJSON(t))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) deleteTenantToken(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	tokenID, err := pathID(r, "tokenId")
	if err != nil {
		return err
	}
	if err := s.tenants.DeleteToken(r.Context(), tenantID, tokenID); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listOwnTokens lets a tenant see its tokens (to find a leaked or unused one), the one it
// asked with marked current.
func (s *Server) listOwnTokens(w http.ResponseWriter, r *http.Request) error {
	tokens, err := s.tenants.Tokens(r.Context(), tenantFrom(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list own tokens: %w", err)
	}
	current := tokenIDFrom(r.Context())
	out := make([]ownTokenJSON, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, ownTokenJSON{tokenJSON: toTokenJSON(t), Current: t.ID == current})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// deleteOwnToken revokes one of the tenant's tokens, the one it asks with included: a leaked
// token must be revocable at once by whoever notices. Revoking the last one locks the tenant
// out until the operator issues a new one.
func (s *Server) deleteOwnToken(w http.ResponseWriter, r *http.Request) error {
	tokenID, err := pathID(r, "tokenId")
	if err != nil {
		return err
	}
	if err := s.tenants.DeleteToken(r.Context(), tenantFrom(r.Context()).ID, tokenID); err != nil {
		return fmt.Errorf("revoke own token: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
