package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// ApplyTo brings the database behind conn to version n only, so that a test can put data in
// the shape of an older schema before a migration's data step runs.
func ApplyTo(ctx context.Context, conn *pgx.Conn, n int32) error {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return fmt.Errorf("apply migrations to %d: %w", n, err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("apply migrations to %d: load: %w", n, err)
	}
	return m.MigrateTo(ctx, n)
}
