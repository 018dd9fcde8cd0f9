package breaker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// The tests of this package run the breaker against the deployment's share as it is in
// production: internal/store's Circuits on this package's own migrated database. The state
// machine's own cases are tested through turns in internal/invoke (TestBreaker*).

// testDB is this package's own migrated database; tests keep apart by using their own tenant.
var testDB *pgtest.DB

// TestMain also checks that no listener or publisher goroutine outlives its test.
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

// clock is a settable clock shared by the replicas of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// base is the instant the replicas' clocks start at.
var base = time.Now().UTC().Add(-time.Hour).Truncate(time.Hour).Add(30*time.Minute + 20*time.Second)

// newAgent registers an agent in a new tenant and returns both ids.
func newAgent(t *testing.T) (tenantID, agentID string) {
	t.Helper()
	tenantID = testDB.NewTenant(t)
	id := uuid.NewString()
	_, err := store.New(testDB.Pool).CreateAgent(t.Context(), connector.NewAgent{
		ID: id, TenantID: tenantID, CardURL: "https://agent.example.com/" + id,
		ResolvedCardURL: "https://agent.example.com/" + id + "/.well-known/agent-card.json",
		Card:            json.RawMessage(`{"name": "Weather"}`), Enabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tenantID, id
}
