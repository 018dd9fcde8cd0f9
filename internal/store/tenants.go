package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

// CreateTenant stores a new tenant with a fresh id. An empty name is ErrInvalid.
func (s *Store) CreateTenant(ctx context.Context, name string) (connector.Tenant, error) {
	t := connector.Tenant{ID: uuid.NewString(), Name: name}
	err := s.pool.QueryRow(ctx,
		`insert into tenants (id, name) values ($1, $2) returning created_at`,
		t.ID, t.Name,
	).Scan(&t.CreatedAt)
	if err != nil {
		return connector.Tenant{}, fmt.Errorf("create tenant %q: %w", name, classify(err))
	}
	return t, nil
}

// AddTenantToken stores the SHA-256 hash (32 bytes) of a new token of the tenant. The token
// itself is never stored. A missing tenant is ErrNotFound; a hash already stored is ErrConflict;
// a hash that is not 32 bytes is ErrInvalid.
func (s *Store) AddTenantToken(ctx context.Context, tenantID string, tokenHash []byte) error {
	tid, ok := parseID(tenantID)
	if !ok {
		return fmt.Errorf("add token to tenant %q: %w", tenantID, connector.ErrNotFound)
	}
	_, err := s.pool.Exec(ctx,
		`insert into tenant_tokens (id, tenant_id, token_hash) values ($1, $2, $3)`,
		uuid.NewString(), tid, tokenHash,
	)
	if err != nil {
		return fmt.Errorf("add token to tenant %s: %w", tid, classify(err))
	}
	return nil
}

// TenantByTokenHash returns the tenant owning the token with this SHA-256 hash, or ErrNotFound.
//
// Looking the hash up through an index is not a timing leak worth a constant-time compare: an
// attacker controls the token, not its hash, and learns nothing about stored hashes from how
// long a lookup of a different one takes.
func (s *Store) TenantByTokenHash(ctx context.Context, tokenHash []byte) (connector.Tenant, error) {
	var t connector.Tenant
	err := s.pool.QueryRow(ctx,
		`select t.id, t.name, t.created_at
		   from tenant_tokens k
		   join tenants t on t.id = k.tenant_id
		  where k.token_hash = $1`,
		tokenHash,
	).Scan(&t.ID, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Tenant{}, fmt.Errorf("tenant by token: %w", connector.ErrNotFound)
	}
	if err != nil {
		return connector.Tenant{}, fmt.Errorf("tenant by token: %w", classify(err))
	}
	return t, nil
}
