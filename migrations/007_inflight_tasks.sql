-- Each connector replica's in-flight agent tasks, so that another replica can cancel them when
-- this one dies mid-turn (killed, OOM, node lost) and leaves the agent working, or waiting in
-- input-required, for a caller that is gone.
--
-- A replica rewrites its rows and its heartbeat every A2AC_INFLIGHT_SYNC (2 s) in one statement,
-- off the turn path; a graceful stop deletes them. Rows of a replica whose heartbeat is older
-- than A2AC_INFLIGHT_STALE are claimed (deleted, returned) by one sweeping replica, which cancels
-- those tasks at their agents unless a live hold continues them. No foreign keys: a deleted
-- agent or tenant leaves rows that the sweep drops (nothing to cancel at), and a key check would
-- put a lock on the agent's row into every sync.
create table connector_replicas (
	replica_id   text        primary key check (replica_id <> ''),
	-- The database's clock, never a replica's: replicas' clocks may disagree.
	heartbeat_at timestamptz not null default now()
);

create index connector_replicas_heartbeat_idx on connector_replicas (heartbeat_at);

create table inflight_tasks (
	replica_id text not null,
	tenant_id  uuid not null,
	agent_id   uuid not null,
	task_id    text not null check (task_id <> ''),
	session_id text not null,
	primary key (replica_id, tenant_id, agent_id, task_id)
);
