package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Cluster is a private Postgres cluster owned by one test, which may stop, crash and restart it
// (outage tests). The shared cluster of A2AC_TEST_DATABASE_URL serves every test package at
// once and must never be stopped; a test that takes Postgres away starts its own Cluster.
//
// It is started with scripts/postgres.sh in a fresh folder under the system temp directory
// (as root the cluster runs as the postgres user, who must be able to enter every parent
// folder, which a test's t.TempDir may not allow), and is stopped and removed when the test
// ends. Starting one costs about a second (initdb); it listens on 127.0.0.1 only.
type Cluster struct {
	script   string // scripts/postgres.sh
	dir      string // the DIR given to postgres.sh
	adminURL string // the postgres database, on the port every restart must reuse
	// pgCtl and dataDir come from the running server itself, so Crash does not depend on how
	// postgres.sh lays out DIR.
	pgCtl, dataDir string
}

// NewCluster starts a private cluster for the test; it is stopped and removed at cleanup.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	script, err := postgresScript()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "a2ac-pgtest-")
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	// MkdirTemp makes it 0700; the server may run as another user (postgres, when we are root).
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	c := &Cluster{script: script, dir: filepath.Join(dir, "pg")}
	tb.Cleanup(func() {
		// Immediate: nothing in a throwaway cluster needs a checkpoint. Before the server
		// has said where it lives, only postgres.sh knows how to stop it.
		stop := c.Crash
		if c.pgCtl == "" {
			stop = c.Stop
		}
		if err := stop(context.Background()); err != nil {
			tb.Error(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("pgtest: remove cluster: %v", err)
		}
	})

	ctx := tb.Context()
	if _, err := c.sh(ctx, "start", c.dir); err != nil {
		tb.Fatal(err)
	}
	out, err := c.sh(ctx, "url", c.dir)
	if err != nil {
		tb.Fatal(err)
	}
	c.adminURL = strings.TrimSpace(out)

	conn, err := pgx.Connect(ctx, c.adminURL)
	if err != nil {
		tb.Fatalf("pgtest: connect to private cluster: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var binDir string
	if err := conn.QueryRow(ctx, "select current_setting('data_directory'), (select setting from pg_config where name = 'BINDIR')").
		Scan(&c.dataDir, &binDir); err != nil {
		tb.Fatalf("pgtest: ask the private cluster where it lives: %v", err)
	}
	c.pgCtl = filepath.Join(binDir, "pg_ctl")
	return c
}

// AdminURL is the URL of the cluster's postgres database, as superuser.
func (c *Cluster) AdminURL() string { return c.adminURL }

// NewDB creates a migrated database in the cluster and opens a pool on it, closed when the
// test ends. The database is not dropped: it goes with the cluster, which may be down by then.
//
// The cluster commits asynchronously (postgres.sh runs it with synchronous_commit=off), so a
// Crash could lose a test's setup made just before it. The database is made with
// synchronous_commit=on for every session that does not ask otherwise, and checkpointed once
// migrated: what the test writes itself survives a Crash, while a program that turns
// synchronous commits off for its own sessions (the connector does) keeps that trade-off.
func (c *Cluster) NewDB(tb testing.TB) *DB {
	tb.Helper()
	ctx := tb.Context()
	name := "t_" + packageName() + "_" + randomSuffix()
	dbURL, err := create(ctx, c.adminURL, name)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.adminURL)
	if err != nil {
		tb.Fatalf("pgtest: connect to private cluster: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "alter database "+pgx.Identifier{name}.Sanitize()+" set synchronous_commit = on"); err != nil {
		tb.Fatalf("pgtest: %s: synchronous commits: %v", name, err)
	}
	if err := migrate(ctx, dbURL); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "checkpoint"); err != nil {
		tb.Fatalf("pgtest: checkpoint: %v", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		tb.Fatalf("pgtest: open pool on %s: %v", name, err)
	}
	tb.Cleanup(pool.Close)
	return &DB{URL: dbURL, Pool: pool, adminURL: c.adminURL, name: name}
}

// Checkpoint makes every commit so far durable, including asynchronous ones, so a Crash after
// it loses nothing committed before it.
func (c *Cluster) Checkpoint(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.adminURL)
	if err != nil {
		return fmt.Errorf("pgtest: checkpoint: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "checkpoint"); err != nil {
		return fmt.Errorf("pgtest: checkpoint: %w", err)
	}
	return nil
}

// Stop stops the cluster as an operator would (pg_ctl fast shutdown): open sessions are ended
// with admin_shutdown, a checkpoint makes every commit durable, and new connections are
// refused until Start. It returns once the server is gone. Safe to call from any goroutine.
func (c *Cluster) Stop(ctx context.Context) error {
	_, err := c.sh(ctx, "stop", c.dir)
	return err
}

// Crash kills the cluster as a crash would (pg_ctl immediate shutdown): every process exits at
// once, with no checkpoint, so commits made with synchronous_commit=off in the last moments
// (a few hundred milliseconds) may be lost; see NewDB and Checkpoint. It returns once the server is gone; it is a no-op when the cluster is down. Safe
// to call from any goroutine (an agent's handler, say).
func (c *Cluster) Crash(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	args := []string{c.pgCtl, "-D", c.dataDir, "-m", "immediate", "-w", "stop"}
	if os.Geteuid() == 0 {
		// pg_ctl refuses to run as root; run it as the cluster's owner, as postgres.sh does.
		owner, err := c.owner()
		if err != nil {
			return err
		}
		args = append([]string{"runuser", "-u", owner, "--"}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop -m immediate: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Start starts the cluster again after Stop or Crash, on the same port, so URLs handed out
// before (and pools opened on them) work again. It returns once the server accepts
// connections, after crash recovery if there was a crash.
func (c *Cluster) Start(ctx context.Context) error {
	if _, err := c.sh(ctx, "start", c.dir); err != nil {
		return err
	}
	out, err := c.sh(ctx, "url", c.dir)
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(out); got != c.adminURL {
		// postgres.sh moves on when the old port is taken; a test's URLs would then be dead.
		return fmt.Errorf("pgtest: cluster restarted as %s, not %s: another process took its port", got, c.adminURL)
	}
	return nil
}

func (c *Cluster) owner() (string, error) {
	fi, err := os.Stat(c.dataDir)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("pgtest: cannot tell who owns " + c.dataDir)
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10))
	if err != nil {
		return "", fmt.Errorf("pgtest: owner of %s: %w", c.dataDir, err)
	}
	return u.Username, nil
}

// sh runs scripts/postgres.sh with args and returns its standard output.
func (c *Cluster) sh(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.script, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pgtest: postgres.sh %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// postgresScript finds scripts/postgres.sh in the module holding the working directory (go
// test runs in the package's folder).
func postgresScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scripts", "postgres.sh"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("pgtest: no go.mod above the working directory; cannot find scripts/postgres.sh")
		}
		dir = parent
	}
}
