package admission

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// testDB holds the shares of the tests that run replicas on Postgres. Those tests share one
// deployment-wide table, so they do not run in parallel, and each deletes its replicas' rows.
var testDB *pgtest.DB

// TestMain also checks that no sync loop outlives its test.
func TestMain(m *testing.M) {
	code := pgtest.Run(m, &testDB)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
