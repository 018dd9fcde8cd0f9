package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// A private cluster goes down with Stop or Crash, comes back on the same URL with Start, and
// keeps what was committed (synchronously) before either.
func TestCluster_stops_crashes_and_restarts_on_the_same_url(t *testing.T) {
	t.Parallel()
	c := pgtest.NewCluster(t)
	db := c.NewDB(t)
	ctx := t.Context()
	tenant := db.NewTenant(t)

	reachable := func() error {
		conn, err := pgx.Connect(ctx, db.URL)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var n int
		if err := conn.QueryRow(ctx, "select count(*) from tenants where id = $1", tenant).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("tenant %s: %d rows after restart, want 1", tenant, n)
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		down func(context.Context) error
	}{
		{name: "stop", down: c.Stop},
		{name: "crash", down: c.Crash},
	} {
		if err := tc.down(ctx); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := reachable(); err == nil {
			t.Fatalf("after %s the database still answers", tc.name)
		}
		if err := tc.down(ctx); err != nil {
			t.Errorf("%s of a cluster already down: %v", tc.name, err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatalf("start after %s: %v", tc.name, err)
		}
		if err := reachable(); err != nil {
			t.Fatalf("after %s and start: %v", tc.name, err)
		}
	}
}
