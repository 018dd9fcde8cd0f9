-- The deployment's shares of the tenants' and agents' concurrent-turn caps (internal/admission),
-- so that a cap bounds a tenant's turns across all replicas, not in each one.
--
-- Each connector replica rewrites its rows every A2AC_CAP_SYNC (1 s), in one transaction under
-- a deployment-wide advisory lock, off the turn path. A row is live while its replica's row is: expires_at (the database's clock) is the sync's
-- time plus 3 × A2AC_CAP_SYNC, so a replica that dies gives its share back within seconds, and
-- a graceful stop deletes its rows at once. Expired rows are ignored, and deleted by any sync.
create table admission_replicas (
	replica_id text        primary key check (replica_id <> ''),
	-- The replica's share of every cap that has no lease row, in millionths: each live replica
	-- holds about one R-th of such a cap without a row. The shares of live replicas never add up
	-- to more than 1,000,000.
	share_ppm  integer     not null check (share_ppm between 0 and 1000000),
	expires_at timestamptz not null
);

create index admission_replicas_expires_idx on admission_replicas (expires_at);

-- A replica's lease on one cap that demand has pushed off the even split: a tenant's cap
-- (agent_id '') or one of its agents'. Ids are text as the request named them: admission runs
-- before the lookup that checks them.
create table admission_leases (
	tenant_id  text    not null,
	agent_id   text    not null,
	replica_id text    not null references admission_replicas (replica_id) on delete cascade,
	-- The most turns of this cap the replica may be running: max(its grant, its turns in flight).
	holding    integer not null check (holding >= 0),
	-- Its turns in flight plus the turns it refused for want of a share since its last sync.
	demand     integer not null check (demand >= 0),
	-- Its demand is above its even share: while any replica is pressed, the cap is shared by
	-- leases; when none is, the replicas go back to the even split and delete their rows.
	pressed    boolean not null,
	primary key (tenant_id, agent_id, replica_id)
);

create index admission_leases_replica_idx on admission_leases (replica_id);
