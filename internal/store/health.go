package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

// The health tables (migrations/004_agent_health.sql): per-minute counts of one agent's turns,
// summed across replicas and flushes, and its last failures. internal/health computes what they
// mean (outcomes, histogram buckets, percentiles); the store only adds, prunes and reads rows.

// HealthOutcomes is the number of outcome counters of a minute row, in the order of the table's
// columns: completed, input_required, handback, failed, canceled, errored.
const HealthOutcomes = 6

// HealthMinute is one agent's counts of one minute (one replica's since its last flush when
// written; every replica's, summed, when read).
type HealthMinute struct {
	TenantID, AgentID string
	Minute            time.Time
	Outcomes          [HealthOutcomes]int64
	// FirstText and Duration are histogram bucket counts, summed element by element.
	FirstText, Duration []int64
}

// HealthFailure is one failed turn of an agent.
type HealthFailure struct {
	TenantID, AgentID string
	At                time.Time
	Outcome           connector.Outcome
	Code, Message     string
}

// HealthAgent names one agent of one tenant.
type HealthAgent struct{ TenantID, AgentID string }

// addMinute adds one replica's counts to a minute row. A row of an agent deleted meanwhile is
// not written: the agent row is locked (key share) so that a concurrent delete waits for this
// transaction instead of failing it with a foreign-key error.
const addMinute = `insert into agent_health_minutes as h
	(tenant_id, agent_id, minute, completed, input_required, handback, failed, canceled, errored, first_text, duration)
select $1::uuid, $2::uuid, $3::timestamptz, $4::bigint, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint[], $11::bigint[]
where exists (select 1 from agents where tenant_id = $1::uuid and id = $2::uuid for key share)
on conflict (tenant_id, agent_id, minute) do update set
	completed = h.completed + excluded.completed,
	input_required = h.input_required + excluded.input_required,
	handback = h.handback + excluded.handback,
	failed = h.failed + excluded.failed,
	canceled = h.canceled + excluded.canceled,
	errored = h.errored + excluded.errored,
	first_text = health_add_counts(h.first_text, excluded.first_text),
	duration = health_add_counts(h.duration, excluded.duration)`

const addFailure = `insert into agent_health_failures (tenant_id, agent_id, at, outcome, code, message)
select $1::uuid, $2::uuid, $3::timestamptz, $4::text, $5::text, $6::text
where exists (select 1 from agents where tenant_id = $1::uuid and id = $2::uuid for key share)`

// AddHealth adds a flush of minute rows and failures in one transaction: all of it counts, or
// none. The caller orders rows by tenant, agent and minute, so that two replicas lock the same
// rows in the same order and cannot deadlock.
func (s *Store) AddHealth(ctx context.Context, rows []HealthMinute, failures []HealthFailure) error {
	if len(rows) == 0 && len(failures) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		o := r.Outcomes
		b.Queue(addMinute, r.TenantID, r.AgentID, r.Minute, o[0], o[1], o[2], o[3], o[4], o[5], r.FirstText, r.Duration)
	}
	for _, f := range failures {
		b.Queue(addFailure, f.TenantID, f.AgentID, f.At, string(f.Outcome), f.Code, f.Message)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("add %d minute rows and %d failures: %w", len(rows), len(failures), err)
		}
		return nil
	})
}

// PruneHealth deletes minute rows and failures older than cutoff, and the failures of the given
// agents beyond the newest keep.
func (s *Store) PruneHealth(ctx context.Context, cutoff time.Time, agents []HealthAgent, keep int) error {
	slices.SortFunc(agents, func(a, b HealthAgent) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.AgentID, b.AgentID))
	})
	b := &pgx.Batch{}
	b.Queue(`delete from agent_health_minutes where minute < $1`, cutoff)
	b.Queue(`delete from agent_health_failures where at < $1`, cutoff)
	for _, a := range agents {
		b.Queue(`delete from agent_health_failures where id in (
			select id from agent_health_failures where tenant_id = $1 and agent_id = $2
			order by at desc, id desc offset $3)`, a.TenantID, a.AgentID, keep)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("prune before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return nil
}

// HealthMinutes reads the minute rows of one agent of one tenant from from to to (both
// included), every replica's summed, in no particular order.
func (s *Store) HealthMinutes(ctx context.Context, tenantID, agentID string, from, to time.Time) ([]HealthMinute, error) {
	rows, err := s.pool.Query(ctx, `select minute, completed, input_required, handback, failed, canceled, errored,
			first_text, duration
		from agent_health_minutes where tenant_id = $1 and agent_id = $2 and minute >= $3 and minute <= $4`,
		tenantID, agentID, from, to)
	if err != nil {
		return nil, fmt.Errorf("health of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HealthMinute, error) {
		m := HealthMinute{TenantID: tenantID, AgentID: agentID}
		o := &m.Outcomes
		err := row.Scan(&m.Minute, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &m.FirstText, &m.Duration)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("health of agent %s: %w", agentID, err)
	}
	return out, nil
}

// HealthFailures reads the newest failures of one agent of one tenant since since, newest
// first, at most limit.
func (s *Store) HealthFailures(ctx context.Context, tenantID, agentID string, since time.Time, limit int) ([]HealthFailure, error) {
	rows, err := s.pool.Query(ctx, `select at, outcome, code, message from agent_health_failures
		where tenant_id = $1 and agent_id = $2 and at >= $3
		order by at desc, id desc limit $4`, tenantID, agentID, since, limit)
	if err != nil {
		return nil, fmt.Errorf("failures of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HealthFailure, error) {
		f := HealthFailure{TenantID: tenantID, AgentID: agentID}
		err := row.Scan(&f.At, &f.Outcome, &f.Code, &f.Message)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("failures of agent %s: %w", agentID, err)
	}
	return out, nil
}
