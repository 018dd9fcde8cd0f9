-- The circuit breaker of each agent endpoint for the whole deployment: every connector replica
-- (and console-api) counts an agent's "down" turns here, opens and probes it here, and learns
-- every change at once (the trigger below NOTIFYs the channel a2ac_breakers, which each process
-- LISTENs to on a connection of its own). internal/invoke keeps a copy in each process's memory
-- and decides every turn from it; this table is written only when turns fail, when the first
-- turn after failures succeeds, and for the one probe per cool-down (internal/health).
--
-- Times are the writing replica's clock (their hosts' clocks agree to far less than a
-- cool-down). Rows go with their agent (on delete cascade) and are never deleted otherwise: one
-- small row per endpoint that ever failed, whose gen must keep growing (processes order what
-- they learn by it).
create table agent_circuits (
	tenant_id   uuid        not null,
	agent_id    uuid        not null,
	-- The interface URL the turns call.
	endpoint    text        not null,
	-- closed, open or half_open (a probe turn is under way).
	state       text        not null check (state in ('closed', 'open', 'half_open')),
	-- Consecutive "down" turns while closed, across the deployment.
	fails       integer     not null default 0,
	-- Changes at every change of state and at every reset of fails: with fails it orders what a
	-- replica learns, and names the probe a replica claimed.
	gen         bigint      not null default 1,
	-- When the agent was found down (it opened), kept through probes; for closed, when it
	-- closed (or first failed).
	since       timestamptz not null,
	-- The last failure that counted: its code and the connector's message, never user text.
	cause       text        not null default '',
	-- The current cool-down: the first, doubled after each failed probe up to the maximum.
	cooldown_ms bigint      not null default 0,
	-- open: when the probe may be claimed.
	retry_at    timestamptz,
	-- half_open: the process whose turn probes, and when its claim lapses (a process that died
	-- mid-probe holds up the others until then only).
	prober      text,
	probe_until timestamptz,
	-- The process that made the last change (each process tells its own changes from others').
	changed_by  text        not null default '',
	updated_at  timestamptz not null default now(),
	primary key (tenant_id, agent_id, endpoint),
	foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);

create index agent_circuits_not_closed_idx on agent_circuits (tenant_id) where state <> 'closed' or fails > 0;

-- Every change is announced with the row, as JSON, on a2ac_breakers. A row too large for a
-- notification (an endpoint URL of several kilobytes) is announced by its agent only; the
-- listeners read that agent's rows.
create function agent_circuits_notify() returns trigger language plpgsql as $$
declare
	payload text;
begin
	payload := json_build_object(
		'tenant_id', new.tenant_id, 'agent_id', new.agent_id, 'endpoint', new.endpoint,
		'state', new.state, 'fails', new.fails, 'gen', new.gen, 'since', new.since, 'cause', new.cause,
		'cooldown_ms', new.cooldown_ms, 'retry_at', new.retry_at, 'prober', new.prober,
		'probe_until', new.probe_until, 'changed_by', new.changed_by)::text;
	if octet_length(payload) > 7000 then
		payload := json_build_object('tenant_id', new.tenant_id, 'agent_id', new.agent_id)::text;
	end if;
	perform pg_notify('a2ac_breakers', payload);
	return null;
end
$$;

create trigger agent_circuits_notify after insert or update on agent_circuits
	for each row execute function agent_circuits_notify();
