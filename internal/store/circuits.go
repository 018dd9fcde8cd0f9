package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2a-connector/a2a-connector/internal/breaker"
)

// The deployment's circuit breakers (migrations/011_agent_circuits.sql).
const (
	// circuitsChannel is where every change of agent_circuits is announced.
	circuitsChannel = "a2ac_breakers"
	// DefaultCircuitsResync is how often a listener re-reads every breaker that is not closed:
	// what a lost notification can cost, and how soon a connection that silently died (a
	// network partition) is found out and replaced.
	DefaultCircuitsResync = 5 * time.Second
	// listenTimeout bounds connecting, LISTEN and each resync of the listener.
	listenTimeout = 5 * time.Second
	// maxListenBackoff is the longest wait between attempts to listen again.
	maxListenBackoff = 5 * time.Second
)

// Circuits keeps the deployment's circuit breakers in Postgres, one row per agent endpoint
// (agent_circuits): it is the breaker.Deployment of every process. It is the breaker.Share, its
// Listen keeps the process's breaker.Breaker in step with the others through LISTEN/NOTIFY, and
// it writes the process's copies for the health view (agent_breakers). A failure is one
// INSERT … ON CONFLICT DO UPDATE … RETURNING on the row, so concurrent failures of several
// replicas are counted one after the other and exactly one of them opens the breaker; the probe
// is claimed by a conditional UPDATE, so one replica probes per cool-down.
type Circuits struct {
	pool *pgxpool.Pool
	// replica names this process in its copies (agent_breakers); prober names it in the rows of
	// the probes it claims.
	replica, prober string
	log             *slog.Logger
	// Resync is how often Listen re-reads the breakers that are not closed (DefaultCircuitsResync).
	Resync time.Duration
}

var _ breaker.Deployment = (*Circuits)(nil)

// NewCircuits returns the deployment's breakers in pool's database; replica names this
// process (breaker.ReplicaName; a random suffix tells apart processes of one host in the probes
// they claim).
func NewCircuits(pool *pgxpool.Pool, replica string, log *slog.Logger) *Circuits {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &Circuits{pool: pool, replica: replica, prober: replica + "#" + hex.EncodeToString(b[:]), log: log, Resync: DefaultCircuitsResync}
}

// circuitCols are the columns scanCircuit reads.
const circuitCols = `tenant_id::text, agent_id::text, endpoint, state, fails, gen, since, cause, cooldown_ms, retry_at, prober, probe_until, changed_by`

// circuitKeyIs matches the row of $1, $2, $3.
const circuitKeyIs = `tenant_id = $1 and agent_id = $2 and endpoint = $3`

// scanCircuit reads the circuitCols of row.
func scanCircuit(row pgx.CollectableRow) (circuitRow, error) {
	var r circuitRow
	c := &r.Circuit
	var cooldownMs int64
	var retryAt, probeUntil *time.Time
	var prober *string
	err := row.Scan(&c.Key.TenantID, &c.Key.AgentID, &c.Key.Endpoint, &c.State, &c.Fails, &c.Gen, &c.Since, &c.Cause,
		&cooldownMs, &retryAt, &prober, &probeUntil, &r.changedBy)
	c.Cooldown = time.Duration(cooldownMs) * time.Millisecond
	if retryAt != nil {
		c.RetryAt = *retryAt
	}
	if probeUntil != nil {
		c.ProbeUntil = *probeUntil
	}
	if prober != nil {
		c.Prober = *prober
	}
	return r, err
}

// circuitRow is a row of agent_circuits.
type circuitRow struct {
	breaker.Circuit
	changedBy string
}

// own is the row's Circuit, Own when this process made its last change.
func (s *Circuits) own(r circuitRow) breaker.Circuit {
	c := r.Circuit
	c.Own = r.changedBy == s.prober
	return c
}

// owns is own of every row.
func (s *Circuits) owns(rows []circuitRow) []breaker.Circuit {
	out := make([]breaker.Circuit, len(rows))
	for i, r := range rows {
		out[i] = s.own(r)
	}
	return out
}

// change runs a statement that changes k's row and returns it, or returns no row when the row
// was not to be changed; then changed is false and the row is read anew, so that the answer is
// the newest row even when a concurrent change made the statement's condition false (its
// snapshot may be older). No row at all is the closed breaker of k.
func (s *Circuits) change(ctx context.Context, op string, k breaker.CircuitKey, sql string, args ...any) (c breaker.Circuit, changed bool, err error) {
	if uuid.Validate(k.TenantID) != nil || uuid.Validate(k.AgentID) != nil {
		return breaker.Circuit{}, false, breaker.ErrNotShared
	}
	rows, err := s.pool.Query(ctx, sql, append([]any{k.TenantID, k.AgentID, k.Endpoint}, args...)...)
	if err != nil {
		return breaker.Circuit{}, false, s.failed(op, k, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanCircuit)
	switch {
	case err == nil:
		return s.own(r), true, nil
	case errors.Is(err, pgx.ErrNoRows):
		c, err = s.Get(ctx, k)
		return c, false, err
	default:
		return breaker.Circuit{}, false, s.failed(op, k, err)
	}
}

// failed wraps err; an agent not stored (a foreign key violation) is ErrNotShared. Other
// failures are logged here, once per call: the breaker only falls back on its own memory.
func (s *Circuits) failed(op string, k breaker.CircuitKey, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		return fmt.Errorf("circuit breaker %s of agent %s: %w", op, k.AgentID, breaker.ErrNotShared)
	}
	s.log.Warn("circuit breakers: the deployment's breaker could not be read or written; this process decides from its own turns for a while",
		"op", op, "agent_id", k.AgentID, "error", err.Error())
	return fmt.Errorf("circuit breaker %s of agent %s: %w", op, k.AgentID, err)
}

// failSQL counts a down turn: $4 now, $5 failures that open, $6 cause, $7 cool-down (ms), $8
// this process.
const failSQL = `with up as (
	insert into agent_circuits as c (tenant_id, agent_id, endpoint, state, fails, gen, since, cause, cooldown_ms, retry_at, changed_by)
	values ($1, $2, $3, case when $5::int <= 1 then 'open' else 'closed' end, 1, 1, $4::timestamptz, $6::text, $7::bigint,
		case when $5::int <= 1 then $4::timestamptz + $7::bigint * interval '1 millisecond' end, $8::text)
	on conflict (tenant_id, agent_id, endpoint) do update set
		fails = c.fails + 1,
		state = case when c.fails + 1 >= $5::int then 'open' else 'closed' end,
		gen = c.gen + case when c.fails + 1 >= $5::int then 1 else 0 end,
		since = case when c.fails + 1 >= $5::int or c.fails = 0 then $4::timestamptz else c.since end,
		cause = $6::text,
		cooldown_ms = case when c.fails + 1 >= $5::int then $7::bigint else c.cooldown_ms end,
		retry_at = case when c.fails + 1 >= $5::int then $4::timestamptz + $7::bigint * interval '1 millisecond' end,
		changed_by = $8::text, updated_at = now()
	where c.state = 'closed'
	returning ` + circuitCols + `)
select ` + circuitCols + ` from up`

// Fail implements breaker.Share.
func (s *Circuits) Fail(ctx context.Context, k breaker.CircuitKey, now time.Time, cause string, p breaker.Policy) (breaker.Circuit, error) {
	c, _, err := s.change(ctx, "count a failure", k, failSQL, now, p.Failures, cause, p.Cooldown.Milliseconds(), s.prober)
	return c, err
}

const resetSQL = `with up as (
	update agent_circuits set fails = 0, gen = gen + 1, cause = '', changed_by = $4::text, updated_at = now()
	where ` + circuitKeyIs + ` and state = 'closed' and fails > 0
	returning ` + circuitCols + `)
select ` + circuitCols + ` from up`

// Reset implements breaker.Share.
func (s *Circuits) Reset(ctx context.Context, k breaker.CircuitKey) (breaker.Circuit, error) {
	c, _, err := s.change(ctx, "reset", k, resetSQL, s.prober)
	return c, err
}

// claimSQL: $4 prober, $5 now, $6 hold (ms).
const claimSQL = `with up as (
	update agent_circuits set state = 'half_open', gen = gen + 1, prober = $4::text, changed_by = $4::text,
		probe_until = $5::timestamptz + $6::bigint * interval '1 millisecond', updated_at = now()
	where ` + circuitKeyIs + ` and ((state = 'open' and retry_at <= $5::timestamptz) or (state = 'half_open' and probe_until <= $5::timestamptz))
	returning ` + circuitCols + `)
select ` + circuitCols + ` from up`

// Claim implements breaker.Share.
func (s *Circuits) Claim(ctx context.Context, k breaker.CircuitKey, now time.Time, hold time.Duration) (breaker.Circuit, bool, error) {
	return s.change(ctx, "claim the probe", k, claimSQL, s.prober, now, hold.Milliseconds())
}

// settleSQL: $4 gen, $5 closed|open|"" (release), $6 now, $7 cause, $8 cool-down, $9 max (ms).
const settleSQL = `with up as (
	update agent_circuits set
		state = case $5::text when 'closed' then 'closed' else 'open' end,
		gen = gen + 1,
		fails = case $5::text when 'closed' then 0 else fails end,
		since = case $5::text when 'closed' then $6::timestamptz else since end,
		cause = case $5::text when 'closed' then '' when 'open' then $7::text else cause end,
		cooldown_ms = case $5::text when 'open' then least(greatest(cooldown_ms * 2, $8::bigint), $9::bigint) else cooldown_ms end,
		retry_at = case $5::text
			when 'closed' then null
			when 'open' then $6::timestamptz + least(greatest(cooldown_ms * 2, $8::bigint), $9::bigint) * interval '1 millisecond'
			else $6::timestamptz end,
		prober = null, probe_until = null, changed_by = $10::text, updated_at = now()
	where ` + circuitKeyIs + ` and state = 'half_open' and gen = $4::bigint and prober = $10::text
	returning ` + circuitCols + `)
select ` + circuitCols + ` from up`

// Settle implements breaker.Share.
func (s *Circuits) Settle(ctx context.Context, k breaker.CircuitKey, gen int64, now time.Time, state, cause string, p breaker.Policy) (breaker.Circuit, error) {
	c, _, err := s.change(ctx, "settle the probe", k, settleSQL, gen, state, now, cause, p.Cooldown.Milliseconds(), p.MaxCooldown.Milliseconds(), s.prober)
	return c, err
}

// Get implements breaker.Share.
func (s *Circuits) Get(ctx context.Context, k breaker.CircuitKey) (breaker.Circuit, error) {
	if uuid.Validate(k.TenantID) != nil || uuid.Validate(k.AgentID) != nil {
		return breaker.Circuit{}, breaker.ErrNotShared
	}
	rows, err := s.pool.Query(ctx, `select `+circuitCols+` from agent_circuits where `+circuitKeyIs, k.TenantID, k.AgentID, k.Endpoint)
	if err != nil {
		return breaker.Circuit{}, s.failed("read", k, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanCircuit)
	switch {
	case err == nil:
		return s.own(r), nil
	case errors.Is(err, pgx.ErrNoRows):
		return breaker.Circuit{Key: k, State: breaker.Closed}, nil
	default:
		return breaker.Circuit{}, s.failed("read", k, err)
	}
}

// Listen keeps b in step with the deployment until ctx ends: it LISTENs on a connection of its own
// (not the pool's), hands every change to b.Learn, and re-reads every breaker that is not closed
// when it starts listening and every Resync after (b.Resync), which also finds out a connection
// that died silently. A lost connection is replaced, after a wait that grows to 5 s.
func (s *Circuits) Listen(ctx context.Context, b *breaker.Breaker) {
	wait := 100 * time.Millisecond
	for {
		listened, err := s.listen(ctx, b)
		if ctx.Err() != nil {
			return
		}
		if listened {
			wait = 100 * time.Millisecond
		}
		s.log.Warn("circuit breakers: not listening to the deployment's changes; listening again soon, this process's breakers meanwhile decide from what it knows",
			"error", err.Error(), "retry_in", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, maxListenBackoff)
	}
}

// listen runs one connection's LISTEN until it fails (or ctx ends); listened: it got as far as
// the first resync.
func (s *Circuits) listen(ctx context.Context, b *breaker.Breaker) (listened bool, err error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // a resync every few seconds is no span anyone wants
	cctx, cancel := context.WithTimeout(ctx, listenTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	lctx, cancel := context.WithTimeout(ctx, listenTimeout)
	_, err = conn.Exec(lctx, "listen "+circuitsChannel)
	cancel()
	if err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	if err := s.resync(ctx, conn, b); err != nil {
		return false, err
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, s.Resync)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if err := s.take(ctx, conn, b, n.Payload); err != nil {
				return true, err
			}
		case ctx.Err() != nil:
			return true, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			if err := s.resync(ctx, conn, b); err != nil {
				return true, err
			}
		default:
			return true, fmt.Errorf("wait for notifications: %w", err)
		}
	}
}

// resync reads every breaker that is not closed or counts failures into b.
func (s *Circuits) resync(ctx context.Context, conn *pgx.Conn, b *breaker.Breaker) error {
	mark := b.Mark()
	rctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	rows, err := conn.Query(rctx, `select `+circuitCols+` from agent_circuits where state <> 'closed' or fails > 0`)
	if err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	all, err := pgx.CollectRows(rows, scanCircuit)
	if err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	b.Resync(ctx, mark, s.owns(all))
	return nil
}

// notification is a row of agent_circuits as the trigger announces it.
type notification struct {
	TenantID   string     `json:"tenant_id"`
	AgentID    string     `json:"agent_id"`
	Endpoint   *string    `json:"endpoint"`
	State      string     `json:"state"`
	Fails      int        `json:"fails"`
	Gen        int64      `json:"gen"`
	Since      time.Time  `json:"since"`
	Cause      string     `json:"cause"`
	CooldownMs int64      `json:"cooldown_ms"`
	RetryAt    *time.Time `json:"retry_at"`
	Prober     *string    `json:"prober"`
	ProbeUntil *time.Time `json:"probe_until"`
	ChangedBy  string     `json:"changed_by"`
}

// take hands one notification to b; a row too large to be announced whole is read.
func (s *Circuits) take(ctx context.Context, conn *pgx.Conn, b *breaker.Breaker, payload string) error {
	var n notification
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		s.log.Warn("circuit breakers: a notification that is not a breaker", "error", err.Error())
		return nil
	}
	if n.Endpoint == nil {
		rctx, cancel := context.WithTimeout(ctx, listenTimeout)
		defer cancel()
		rows, err := conn.Query(rctx, `select `+circuitCols+` from agent_circuits where tenant_id = $1 and agent_id = $2`, n.TenantID, n.AgentID)
		if err != nil {
			return fmt.Errorf("read the breakers of agent %s: %w", n.AgentID, err)
		}
		all, err := pgx.CollectRows(rows, scanCircuit)
		if err != nil {
			return fmt.Errorf("read the breakers of agent %s: %w", n.AgentID, err)
		}
		for _, c := range s.owns(all) {
			b.Learn(ctx, c)
		}
		return nil
	}
	c := breaker.Circuit{Key: breaker.CircuitKey{TenantID: n.TenantID, AgentID: n.AgentID, Endpoint: *n.Endpoint},
		State: n.State, Fails: n.Fails, Gen: n.Gen, Since: n.Since, Cause: n.Cause, Cooldown: time.Duration(n.CooldownMs) * time.Millisecond,
		Own: n.ChangedBy == s.prober}
	if n.RetryAt != nil {
		c.RetryAt = *n.RetryAt
	}
	if n.ProbeUntil != nil {
		c.ProbeUntil = *n.ProbeUntil
	}
	if n.Prober != nil {
		c.Prober = *n.Prober
	}
	b.Learn(ctx, c)
	return nil
}
