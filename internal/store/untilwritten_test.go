package store_test

import (
	"errors"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// A release asked for while Postgres is down is tried again until it is written: the session's
// next turn meanwhile fails fast with the try it asks for (Postgres cannot be reached), and once
// Postgres is back the release lands without anyone asking; Drain gives up a release that still
// cannot be written.
func TestSaveUntilWritten_outlasts_a_postgres_outage(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := pg.NewDB(t)
	ctx := t.Context()
	pool, err := pgpool.Open(ctx, db.URL, pgpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := store.New(pool.Pool)
	tenant := db.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://retried.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, session := range []string{"waited", "alone"} {
		if err := s.SaveTurn(ctx, holdRecord(tenant, session, a.ID, "t1", now, "task-"+session, time.Hour)); err != nil {
			t.Fatal(err)
		}
	}

	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 2)
	for _, session := range []string{"waited", "alone"} {
		release := connector.TurnRecord{TenantID: tenant, SessionID: session, AgentID: a.ID, TurnID: "t2",
			StartedAt: now.Add(time.Second), ReleaseHold: true}
		s.SaveUntilWritten(ctx, release, time.Hour, func(err error) { results <- err })
	}
	// The next turn of a session does not wait out the retries: it learns at once that
	// Postgres cannot be reached.
	if err := s.WaitSaves(ctx, tenant, "waited"); !errors.Is(err, connector.ErrUnavailable) {
		t.Fatalf("WaitSaves while Postgres is down: %v; want ErrUnavailable", err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSaves(ctx, tenant, "waited"); err != nil {
		t.Fatalf("WaitSaves once Postgres is back: %v", err)
	}
	if l, err := s.LookupTurn(ctx, tenant, "waited", a.ID, now); err != nil || l.Hold != nil {
		t.Fatalf("waited session: lookup %+v, %v; want its hold released", l.Hold, err)
	}
	// The other session's release lands with nobody waiting for it.
	for range 2 {
		if err := <-results; err != nil {
			t.Errorf("a release reported %v once written", err)
		}
	}
	if l, err := s.LookupTurn(ctx, tenant, "alone", a.ID, now); err != nil || l.Hold != nil {
		t.Fatalf("session nobody waited for: lookup %+v, %v; want its hold released", l.Hold, err)
	}

	// Shutting down while Postgres is away: Drain returns after one more try.
	if err := s.SaveTurn(ctx, holdRecord(tenant, "lost", a.ID, "t3", now.Add(2*time.Second), "task-lost", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s.SaveUntilWritten(ctx, connector.TurnRecord{TenantID: tenant, SessionID: "lost", AgentID: a.ID, TurnID: "t4",
		StartedAt: now.Add(3 * time.Second), ReleaseHold: true}, time.Hour, func(err error) { results <- err })
	s.Drain()
	if err := <-results; !errors.Is(err, connector.ErrUnavailable) {
		t.Errorf("release given up at Drain reported %v; want ErrUnavailable", err)
	}
}
