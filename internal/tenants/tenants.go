// Package tenants is the tenants' lifecycle for the operator and the console: create a tenant
// with its first token, mint and revoke tokens, authenticate a tenant by its token, set its
// caps, delete it. Tokens are shown once and stored as their SHA-256 only. No HTTP: the console
// validates the input and answers.
package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// TokenPrefix makes tenant tokens recognisable to secret scanners.
const TokenPrefix = "a2ac_"

// Store keeps tenants and their tokens (*store.Store).
type Store interface {
	CreateTenantWithToken(ctx context.Context, name string, tokenHash []byte) (connector.Tenant, store.Token, error)
	AddTenantToken(ctx context.Context, tenantID string, tokenHash []byte) (store.Token, error)
	TenantByTokenHash(ctx context.Context, tokenHash []byte) (connector.Tenant, string, error)
	ListTenants(ctx context.Context) ([]store.TenantInfo, error)
	Tenant(ctx context.Context, tenantID string) (store.TenantInfo, error)
	SetTenantLimits(ctx context.Context, tenantID string, l connector.TenantLimits) error
	DeleteTenant(ctx context.Context, tenantID string) error
	ListTokens(ctx context.Context, tenantID string) ([]store.Token, error)
	DeleteToken(ctx context.Context, tenantID, tokenID string) error
}

// Service runs the tenants' lifecycle on a Store. It is safe for concurrent use.
type Service struct {
	store Store
}

// New returns the Service of st.
func New(st Store) *Service { return &Service{store: st} }

// newToken returns a fresh tenant token (32 random bytes) and the SHA-256 the store keeps.
func newToken() (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, h[:], nil
}

// Create creates a tenant with its first token, in one transaction: a tenant never exists
// without one. token is the secret, returned only here; tok names it.
func (s *Service) Create(ctx context.Context, name string) (t connector.Tenant, token string, tok store.Token, err error) {
	token, hash, err := newToken()
	if err != nil {
		return connector.Tenant{}, "", store.Token{}, err
	}
	t, tok, err = s.store.CreateTenantWithToken(ctx, name, hash)
	if err != nil {
		return connector.Tenant{}, "", store.Token{}, err
	}
	return t, token, tok, nil
}

// AddToken mints another token of a tenant; token is the secret, returned only here.
func (s *Service) AddToken(ctx context.Context, tenantID string) (token string, tok store.Token, err error) {
	token, hash, err := newToken()
	if err != nil {
		return "", store.Token{}, err
	}
	if tok, err = s.store.AddTenantToken(ctx, tenantID, hash); err != nil {
		return "", store.Token{}, err
	}
	return token, tok, nil
}

// Authenticate returns the tenant a token belongs to, and the token's id. The lookup is by the
// token's SHA-256, so secrets are never compared in variable time: the database compares
// hashes of unknown preimages. Every call reads the token afresh, so a revoked token fails at
// once.
func (s *Service) Authenticate(ctx context.Context, token string) (t connector.Tenant, tokenID string, err error) {
	h := sha256.Sum256([]byte(token))
	return s.store.TenantByTokenHash(ctx, h[:])
}

// List returns every tenant, with its counts and limits.
func (s *Service) List(ctx context.Context) ([]store.TenantInfo, error) {
	return s.store.ListTenants(ctx)
}

// Get returns one tenant.
func (s *Service) Get(ctx context.Context, tenantID string) (store.TenantInfo, error) {
	return s.store.Tenant(ctx, tenantID)
}

// SetLimits sets a tenant's cap overrides and returns the tenant as it now is.
func (s *Service) SetLimits(ctx context.Context, tenantID string, l connector.TenantLimits) (store.TenantInfo, error) {
	if err := s.store.SetTenantLimits(ctx, tenantID, l); err != nil {
		return store.TenantInfo{}, err
	}
	return s.store.Tenant(ctx, tenantID)
}

// Delete deletes a tenant with everything it owns.
func (s *Service) Delete(ctx context.Context, tenantID string) error {
	return s.store.DeleteTenant(ctx, tenantID)
}

// Tokens lists a tenant's tokens (never the secrets).
func (s *Service) Tokens(ctx context.Context, tenantID string) ([]store.Token, error) {
	return s.store.ListTokens(ctx, tenantID)
}

// DeleteToken revokes one token of a tenant.
func (s *Service) DeleteToken(ctx context.Context, tenantID, tokenID string) error {
	return s.store.DeleteToken(ctx, tenantID, tokenID)
}
