package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

// SyncInflight writes replicaID's heartbeat (the database's now()) and makes its stored
// in-flight tasks exactly tasks, in one statement: one round trip per replica per sync, never
// one per turn. Tasks whose tenant or agent id is no UUID are left out (no turn can run them).
func (s *Store) SyncInflight(ctx context.Context, replicaID string, tasks []connector.InflightTask) error {
	tenants := make([]string, 0, len(tasks))
	agents := make([]string, 0, len(tasks))
	ids := make([]string, 0, len(tasks))
	sessions := make([]string, 0, len(tasks))
	for _, t := range tasks {
		tid, ok1 := parseID(t.TenantID)
		aid, ok2 := parseID(t.AgentID)
		if !ok1 || !ok2 || t.TaskID == "" {
			continue
		}
		tenants, agents, ids, sessions = append(tenants, tid), append(agents, aid), append(ids, t.TaskID), append(sessions, t.SessionID)
	}
	// The delete and the insert never touch the same key (the delete keeps every row still in
	// the set), so one statement's snapshot is enough for both.
	_, err := s.pool.Exec(ctx, `
		with now_set as (
			select * from unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[])
			         as n(tenant_id, agent_id, task_id, session_id)),
		beat as (
			insert into connector_replicas (replica_id, heartbeat_at) values ($1, now())
			on conflict (replica_id) do update set heartbeat_at = now()),
		gone as (
			delete from inflight_tasks t
			 where t.replica_id = $1
			   and not exists (select 1 from now_set n
			                    where n.tenant_id = t.tenant_id and n.agent_id = t.agent_id and n.task_id = t.task_id))
		insert into inflight_tasks (replica_id, tenant_id, agent_id, task_id, session_id)
		select $1, tenant_id, agent_id, task_id, session_id from now_set
		on conflict do nothing`, replicaID, tenants, agents, ids, sessions)
	if err != nil {
		return fmt.Errorf("sync in-flight tasks of %s: %w", replicaID, classify(err))
	}
	return nil
}

// ClaimOrphans deletes the replicas whose heartbeat is older than stale, with their in-flight
// tasks, and returns those tasks that no live hold continues (a hold saved before the replica
// died still owns its task: the session's next turn continues it). Replicas are claimed with
// FOR UPDATE SKIP LOCKED, so two replicas sweeping at once never both return the same task.
func (s *Store) ClaimOrphans(ctx context.Context, stale time.Duration) ([]connector.InflightTask, error) {
	rows, err := s.pool.Query(ctx, `
		with dead as (
			select replica_id from connector_replicas
			 where heartbeat_at < now() - make_interval(secs => $1)
			 for update skip locked),
		replicas as (
			delete from connector_replicas r using dead where r.replica_id = dead.replica_id),
		tasks as (
			delete from inflight_tasks t using dead where t.replica_id = dead.replica_id
			returning t.tenant_id, t.agent_id, t.task_id, t.session_id)
		select tenant_id::text, agent_id::text, task_id, session_id from tasks
		 where not exists (
		       select 1 from sessions s
		        where s.tenant_id = tasks.tenant_id and s.session_id = tasks.session_id
		          and s.hold_task_id = tasks.task_id and s.hold_expires_at > now())`, stale.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim orphaned tasks: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (connector.InflightTask, error) {
		var t connector.InflightTask
		return t, r.Scan(&t.TenantID, &t.AgentID, &t.TaskID, &t.SessionID)
	})
	if err != nil {
		return nil, fmt.Errorf("claim orphaned tasks: %w", classify(err))
	}
	return out, nil
}

// DeleteReplica deletes replicaID's heartbeat and in-flight tasks: a replica that stops
// gracefully has drained or canceled its turns and leaves nothing to sweep.
func (s *Store) DeleteReplica(ctx context.Context, replicaID string) error {
	_, err := s.pool.Exec(ctx, `
		with t as (delete from inflight_tasks where replica_id = $1)
		delete from connector_replicas where replica_id = $1`, replicaID)
	if err != nil {
		return fmt.Errorf("delete replica %s: %w", replicaID, classify(err))
	}
	return nil
}
