package store_test

import (
	"os"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// testDB is this package's own migrated database; tests keep apart by using their own tenant.
var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }
