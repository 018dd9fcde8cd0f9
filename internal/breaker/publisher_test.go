package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// TestPublishAndRead: published changes reach the table off the caller's path, coalesced
// per agent, one row per replica; reads are scoped by tenant and show only recent rows.
func TestPublishAndRead(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	otherTenant, otherAgent := newAgent(t)
	st := store.New(testDB.Pool)
	a := breaker.NewPublisher(store.NewCircuits(testDB.Pool, "connector/a", nil), nil)
	b := breaker.NewPublisher(store.NewCircuits(testDB.Pool, "connector/b", nil), nil)
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	open := breaker.Change{TenantID: tenantID, AgentID: agentID, Endpoint: "https://agent.example/a2a",
		State: breaker.Open, Since: since, Cause: "timeout: the agent sent no event within 10s", RetryAt: since.Add(5 * time.Second)}
	a.Publish(breaker.Change{TenantID: tenantID, AgentID: agentID, Endpoint: open.Endpoint, State: breaker.HalfOpen, Since: since})
	a.Publish(open) // the newest change of the agent wins
	b.Publish(breaker.Change{TenantID: tenantID, AgentID: agentID, Endpoint: open.Endpoint, State: breaker.Closed, Since: since})
	a.Publish(breaker.Change{TenantID: otherTenant, AgentID: otherAgent, State: breaker.Open, Since: since})
	a.Publish(breaker.Change{TenantID: "not-a-uuid", AgentID: agentID, State: breaker.Open}) // dropped

	// Written by the publishers' own goroutines.
	ctx, cancel := context.WithCancel(t.Context())
	stopA, stopB := a.Start(ctx, 5*time.Second), b.Start(ctx, 5*time.Second)
	var got []store.ReplicaBreaker
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		var err error
		if got, err = st.ReplicaBreakers(t.Context(), tenantID, agentID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	stopA()
	stopB()
	if len(got) != 2 {
		t.Fatalf("breakers = %+v, want one row per replica", got)
	}
	ra, rb := got[0], got[1]
	if ra.Replica != "connector/a" || ra.State != breaker.Open || !ra.Since.Equal(since) || ra.Cause != open.Cause ||
		!ra.RetryAt.Equal(open.RetryAt) || ra.Endpoint != open.Endpoint {
		t.Errorf("replica a = %+v, want %+v", ra, open)
	}
	if rb.Replica != "connector/b" || rb.State != breaker.Closed || !rb.RetryAt.IsZero() {
		t.Errorf("replica b = %+v, want closed", rb)
	}
	// Tenant-scoped: the other tenant's agent is not visible through this tenant.
	if rows, err := st.ReplicaBreakers(t.Context(), tenantID, otherAgent); err != nil || len(rows) != 0 {
		t.Errorf("another tenant's agent: %+v, %v; want none", rows, err)
	}
	// A row not written for longer than BreakerRecent (a replica gone) is not shown.
	if _, err := testDB.Pool.Exec(t.Context(), `update agent_breakers set updated_at = now() - interval '16 minutes'
		where tenant_id = $1 and replica = 'connector/b'`, tenantID); err != nil {
		t.Fatal(err)
	}
	if rows, err := st.ReplicaBreakers(t.Context(), tenantID, agentID); err != nil || len(rows) != 1 || rows[0].Replica != "connector/a" {
		t.Errorf("after replica b went quiet: %+v, %v; want only replica a", rows, err)
	}
}
