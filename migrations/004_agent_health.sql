-- Per-agent turn statistics for the tenant's health view (internal/health).
--
-- Each connector replica counts its turns in memory and, once a minute, ADDS its counts to the
-- row of (tenant, agent, minute): two replicas, or two flushes of the same minute, sum. The
-- latency histograms are fixed bucket-count arrays (the bucket bounds are in internal/health),
-- so they sum element by element and percentiles over any set of rows are read from the sum.
-- Rows older than the retention (48 h) are deleted by the flushers; they also go with their
-- agent (on delete cascade).

-- health_add_counts adds two bucket-count arrays element by element; a missing element is 0.
create function health_add_counts(a bigint[], b bigint[]) returns bigint[]
language sql immutable parallel safe as $$
	select coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) order by i), '{}')
	from unnest(a, b) with ordinality as u(x, y, i)
$$;

create table agent_health_minutes (
	tenant_id      uuid        not null,
	agent_id       uuid        not null,
	-- The minute the turns ended in (truncated, UTC).
	minute         timestamptz not null,
	completed      bigint      not null default 0,
	input_required bigint      not null default 0,
	handback       bigint      not null default 0,
	failed         bigint      not null default 0,
	canceled       bigint      not null default 0,
	-- Outcome ERROR: turns that ended before the agent answered anything (agent disabled, API
	-- key missing, the caller gone before the turn started).
	errored        bigint      not null default 0,
	-- Bucket counts of the time to first text and of the turn duration.
	first_text     bigint[]    not null,
	duration       bigint[]    not null,
	primary key (tenant_id, agent_id, minute),
	foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);

-- The flushers prune by age across all agents.
create index agent_health_minutes_minute_idx on agent_health_minutes (minute);

-- The last failures of each agent: code and the connector's message, never the user's text.
-- The flushers keep at most the newest 20 per agent, and none older than the retention.
create table agent_health_failures (
	id        bigint      generated always as identity primary key,
	tenant_id uuid        not null,
	agent_id  uuid        not null,
	at        timestamptz not null,
	outcome   text        not null,
	code      text        not null,
	message   text        not null,
	foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);

create index agent_health_failures_agent_idx on agent_health_failures (tenant_id, agent_id, at desc);
create index agent_health_failures_at_idx on agent_health_failures (at);
