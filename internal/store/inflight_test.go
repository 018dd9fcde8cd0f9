package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/internal/store"

	connector "github.com/a2a-connector/a2a-connector"
)

// A dead replica's tasks are claimed once, whatever number of replicas sweep at the same time;
// a task a live hold continues is dropped without being returned (the session owns it); a live
// replica's tasks are left alone, and a graceful stop deletes a replica's rows.
func TestInflight_sync_claim_delete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	agent := uuid.NewString()
	dead, live := "dead-"+uuid.NewString(), "live-"+uuid.NewString()
	task := func(id, session string) connector.InflightTask {
		return connector.InflightTask{TenantID: tenant, AgentID: agent, TaskID: id, SessionID: session}
	}

	// A sync replaces the replica's set: "gone" ended between the two syncs.
	if err := s.SyncInflight(ctx, dead, []connector.InflightTask{task("orphan", "s1"), task("held", "s2"), task("gone", "s3")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncInflight(ctx, dead, []connector.InflightTask{task("orphan", "s1"), task("held", "s2")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncInflight(ctx, live, []connector.InflightTask{task("running", "s4")}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, `select count(*) from inflight_tasks where replica_id = $1`, dead); n != 2 {
		t.Fatalf("dead replica has %d rows after the second sync, want 2", n)
	}
	// Session s2 was held on "held" before the replica died; the replica's heartbeat is old.
	if _, err := testDB.Pool.Exec(ctx, `
		insert into sessions (tenant_id, session_id, hold_agent_id, hold_task_id, hold_expires_at, last_turn_started_at)
		values ($1, 's2', $2, 'held', now() + interval '10 minutes', now())`, tenant, agent); err != nil {
		t.Fatal(err)
	}
	if _, err := testDB.Pool.Exec(ctx, `update connector_replicas set heartbeat_at = now() - interval '1 hour' where replica_id = $1`, dead); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		claimed []connector.InflightTask
		wg      sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			got, err := s.ClaimOrphans(ctx, 15*time.Second)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			claimed = append(claimed, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	// Other tests' replicas share the table: keep this tenant's.
	var mine []connector.InflightTask
	for _, c := range claimed {
		if c.TenantID == tenant {
			mine = append(mine, c)
		}
	}
	if diff := cmp.Diff([]connector.InflightTask{task("orphan", "s1")}, mine); diff != "" {
		t.Errorf("claimed by four concurrent sweeps (-want +got):\n%s", diff)
	}
	if n := countRows(t, `select count(*) from inflight_tasks where replica_id = $1`, dead) +
		countRows(t, `select count(*) from connector_replicas where replica_id = $1`, dead); n != 0 {
		t.Errorf("the dead replica left %d rows", n)
	}
	if n := countRows(t, `select count(*) from inflight_tasks where replica_id = $1`, live); n != 1 {
		t.Errorf("the live replica has %d rows, want its 1", n)
	}

	if err := s.DeleteReplica(ctx, live); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, `select count(*) from inflight_tasks where replica_id = $1`, live) +
		countRows(t, `select count(*) from connector_replicas where replica_id = $1`, live); n != 0 {
		t.Errorf("a deleted replica left %d rows", n)
	}
}
