package store_test

import (
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/storetest"
)

var _ connector.SessionStore = (*store.Store)(nil)

// The real store follows the session store's contract; the session router's in-memory double
// runs the same suite (internal/session).
func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Fixture {
		s := store.New(testDB.Pool)
		t.Cleanup(s.Drain)
		tenant := testDB.NewTenant(t)
		a := mustCreate(t, s, newAgent(tenant, "https://contract-a.example.com"))
		b := mustCreate(t, s, newAgent(tenant, "https://contract-b.example.com"))
		return storetest.Fixture{Store: s, TenantID: tenant, Agents: [2]connector.Agent{a, b}}
	})
}
