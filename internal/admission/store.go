package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store keeps the deployment's shares of the caps in Postgres
// (migrations/012_admission_shares.sql).
type Store struct {
	pool *pgxpool.Pool
}

var _ ShareStore = (*Store)(nil)

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// sharesLock is the transaction-level advisory lock every sync holds: one lock for the whole
// deployment, because a sync holds it for one round trip and a deployment has a few replicas
// syncing once a second (docs/decisions.md).
const sharesLock int64 = 0x_0a2a_c000_6361_7073 // arbitrary; ends in "caps" in ASCII

// SyncShares is ShareStore.SyncShares in two round trips: the lock and the reads, then the
// writes and the commit. Each statement after the lock reads a snapshot taken after the lock
// was granted, so it sees every sync that committed before.
func (s *Store) SyncShares(ctx context.Context, replicaID string, ttl time.Duration, decide func(View) Claim) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("sync shares of %s: %w", replicaID, err)
	}
	// A connection released inside a transaction (an error below) is closed by the pool, which
	// ends the transaction and its lock.
	defer conn.Release()

	read := &pgx.Batch{}
	read.Queue("begin")
	read.Queue("select pg_advisory_xact_lock($1)", sharesLock)
	read.Queue(`select replica_id, share_ppm from admission_replicas where expires_at > clock_timestamp()`)
	read.Queue(`select l.tenant_id, l.agent_id, l.replica_id, l.holding, l.demand, l.pressed
		  from admission_leases l join admission_replicas r using (replica_id)
		 where r.expires_at > clock_timestamp()`)
	v, err := readView(conn.SendBatch(ctx, read))
	if err != nil {
		return fmt.Errorf("sync shares of %s: read: %w", replicaID, err)
	}

	c := decide(v)
	n := len(c.Leases)
	tenants, agents := make([]string, 0, n), make([]string, 0, n)
	holdings, demands, pressed := make([]int64, 0, n), make([]int64, 0, n), make([]bool, 0, n)
	for _, l := range c.Leases {
		tenants, agents = append(tenants, l.TenantID), append(agents, l.AgentID)
		holdings, demands, pressed = append(holdings, l.Holding), append(demands, l.Demand), append(pressed, l.Pressed)
	}
	write := &pgx.Batch{}
	write.Queue(`insert into admission_replicas (replica_id, share_ppm, expires_at)
		values ($1, $2, clock_timestamp() + make_interval(secs => $3))
		on conflict (replica_id) do update set share_ppm = excluded.share_ppm, expires_at = excluded.expires_at`,
		replicaID, c.SharePPM, ttl.Seconds())
	// The delete and the upsert never touch the same row, so one snapshot serves both.
	write.Queue(`with mine as (
			select * from unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::bool[])
			         as m(tenant_id, agent_id, holding, demand, pressed)),
		gone as (
			delete from admission_leases l
			 where l.replica_id = $1
			   and not exists (select 1 from mine m where m.tenant_id = l.tenant_id and m.agent_id = l.agent_id))
		insert into admission_leases (tenant_id, agent_id, replica_id, holding, demand, pressed)
		select tenant_id, agent_id, $1, holding, demand, pressed from mine
		on conflict (tenant_id, agent_id, replica_id) do update
		   set holding = excluded.holding, demand = excluded.demand, pressed = excluded.pressed`,
		replicaID, tenants, agents, holdings, demands, pressed)
	// Expired processes are ignored already; deleting them (their leases cascade) keeps the
	// reads small.
	write.Queue(`delete from admission_replicas where expires_at < clock_timestamp()`)
	write.Queue("commit")
	if err := conn.SendBatch(ctx, write).Close(); err != nil {
		return fmt.Errorf("sync shares of %s: write: %w", replicaID, err)
	}
	return nil
}

// readView reads the lock's and the reads' results of SyncShares's first batch.
func readView(br pgx.BatchResults) (v View, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for range 2 { // begin, lock
		if _, err := br.Exec(); err != nil {
			return View{}, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return View{}, err
	}
	var m Member
	if _, err := pgx.ForEachRow(rows, []any{&m.ReplicaID, &m.SharePPM}, func() error {
		v.Replicas = append(v.Replicas, m)
		return nil
	}); err != nil {
		return View{}, err
	}
	rows, err = br.Query()
	if err != nil {
		return View{}, err
	}
	var l Lease
	if _, err := pgx.ForEachRow(rows, []any{&l.TenantID, &l.AgentID, &l.ReplicaID, &l.Holding, &l.Demand, &l.Pressed}, func() error {
		v.Leases = append(v.Leases, l)
		return nil
	}); err != nil {
		return View{}, err
	}
	return v, nil
}

// LeaveShares is ShareStore.LeaveShares.
func (s *Store) LeaveShares(ctx context.Context, replicaID string) error {
	if _, err := s.pool.Exec(ctx, `delete from admission_replicas where replica_id = $1`, replicaID); err != nil {
		return fmt.Errorf("leave shares of %s: %w", replicaID, err)
	}
	return nil
}
