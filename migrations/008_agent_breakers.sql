-- The circuit breaker state of each agent as each replica sees it, for the tenant's health view
-- (internal/invoke keeps the breakers in each process's memory; internal/health publishes them).
--
-- A replica writes a row only when its breaker for the agent changes state (rare, and off the
-- turn path), and rewrites the rows of breakers that are not closed about once a minute, so that
-- updated_at says the replica is still there. The view shows rows updated recently; a crashed
-- replica's rows stop being shown, and the publishers delete rows untouched for a day. Rows also
-- go with their agent (on delete cascade).
create table agent_breakers (
	tenant_id  uuid        not null,
	agent_id   uuid        not null,
	-- The process that keeps this breaker: "connector/<host name>" or "console-api/<host name>".
	replica    text        not null,
	-- The endpoint (interface URL) the breaker is for.
	endpoint   text        not null,
	-- closed, open or half_open.
	state      text        not null,
	-- When the agent was found down (it opened); for a closed row, when it closed.
	since      timestamptz not null,
	-- The last failure that counted: its code and the connector's message, never the user's text.
	cause      text        not null default '',
	-- When the next probe may go (open only).
	retry_at   timestamptz,
	updated_at timestamptz not null default now(),
	primary key (tenant_id, agent_id, replica),
	foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);

create index agent_breakers_updated_at_idx on agent_breakers (updated_at);
