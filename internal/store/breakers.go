package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-connector/a2a-connector/internal/breaker"
)

// Each process's copy of the deployment's breakers, for the tenants' health view
// (migrations/008_agent_breakers.sql), and the deployment's breakers as that view reads them.

// BreakerRecent is how long a replica's copy is shown after it was last written: copies of
// breakers that are not closed are rewritten every minute (breaker.Publisher), so a row older
// than this belongs to a replica that is gone, or to a breaker that closed a while ago.
const BreakerRecent = 15 * time.Minute

// putCopy writes one replica's breaker of one agent. Like the health rows, a row of an agent
// deleted meanwhile is not written (the agent row is locked key share for the insert).
const putCopy = `insert into agent_breakers as b (tenant_id, agent_id, replica, endpoint, state, since, cause, retry_at, updated_at)
select $1::uuid, $2::uuid, $3::text, $4::text, $5::text, $6::timestamptz, $7::text, $8::timestamptz, now()
where exists (select 1 from agents where tenant_id = $1::uuid and id = $2::uuid for key share)
on conflict (tenant_id, agent_id, replica) do update set
	endpoint = excluded.endpoint, state = excluded.state, since = excluded.since, cause = excluded.cause,
	retry_at = excluded.retry_at, updated_at = excluded.updated_at`

// PutCopies implements breaker.Copies: it writes the changes as this process's copies.
func (s *Circuits) PutCopies(ctx context.Context, changes []breaker.Change) error {
	b := &pgx.Batch{}
	for _, c := range changes {
		var retryAt *time.Time
		if !c.RetryAt.IsZero() {
			retryAt = &c.RetryAt
		}
		b.Queue(putCopy, c.TenantID, c.AgentID, s.replica, c.Endpoint, c.State, c.Since, c.Cause, retryAt)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write %d breaker states: %w", len(changes), err)
	}
	return nil
}

// PruneCopies implements breaker.Copies: it deletes every replica's copies not written for
// longer than keep.
func (s *Circuits) PruneCopies(ctx context.Context, keep time.Duration) error {
	if _, err := s.pool.Exec(ctx, `delete from agent_breakers where updated_at < now() - $1::float8 * interval '1 second'`, keep.Seconds()); err != nil {
		return fmt.Errorf("prune breaker copies: %w", err)
	}
	return nil
}

// ReplicaBreaker is one replica's copy of an agent's circuit breaker.
type ReplicaBreaker struct {
	Replica, Endpoint string
	// State is closed, open or half_open.
	State string
	// Since is when the agent was found down, or when the breaker closed.
	Since time.Time
	// Cause is the last failure that counted ("" when closed).
	Cause string
	// RetryAt is when the replica probes the agent next (zero unless open).
	RetryAt time.Time
	// UpdatedAt is when the replica last wrote the row.
	UpdatedAt time.Time
}

// ReplicaBreakers returns the copies of the breakers of one agent of one tenant that replicas
// wrote within BreakerRecent, by replica.
func (s *Store) ReplicaBreakers(ctx context.Context, tenantID, agentID string) ([]ReplicaBreaker, error) {
	rows, err := s.pool.Query(ctx, `select replica, endpoint, state, since, cause, retry_at, updated_at
		from agent_breakers where tenant_id = $1 and agent_id = $2 and updated_at >= now() - $3::float8 * interval '1 second'
		order by replica`, tenantID, agentID, BreakerRecent.Seconds())
	if err != nil {
		return nil, fmt.Errorf("breakers of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReplicaBreaker, error) {
		var b ReplicaBreaker
		var retryAt *time.Time
		err := row.Scan(&b.Replica, &b.Endpoint, &b.State, &b.Since, &b.Cause, &retryAt, &b.UpdatedAt)
		if retryAt != nil {
			b.RetryAt = *retryAt
		}
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("breakers of agent %s: %w", agentID, err)
	}
	if out == nil {
		out = []ReplicaBreaker{}
	}
	return out, nil
}

// DeploymentBreaker is the circuit breaker of one agent endpoint as the deployment keeps it
// (agent_circuits): what every replica decides turns by.
type DeploymentBreaker struct {
	Endpoint string
	// State is closed, open or half_open.
	State string
	// Failures are the consecutive "down" turns counted across the deployment (while closed;
	// once open, the count that opened it).
	Failures int
	// Since is when the agent was found down; for closed, when the breaker closed or (with
	// failures) when the failures began.
	Since time.Time
	// Cause is the last failure that counted ("" when closed without failures).
	Cause string
	// RetryAt is when one replica may probe the agent next (open only).
	RetryAt time.Time
	// ProbeUntil is when the probe under way stops holding the others back (half_open only).
	ProbeUntil time.Time
	UpdatedAt  time.Time
}

// DeploymentBreakers returns the breakers of one agent of one tenant that are not closed, count
// failures, or changed within BreakerRecent, by endpoint.
func (s *Store) DeploymentBreakers(ctx context.Context, tenantID, agentID string) ([]DeploymentBreaker, error) {
	rows, err := s.pool.Query(ctx, `select endpoint, state, fails, since, cause, retry_at, probe_until, updated_at
		from agent_circuits where tenant_id = $1 and agent_id = $2
			and (state <> 'closed' or fails > 0 or updated_at >= now() - $3::float8 * interval '1 second')
		order by endpoint`, tenantID, agentID, BreakerRecent.Seconds())
	if err != nil {
		return nil, fmt.Errorf("breakers of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (DeploymentBreaker, error) {
		var b DeploymentBreaker
		var retryAt, probeUntil *time.Time
		err := row.Scan(&b.Endpoint, &b.State, &b.Failures, &b.Since, &b.Cause, &retryAt, &probeUntil, &b.UpdatedAt)
		if retryAt != nil {
			b.RetryAt = *retryAt
		}
		if probeUntil != nil {
			b.ProbeUntil = *probeUntil
		}
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("breakers of agent %s: %w", agentID, err)
	}
	return out, nil
}
