package pgtest_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

func TestStart_without_the_cluster_url_fails_and_says_how_to_run(t *testing.T) {
	t.Setenv(pgtest.EnvURL, "")
	db, err := pgtest.Start(t.Context())
	if err == nil {
		db.Close()
		t.Fatal("Start without " + pgtest.EnvURL + " succeeded; want an error")
	}
	if !strings.Contains(err.Error(), "make test") || !strings.Contains(err.Error(), pgtest.EnvURL) {
		t.Errorf("error = %q; want it to name %s and `make test`", err, pgtest.EnvURL)
	}
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatalf("connect to the cluster: %v", err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var exists bool
	if err := conn.QueryRow(t.Context(), "select exists (select from pg_database where datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

func dbName(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

func TestStart_gives_a_migrated_database_that_Close_drops(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) == "" {
		t.Fatal(pgtest.EnvURL + " is not set: run tests with `make test`")
	}
	db, err := pgtest.Start(t.Context())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	name := dbName(t, db.URL)
	if !strings.HasPrefix(name, "t_pgtest_") {
		t.Errorf("database %q; want it named t_pgtest_<random>", name)
	}

	var empty string
	t.Run("tenants_and_empty_databases", func(t *testing.T) {
		a, b := db.NewTenant(t), db.NewTenant(t)
		if a == b {
			t.Errorf("NewTenant returned %s twice", a)
		}
		var n int
		if err := db.Pool.QueryRow(t.Context(), "select count(*) from tenants where id in ($1, $2)", a, b).Scan(&n); err != nil || n != 2 {
			t.Errorf("tenants found = %d, %v; want 2", n, err)
		}
		empty = dbName(t, db.EmptyDatabase(t))
		if !databaseExists(t, empty) {
			t.Errorf("EmptyDatabase %s does not exist", empty)
		}
	})
	if databaseExists(t, empty) {
		t.Errorf("EmptyDatabase %s still exists after its test ended", empty)
	}

	// A connection still open must not keep the database alive.
	conn, err := pgx.Connect(t.Context(), db.URL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if databaseExists(t, name) {
		t.Errorf("database %s still exists after Close", name)
	}
}
