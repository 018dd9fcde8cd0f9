// Package pgtest gives a test package its own real, migrated Postgres database in a private
// cluster, and drops it when the package's tests end.
//
// The cluster comes from the test command (`make test` starts one with scripts/postgres.sh and
// exports A2AC_TEST_DATABASE_URL, the admin URL of its `postgres` database). Without it, tests
// fail with a message saying so: they never skip, and they never fall back to a mock.
//
// One database per test package (go test runs packages in parallel, each its own process);
// inside a package, tests share it and stay apart by using their own tenant (NewTenant), so
// they can run with t.Parallel() and nothing is ever truncated.
//
// Typical use:
//
//	var testDB *pgtest.DB
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		s := store.New(testDB.Pool)
//		tenantID := testDB.NewTenant(t)
//		...
//	}
//
// A test that takes Postgres away (an outage test) must not stop that shared cluster: it starts
// its own with NewCluster, whose Stop, Crash and Start it may call at will.
//
// The package refuses to touch a database it did not create: it only creates and drops
// databases named t_<package>_<random>.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2a-connector/a2a-connector/migrations"
)

// EnvURL is the environment variable holding the admin URL of the test cluster.
const EnvURL = "A2AC_TEST_DATABASE_URL"

// setupTimeout bounds creating or dropping a database and applying migrations: on a private
// cluster these take well under a second, so a minute means something is wrong.
const setupTimeout = time.Minute

// DB is a test package's own database, migrated to the newest schema.
type DB struct {
	// URL connects to this database (postgres://…/t_<package>_<random>?…).
	URL string
	// Pool is open on URL. Share it; do not close it (Close does).
	Pool *pgxpool.Pool

	adminURL string
	name     string
}

// Start creates a database named after the test binary's package in the cluster named by
// A2AC_TEST_DATABASE_URL, applies the migrations and opens a pool on it. The caller must Close
// it. Most packages want Run instead.
func Start(ctx context.Context) (*DB, error) {
	adminURL := os.Getenv(EnvURL)
	if adminURL == "" {
		return nil, errors.New(EnvURL + " is not set: run tests with `make test`, or some " +
			"packages with `scripts/test.sh ./internal/store/...` or `scripts/with-postgres.sh go test ./...`")
	}
	name := "t_" + packageName() + "_" + randomSuffix()
	dbURL, err := create(ctx, adminURL, name)
	if err != nil {
		return nil, err
	}
	db := &DB{URL: dbURL, adminURL: adminURL, name: name}

	if err := migrate(ctx, dbURL); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	db.Pool, err = pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pgtest: open pool on %s: %w", name, err), db.Close())
	}
	return db, nil
}

// Close closes the pool and drops the database, ending any connection still open on it.
func (db *DB) Close() error {
	if db.Pool != nil {
		db.Pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	return drop(ctx, db.adminURL, db.name)
}

// Run is the body of a package's TestMain: it starts the package's database, stores it in *db,
// runs the tests and drops the database. It returns the exit code for os.Exit; when the
// database cannot be made, it prints why and returns 1, so the package fails.
func Run(m *testing.M, db **DB) int {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	d, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: pgtest: %v\n", err)
		return 1
	}
	*db = d
	code := m.Run()
	if err := d.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// NewTenant inserts a tenant named after the test and returns its id. Tests that each use their
// own tenant cannot see each other's rows, because every query of the store is scoped by
// tenant; that is what lets them share the package's database and run in parallel.
func (db *DB) NewTenant(tb testing.TB) string {
	tb.Helper()
	id := uuid.NewString()
	if _, err := db.Pool.Exec(tb.Context(), "insert into tenants (id, name) values ($1, $2)", id, tb.Name()); err != nil {
		tb.Fatalf("pgtest: insert tenant: %v", err)
	}
	return id
}

// EmptyDatabase creates another database in the same cluster, without any migration, and
// returns its URL; it is dropped when the test ends. It is for tests of the migrations
// themselves, which need a database that has never seen them.
func (db *DB) EmptyDatabase(tb testing.TB) string {
	tb.Helper()
	name := db.name + "_e" + randomSuffix()
	u, err := create(tb.Context(), db.adminURL, name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := drop(ctx, db.adminURL, name); err != nil {
			tb.Error(err)
		}
	})
	return u
}

// Fresh is a database of the test's own in the same cluster, migrated, with its pool; it is
// dropped when the test ends. It is for tests of state global to a database (the caller's
// identity keys, sealed with one secret key), which the package's shared database would mix.
func (db *DB) Fresh(tb testing.TB) *DB {
	tb.Helper()
	u := db.EmptyDatabase(tb)
	ctx, cancel := context.WithTimeout(tb.Context(), setupTimeout)
	defer cancel()
	if err := migrate(ctx, u); err != nil {
		tb.Fatal(err)
	}
	pool, err := pgxpool.New(tb.Context(), u)
	if err != nil {
		tb.Fatalf("pgtest: pool: %v", err)
	}
	tb.Cleanup(pool.Close) // before the drop, registered earlier, runs
	return &DB{URL: u, Pool: pool, adminURL: db.adminURL}
}

// create makes database name and returns its URL.
func create(ctx context.Context, adminURL, name string) (string, error) {
	dbURL, err := withDatabase(adminURL, name)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("pgtest: connect to %s: %w", EnvURL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return dbURL, nil
}

func drop(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("pgtest: drop database %s: connect: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)"); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", name, err)
	}
	return nil
}

func migrate(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := migrations.Apply(ctx, conn); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}

// withDatabase returns adminURL pointing at database name instead.
func withDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("pgtest: %s must be a postgres:// URL, got %q", EnvURL, adminURL)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// packageName is the test binary's package (go test names it <package>.test), reduced to what
// is safe in an unquoted identifier, so a leftover database says where it came from.
func packageName() string {
	base := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	base = strings.TrimSuffix(base, ".test")
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
		if b.Len() == 30 {
			break
		}
	}
	if b.Len() == 0 {
		return "pkg"
	}
	return b.String()
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:]) // never returns an error since Go 1.24
	return hex.EncodeToString(b[:])
}
