package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

// Tenant returns one tenant with its counts and overrides; a missing tenant is ErrNotFound.
func (s *Store) Tenant(ctx context.Context, tenantID string) (TenantInfo, error) {
	tid, ok := parseID(tenantID)
	if !ok {
		return TenantInfo{}, fmt.Errorf("tenant %q: %w", tenantID, connector.ErrNotFound)
	}
	out, err := s.tenantInfos(ctx, &tid)
	if err != nil {
		return TenantInfo{}, fmt.Errorf("tenant %s: %w", tid, err)
	}
	if len(out) == 0 {
		return TenantInfo{}, fmt.Errorf("tenant %s: %w", tid, connector.ErrNotFound)
	}
	return out[0], nil
}

// SetTenantLimits replaces the tenant's overrides (0: back to the default, stored as null). A
// missing tenant is ErrNotFound; a negative value is ErrInvalid.
func (s *Store) SetTenantLimits(ctx context.Context, tenantID string, l connector.TenantLimits) error {
	tid, ok := parseID(tenantID)
	if !ok {
		return fmt.Errorf("set limits of tenant %q: %w", tenantID, connector.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `
		update tenants set max_concurrent_turns = nullif($2::integer, 0),
		                   max_concurrent_turns_per_agent = nullif($3::integer, 0)
		 where id = $1`, tid, l.MaxTurns, l.MaxTurnsPerAgent)
	if err != nil {
		return fmt.Errorf("set limits of tenant %s: %w", tid, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set limits of tenant %s: %w", tid, connector.ErrNotFound)
	}
	return nil
}

// AllTenantLimits returns the overrides of every tenant that has one, by tenant id: one small
// query, which each connector process runs every A2AC_LIMITS_REFRESH (never per turn).
func (s *Store) AllTenantLimits(ctx context.Context) (map[string]connector.TenantLimits, error) {
	rows, err := s.pool.Query(ctx, `
		select id, coalesce(max_concurrent_turns, 0), coalesce(max_concurrent_turns_per_agent, 0)
		  from tenants
		 where max_concurrent_turns is not null or max_concurrent_turns_per_agent is not null`)
	if err != nil {
		return nil, fmt.Errorf("tenant limits: %w", classify(err))
	}
	out := map[string]connector.TenantLimits{}
	var (
		id string
		l  connector.TenantLimits
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &l.MaxTurns, &l.MaxTurnsPerAgent}, func() error {
		out[id] = l
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tenant limits: %w", classify(err))
	}
	return out, nil
}
