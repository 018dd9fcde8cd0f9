package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

// Token is a tenant token as the store knows it: never the token, never its hash.
type Token struct {
	ID        string
	TenantID  string
	CreatedAt time.Time
	// LastUsedAt is when the token last authenticated a request, to the minute (TouchInterval);
	// nil when it never has.
	LastUsedAt *time.Time
}

// TenantInfo is a tenant with the counts an operator lists tenants by.
type TenantInfo struct {
	connector.Tenant
	Tokens int
	Agents int
	Limits connector.TenantLimits
}

// TouchInterval is how stale a token's last use may get: TenantByTokenHash writes last_used_at
// only when it is older than this, so a busy token costs one write a minute, not one a request.
const TouchInterval = time.Minute

// CreateTenant stores a new tenant with a fresh id. An empty name is ErrInvalid.
func (s *Store) CreateTenant(ctx context.Context, name string) (connector.Tenant, error) {
	t, err := createTenant(ctx, s.pool, name)
	if err != nil {
		return connector.Tenant{}, fmt.Errorf("create tenant %q: %w", name, classify(err))
	}
	return t, nil
}

// CreateTenantWithToken stores a new tenant and its first token (the SHA-256 of it) in one
// transaction: either both exist afterwards or neither does, so no tenant is left without a way
// in. Errors are those of CreateTenant and AddTenantToken.
func (s *Store) CreateTenantWithToken(ctx context.Context, name string, tokenHash []byte) (connector.Tenant, Token, error) {
	var (
		t   connector.Tenant
		tok Token
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if t, err = createTenant(ctx, tx, name); err != nil {
			return err
		}
		tok, err = addToken(ctx, tx, t.ID, tokenHash)
		return err
	})
	if err != nil {
		return connector.Tenant{}, Token{}, fmt.Errorf("create tenant %q with a token: %w", name, classify(err))
	}
	return t, tok, nil
}

func createTenant(ctx context.Context, q querier, name string) (connector.Tenant, error) {
	t := connector.Tenant{ID: uuid.NewString(), Name: name}
	err := q.QueryRow(ctx,
		`insert into tenants (id, name) values ($1, $2) returning created_at`,
		t.ID, t.Name,
	).Scan(&t.CreatedAt)
	return t, err
}

func addToken(ctx context.Context, q querier, tenantID string, tokenHash []byte) (Token, error) {
	tok := Token{ID: uuid.NewString(), TenantID: tenantID}
	err := q.QueryRow(ctx,
		`insert into tenant_tokens (id, tenant_id, token_hash) values ($1, $2, $3) returning created_at`,
		tok.ID, tenantID, tokenHash,
	).Scan(&tok.CreatedAt)
	return tok, err
}

// AddTenantToken stores the SHA-256 hash (32 bytes) of a new token of the tenant and returns
// the token's record. The token itself is never stored. A missing tenant is ErrNotFound; a hash
// already stored is ErrConflict; a hash that is not 32 bytes is ErrInvalid.
func (s *Store) AddTenantToken(ctx context.Context, tenantID string, tokenHash []byte) (Token, error) {
	tid, ok := parseID(tenantID)
	if !ok {
		return Token{}, fmt.Errorf("add token to tenant %q: %w", tenantID, connector.ErrNotFound)
	}
	tok, err := addToken(ctx, s.pool, tid, tokenHash)
	if err != nil {
		return Token{}, fmt.Errorf("add token to tenant %s: %w", tid, classify(err))
	}
	return tok, nil
}

// TenantByTokenHash returns the tenant owning the token with this SHA-256 hash and the token's
// id, or ErrNotFound. A deleted token is not found from the moment its deletion commits.
//
// It also records the token's use, in the same statement and at most once per TouchInterval:
// the update matches no row while last_used_at is fresh, so the hot path stays a read.
//
// Looking the hash up through an index is not a timing leak worth a constant-time compare: an
// attacker controls the token, not its hash, and learns nothing about stored hashes from how
// long a lookup of a different one takes.
func (s *Store) TenantByTokenHash(ctx context.Context, tokenHash []byte) (connector.Tenant, string, error) {
	var (
		t       connector.Tenant
		tokenID string
	)
	err := s.pool.QueryRow(ctx, `
		with tok as (
			select id, tenant_id from tenant_tokens where token_hash = $1),
		touched as (
			update tenant_tokens k set last_used_at = now()
			  from tok
			 where k.id = tok.id
			   and (k.last_used_at is null or k.last_used_at < now() - $2::interval)
			returning k.id)
		select t.id, t.name, t.created_at, tok.id
		  from tok
		  join tenants t on t.id = tok.tenant_id`,
		tokenHash, TouchInterval,
	).Scan(&t.ID, &t.Name, &t.CreatedAt, &tokenID)
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Tenant{}, "", fmt.Errorf("tenant by token: %w", connector.ErrNotFound)
	}
	if err != nil {
		return connector.Tenant{}, "", fmt.Errorf("tenant by token: %w", classify(err))
	}
	return t, tokenID, nil
}

// ListTenants returns every tenant, oldest first, with how many tokens and agents each has and
// its admission overrides.
func (s *Store) ListTenants(ctx context.Context) ([]TenantInfo, error) {
	out, err := s.tenantInfos(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// tenantInfos reads every tenant, or the one of id when id is not nil.
func (s *Store) tenantInfos(ctx context.Context, id *string) ([]TenantInfo, error) {
	rows, err := s.pool.Query(ctx, `
		select t.id, t.name, t.created_at,
		       (select count(*) from tenant_tokens k where k.tenant_id = t.id),
		       (select count(*) from agents a where a.tenant_id = t.id),
		       coalesce(t.max_concurrent_turns, 0), coalesce(t.max_concurrent_turns_per_agent, 0)
		  from tenants t
		 where $1::uuid is null or t.id = $1
		 order by t.created_at, t.id`, id)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TenantInfo, error) {
		var ti TenantInfo
		err := row.Scan(&ti.ID, &ti.Name, &ti.CreatedAt, &ti.Tokens, &ti.Agents,
			&ti.Limits.MaxTurns, &ti.Limits.MaxTurnsPerAgent)
		return ti, err
	})
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// DeleteTenant removes the tenant and, in the same statement, its tokens, agents with their
// revisions and keys, sessions with their holds (foreign keys on delete cascade), and session
// contexts (deleted explicitly: they have no foreign key, see migration 005). A token of the tenant fails from the next request on. It does not cancel held tasks
// at the agents: their keys go with the tenant. A missing tenant is ErrNotFound.
func (s *Store) DeleteTenant(ctx context.Context, tenantID string) error {
	tid, ok := parseID(tenantID)
	if !ok {
		return fmt.Errorf("delete tenant %q: %w", tenantID, connector.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `
		with contexts as (delete from session_contexts where tenant_id = $1)
		delete from tenants where id = $1`, tid)
	if err != nil {
		return fmt.Errorf("delete tenant %s: %w", tid, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete tenant %s: %w", tid, connector.ErrNotFound)
	}
	return nil
}

// ListTokens returns the tenant's tokens, oldest first. A missing tenant is ErrNotFound; a
// tenant without tokens gets an empty list.
func (s *Store) ListTokens(ctx context.Context, tenantID string) ([]Token, error) {
	tid, ok := parseID(tenantID)
	if !ok {
		return nil, fmt.Errorf("list tokens of tenant %q: %w", tenantID, connector.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `
		select k.id, k.created_at, k.last_used_at
		  from tenants t
		  left join tenant_tokens k on k.tenant_id = t.id
		 where t.id = $1
		 order by k.created_at, k.id`, tid)
	if err != nil {
		return nil, fmt.Errorf("list tokens of tenant %s: %w", tid, classify(err))
	}
	var (
		found bool
		out   = []Token{}
	)
	for rows.Next() {
		found = true
		var (
			id      *string
			created *time.Time
			used    *time.Time
		)
		if err := rows.Scan(&id, &created, &used); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list tokens of tenant %s: %w", tid, classify(err))
		}
		if id != nil && created != nil {
			out = append(out, Token{ID: *id, TenantID: tid, CreatedAt: *created, LastUsedAt: used})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens of tenant %s: %w", tid, classify(err))
	}
	if !found {
		return nil, fmt.Errorf("list tokens of tenant %s: %w", tid, connector.ErrNotFound)
	}
	return out, nil
}

// DeleteToken revokes one token of the tenant: the next request with it is refused. A token
// of another tenant, a missing one and ids that are not UUIDs are all ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, tenantID, tokenID string) error {
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(tokenID)
	if !ok1 || !ok2 {
		return fmt.Errorf("delete token %q of tenant %q: %w", tokenID, tenantID, connector.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `delete from tenant_tokens where tenant_id = $1 and id = $2`, tid, id)
	if err != nil {
		return fmt.Errorf("delete token %s of tenant %s: %w", id, tid, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete token %s of tenant %s: %w", id, tid, connector.ErrNotFound)
	}
	return nil
}
