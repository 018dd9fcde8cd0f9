package health

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/a2a-connector/a2a-connector/internal/invoke"
)

// Breaker publishing (migrations/008_agent_breakers.sql).
const (
	// BreakerRecent is how long a replica's row is shown after it was last written: breakers
	// that are not closed are rewritten every breakerRefresh, so a row older than this belongs
	// to a replica that is gone, or to a breaker that closed a while ago.
	BreakerRecent = 15 * time.Minute
	// breakerRefresh is how often the rows of breakers that are not closed are rewritten.
	breakerRefresh = time.Minute
	// breakerKeep is how long rows are kept before the publishers delete them.
	breakerKeep = 24 * time.Hour
	// publishTimeout bounds one write of the publisher.
	publishTimeout = 10 * time.Second
)

// BreakerPublisher writes this process's circuit breaker changes (invoke.BreakerOptions.OnChange)
// to Postgres, for the tenants' health view: each process's copy of the deployment's breakers
// (agent_circuits), which tells a replica that decides on its own (Postgres was away) from the
// others. Publish only stores the change in memory; Run
// writes it from a goroutine of its own, so a turn never waits for the database, and a slow or
// absent database only delays what tenants see. Changes of one agent coalesce: the newest wins.
type BreakerPublisher struct {
	store   *Store
	replica string
	log     *slog.Logger
	notify  chan struct{}

	mu      sync.Mutex
	pending map[agentKey]invoke.BreakerChange
	// current holds the breakers that are not closed, rewritten every breakerRefresh.
	current map[agentKey]invoke.BreakerChange
}

// ReplicaName names this process in agent_breakers: service + "/" + its host name (the pod's
// name on Kubernetes).
func ReplicaName(service string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return service + "/" + host
}

// NewBreakerPublisher returns a publisher writing as replica (e.g. "connector/" + host name).
func NewBreakerPublisher(st *Store, replica string, log *slog.Logger) *BreakerPublisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &BreakerPublisher{store: st, replica: replica, log: log, notify: make(chan struct{}, 1),
		pending: map[agentKey]invoke.BreakerChange{}, current: map[agentKey]invoke.BreakerChange{}}
}

// Publish records a change; it never blocks. Changes of agents that are not stored (ids that are
// not UUIDs: no tenant agent) are dropped.
func (p *BreakerPublisher) Publish(c invoke.BreakerChange) {
	if uuid.Validate(c.TenantID) != nil || uuid.Validate(c.AgentID) != nil {
		return
	}
	k := agentKey{c.TenantID, c.AgentID}
	p.mu.Lock()
	p.pending[k] = c
	if c.State == invoke.BreakerClosed {
		delete(p.current, k)
	} else {
		p.current[k] = c
	}
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default: // a write is already due
	}
}

// Run writes published changes until ctx ends, and rewrites the breakers that are not closed
// every minute. Call Flush after it returned, before the pool closes.
func (p *BreakerPublisher) Run(ctx context.Context) {
	tick := time.NewTicker(breakerRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.notify:
		case <-tick.C:
			p.mu.Lock()
			for k, c := range p.current {
				if _, ok := p.pending[k]; !ok {
					p.pending[k] = c
				}
			}
			p.mu.Unlock()
			p.prune(ctx)
		}
		fctx, cancel := context.WithTimeout(ctx, publishTimeout)
		if err := p.Flush(fctx); err != nil && ctx.Err() == nil {
			p.log.Warn("health: publish breaker changes", slog.Any("error", err))
		}
		cancel()
	}
}

// Start runs Run on a goroutine of its own and returns the function that stops it: it waits for
// Run to return, then writes what is still pending, bounded by timeout (call it before the pool
// closes).
func (p *BreakerPublisher) Start(ctx context.Context, timeout time.Duration) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(runCtx) }()
	return func() {
		cancel()
		<-done
		fctx, cancelFlush := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancelFlush()
		if err := p.Flush(fctx); err != nil {
			p.log.Warn("health: last breaker changes not written", slog.Any("error", err))
		}
	}
}

// Flush writes the pending changes. Those that could not be written stay pending, unless a
// newer change of the same agent came meanwhile.
func (p *BreakerPublisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	batch := p.pending
	p.pending = make(map[agentKey]invoke.BreakerChange, len(batch))
	p.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := p.store.putBreakers(ctx, p.replica, batch)
	if err != nil {
		p.mu.Lock()
		for k, c := range batch {
			if _, newer := p.pending[k]; !newer {
				p.pending[k] = c
			}
		}
		p.mu.Unlock()
	}
	return err
}

func (p *BreakerPublisher) prune(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if _, err := p.store.pool.Exec(pctx, `delete from agent_breakers where updated_at < now() - $1::float8 * interval '1 second'`, breakerKeep.Seconds()); err != nil && ctx.Err() == nil {
		p.log.Warn("health: prune breaker rows", slog.Any("error", err))
	}
}

// putBreaker writes one replica's breaker of one agent. Like the health rows, a row of an agent
// deleted meanwhile is not written (the agent row is locked key share for the insert).
const putBreaker = `insert into agent_breakers as b (tenant_id, agent_id, replica, endpoint, state, since, cause, retry_at, updated_at)
select $1::uuid, $2::uuid, $3::text, $4::text, $5::text, $6::timestamptz, $7::text, $8::timestamptz, now()
where exists (select 1 from agents where tenant_id = $1::uuid and id = $2::uuid for key share)
on conflict (tenant_id, agent_id, replica) do update set
	endpoint = excluded.endpoint, state = excluded.state, since = excluded.since, cause = excluded.cause,
	retry_at = excluded.retry_at, updated_at = excluded.updated_at`

func (s *Store) putBreakers(ctx context.Context, replica string, batch map[agentKey]invoke.BreakerChange) error {
	b := &pgx.Batch{}
	for _, c := range batch {
		var retryAt *time.Time
		if !c.RetryAt.IsZero() {
			retryAt = &c.RetryAt
		}
		b.Queue(putBreaker, c.TenantID, c.AgentID, replica, c.Endpoint, c.State, c.Since, c.Cause, retryAt)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write %d breaker states: %w", len(batch), err)
	}
	return nil
}

// BreakerState is one replica's copy of an agent's circuit breaker.
type BreakerState struct {
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

// Breakers returns the breakers of one agent of one tenant that replicas reported within
// BreakerRecent, by replica.
func (s *Store) Breakers(ctx context.Context, tenantID, agentID string) ([]BreakerState, error) {
	rows, err := s.pool.Query(ctx, `select replica, endpoint, state, since, cause, retry_at, updated_at
		from agent_breakers where tenant_id = $1 and agent_id = $2 and updated_at >= now() - $3::float8 * interval '1 second'
		order by replica`, tenantID, agentID, BreakerRecent.Seconds())
	if err != nil {
		return nil, fmt.Errorf("breakers of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (BreakerState, error) {
		var b BreakerState
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
		out = []BreakerState{}
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
