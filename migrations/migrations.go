// Package migrations holds the Postgres schema of a2a-connector as numbered SQL files
// (NNN_name.sql), embedded in the binary, and applies them with tern.
//
// Migrations are forward-only: there are no down steps, and Apply never drops anything it did
// not create in the same step. The package opens no connections; the caller passes one (the
// console-api `migrate` subcommand, the Helm migration Job, internal/pgtest).
package migrations

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// VersionTable is the table where tern records the number of the last applied migration.
const VersionTable = "schema_version"

// lockKey names the session-level advisory lock held for the whole of Apply, so that replicas
// (or a Helm hook and a developer) starting together apply each migration exactly once. tern
// takes its own lock around each of its steps; this one also covers creating the version table
// and loading, so the two never interleave.
const lockKey int64 = 0x_0a2a_c000_6d69_6772 // arbitrary; ends in "migr" in ASCII

// Apply brings the database behind conn to the newest schema. Each migration runs in its own
// transaction; already applied ones are skipped, so Apply is safe to call on every start and
// from several processes at once (they wait for each other).
func Apply(ctx context.Context, conn *pgx.Conn) (err error) {
	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("apply migrations: take lock: %w", err)
	}
	defer func() {
		// The caller's ctx may be done by now; the lock must still be released or the
		// connection would hold it until it closes.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, "select pg_advisory_unlock($1)", lockKey); uerr != nil && err == nil {
			err = fmt.Errorf("apply migrations: release lock: %w", uerr)
		}
	}()

	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("apply migrations: load: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Latest is the number of the newest migration embedded in this binary: after a successful
// Apply, the version table holds this number.
func Latest() (int, error) {
	names, err := migrate.FindMigrations(files)
	if err != nil {
		return 0, fmt.Errorf("list migrations: %w", err)
	}
	return len(names), nil
}
