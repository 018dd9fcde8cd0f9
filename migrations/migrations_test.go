package migrations_test

import (
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/migrations"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	return conn
}

// checkSchema fails unless the database behind conn is at the newest version with every table.
func checkSchema(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := conn.QueryRow(t.Context(), "select version from "+migrations.VersionTable).Scan(&version); err != nil {
		t.Fatalf("read version: %v", err)
	}
	if version != latest || latest < 1 {
		t.Errorf("schema version = %d; want %d (and at least 1)", version, latest)
	}
	var rows int
	if err := conn.QueryRow(t.Context(), "select count(*) from "+migrations.VersionTable).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("version table rows = %d, %v; want exactly 1", rows, err)
	}
	for _, table := range []string{"tenants", "tenant_tokens", "agents", "agent_revisions", "sessions", "session_contexts"} {
		var exists bool
		if err := conn.QueryRow(t.Context(), "select to_regclass($1) is not null", table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s exists = %v, %v; want true", table, exists, err)
		}
	}
}

func TestApply_on_an_empty_database_then_again_is_a_no_op(t *testing.T) {
	t.Parallel()
	conn := connect(t, testDB.EmptyDatabase(t))
	if err := migrations.Apply(t.Context(), conn); err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	checkSchema(t, conn)
	if _, err := conn.Exec(t.Context(), "insert into tenants (id, name) values (gen_random_uuid(), 'kept')"); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Apply(t.Context(), conn); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	checkSchema(t, conn)
	var n int
	if err := conn.QueryRow(t.Context(), "select count(*) from tenants").Scan(&n); err != nil || n != 1 {
		t.Errorf("tenants after the second Apply = %d, %v; want 1 (data kept)", n, err)
	}
	// The lock is released: another session can take it at once.
	other := connect(t, conn.Config().ConnString())
	var got bool
	const lockKey int64 = 0x_0a2a_c000_6d69_6772 // as in migrations.go
	if err := other.QueryRow(t.Context(), "select pg_try_advisory_lock($1)", lockKey).Scan(&got); err != nil || !got {
		t.Errorf("pg_try_advisory_lock after Apply = %v, %v; want true", got, err)
	}
}

func TestApply_concurrently_from_several_processes_is_safe(t *testing.T) {
	t.Parallel()
	url := testDB.EmptyDatabase(t)
	const appliers = 4
	conns := make([]*pgx.Conn, appliers)
	for i := range conns {
		conns[i] = connect(t, url)
	}
	errs := make([]error, appliers)
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() { errs[i] = migrations.Apply(t.Context(), conn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Apply #%d: %v", i, err)
		}
	}
	checkSchema(t, conns[0])
}

func TestApply_on_the_package_database_is_current(t *testing.T) {
	t.Parallel()
	checkSchema(t, connect(t, testDB.URL))
}
