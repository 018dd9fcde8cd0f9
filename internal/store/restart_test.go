package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// restartPoolSize is the pool of the restart tests: every connection in it is filled before
// the restart, so every call after it meets a connection the restart killed.
const restartPoolSize = 4

// Right after Postgres restarts (a fast stop, or a crash) every turn-path call succeeds on the
// caller's first try: the failure on the connection the restart killed is retried once on a
// fresh one. The pool never pings before handing a connection out, so each call meets a dead
// connection, as the turns of a busy pool do (pgxpool pings only connections idle over 1 s).
func TestTurnPath_is_served_right_after_a_postgres_restart(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := pg.NewDB(t)
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = restartPoolSize
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := store.New(pool)
	tenant := db.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://restart.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	// Each call gets its own session, held before the restart (the database commits
	// synchronously, so a crash keeps the hold).
	held := func(t *testing.T, session string) {
		t.Helper()
		if err := s.SaveTurn(ctx, holdRecord(tenant, session, a.ID, "t0", now, "task-"+session, time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	ops := []struct {
		name string
		call func(session string) error
	}{
		{name: "LookupTurn", call: func(session string) error {
			l, err := s.LookupTurn(ctx, tenant, session, a.ID, now)
			if err == nil && (l.Hold == nil || l.Hold.TaskID != "task-"+session) {
				err = fmt.Errorf("lookup = %+v; want the hold saved before the restart", l)
			}
			return err
		}},
		{name: "SaveTurn", call: func(session string) error {
			return s.SaveTurn(ctx, holdRecord(tenant, session, a.ID, "t1", now.Add(time.Second), "task-new", time.Hour))
		}},
		{name: "SaveAfterFinal", call: func(session string) error {
			r := holdRecord(tenant, session, a.ID, "t1", now.Add(time.Second), "", 0)
			r.SetHold = nil
			errc := make(chan error, 1)
			s.SaveAfterFinal(ctx, r, func(err error) { errc <- err })
			return <-errc
		}},
		{name: "AgentForTurn", call: func(string) error {
			_, _, err := s.AgentForTurn(ctx, tenant, a.ID)
			return err
		}},
		{name: "GetHold", call: func(session string) error {
			_, _, err := s.GetHold(ctx, tenant, session, now)
			return err
		}},
		{name: "ReleaseHold", call: func(session string) error {
			h, err := s.ReleaseHold(ctx, tenant, session, now.Add(time.Second))
			if err == nil && h.TaskID != "task-"+session {
				err = fmt.Errorf("released %+v; want the hold saved before the restart", h)
			}
			return err
		}},
		{name: "coalesced_batch", call: func(session string) error {
			return batchOfTurns(ctx, s, tenant, session, a.ID, now)
		}},
	}
	for _, down := range []struct {
		name string
		stop func(context.Context) error
	}{
		{name: "fast", stop: pg.Stop},
		{name: "immediate", stop: pg.Crash},
	} {
		for _, op := range ops {
			// Not parallel: they share the cluster they restart.
			t.Run(down.name+"/"+op.name, func(t *testing.T) {
				session := down.name + "-" + op.name
				held(t, session)
				fillPool(t, pool)
				if err := down.stop(ctx); err != nil {
					t.Fatal(err)
				}
				if err := pg.Start(ctx); err != nil {
					t.Fatal(err)
				}
				if err := op.call(session); err != nil {
					t.Fatalf("%s right after a %s restart: %v", op.name, down.name, err)
				}
			})
		}
	}
}

// fillPool leaves the pool holding restartPoolSize idle connections, all used just now.
func fillPool(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	conns := make([]*pgxpool.Conn, 0, restartPoolSize)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range restartPoolSize {
		c, err := pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Exec(t.Context(), "select 1"); err != nil {
			t.Fatal(err)
		}
	}
}

// batchOfTurns sends a lookup and a save of eight sessions together, as one coalesced batch,
// and returns the first error.
func batchOfTurns(ctx context.Context, s *store.Store, tenant, session, agentID string, now time.Time) error {
	queued, resume := s.PauseTurns()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range 8 {
		sess := fmt.Sprintf("%s-%d", session, i)
		wg.Go(func() {
			_, errs[2*i] = s.LookupTurn(ctx, tenant, sess, agentID, now)
		})
		wg.Go(func() {
			errs[2*i+1] = s.SaveTurn(ctx, connector.TurnRecord{TenantID: tenant, SessionID: sess, AgentID: agentID,
				TurnID: "t1", StartedAt: now, ContextID: "ctx", SetHold: &connector.Hold{TaskID: "task", ContextID: "ctx",
					TurnID: "t1", ExpiresAt: now.Add(time.Hour)}})
		})
	}
	for deadline := time.Now().Add(30 * time.Second); queued() < 16; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			resume()
			wg.Wait()
			return fmt.Errorf("only %d of 16 statements queued", queued())
		}
	}
	resume()
	wg.Wait()
	return errors.Join(errs...)
}

// A hold the engine is told of outlives a crash of Postgres right after its save, although the
// pool commits asynchronously as the connector's does: a hold change someone waits for commits
// synchronously, alone or in a coalesced batch.
func TestDurableHold_survives_a_crash_right_after_its_save(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := pg.NewDB(t)
	ctx := t.Context()
	pool, err := pgpool.Open(ctx, db.URL, pgpool.Options{RuntimeParams: map[string]string{"synchronous_commit": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var setting string
	if err := pool.QueryRow(ctx, "show synchronous_commit").Scan(&setting); err != nil || setting != "off" {
		t.Fatalf("synchronous_commit = %q, %v; want off, as the connector's pool", setting, err)
	}
	s := store.New(pool.Pool)
	tenant := db.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://durable.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	if err := s.SaveTurn(ctx, holdRecord(tenant, "alone", a.ID, "t1", now, "task-alone", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := batchOfTurns(ctx, s, tenant, "batch", a.ID, now); err != nil {
		t.Fatal(err)
	}
	if err := pg.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, session := range []string{"alone", "batch-0", "batch-7"} {
		l, err := s.LookupTurn(ctx, tenant, session, a.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if l.Hold == nil {
			t.Errorf("session %s: the hold saved before the crash is gone", session)
		}
	}
}
